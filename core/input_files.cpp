#include "core/input_files.h"

#include "core/output_files.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <unistd.h>

namespace flashstep {

namespace {

struct Fd {
  int fd;
  ~Fd() { ::close(fd); }
};

std::string mib(int64_t bytes) {
  return bytes % (int64_t(1) << 20) == 0 ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes) + " bytes";
}

}  // namespace

bool check_input_file(const std::string& path, const std::string& what, bool missing_ok) {
  const std::string where = what + " " + excerpt(path, 512);
  if (path.empty()) throw InputError(what + ": empty file name");
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT && missing_ok) return false;
    throw InputError(where + ": cannot read: " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) throw InputError(where + ": is " + file_kind(st.st_mode) + ", not a regular file");
  return true;
}

std::string read_input_file(const std::string& path, const std::string& what, int64_t max_bytes) {
  const std::string where = what + " " + excerpt(path, 512);
  if (path.empty()) throw InputError(what + ": empty file name");
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused just below. The
  // type is checked on the open file, so it cannot change between the check and the read.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw InputError(where + ": cannot read: " + std::strerror(errno));
  Fd guard{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) throw InputError(where + ": cannot stat: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw InputError(where + ": is " + file_kind(st.st_mode) + ", not a regular file");
  if (int64_t(st.st_size) > max_bytes)
    throw InputError(where + ": " + std::to_string(st.st_size) + " bytes, over the limit of " + mib(max_bytes));
  std::string text;
  text.reserve(size_t(st.st_size));
  char buf[1 << 16];
  for (;;) {  // to the end, whatever the size said: the file may grow while it is read
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputError(where + ": read failed: " + std::strerror(errno));
    if (n == 0) break;
    text.append(buf, size_t(n));
    if (int64_t(text.size()) > max_bytes)
      throw InputError(where + ": over the limit of " + mib(max_bytes) + " (it grew while being read)");
  }
  return text;
}

std::string excerpt(const std::string& text, size_t max) {
  std::string out;
  size_t n = std::min(text.size(), max);
  while (n < text.size() && n > 0 && (static_cast<unsigned char>(text[n]) & 0xc0) == 0x80) --n;  // whole UTF-8 characters
  for (size_t k = 0; k < n; ++k) {
    const unsigned char c = static_cast<unsigned char>(text[k]);
    out += (c < 0x20 || c == 0x7f) ? '?' : char(c);  // control characters: the message stays one line
  }
  if (text.size() > max) out += "... (" + std::to_string(text.size()) + " characters)";
  return out;
}

std::string json_excerpt(const nlohmann::json& v) {
  if (v.is_object()) return "an object of " + std::to_string(v.size()) + " fields";
  if (v.is_array()) return "an array of " + std::to_string(v.size()) + " values";
  if (v.is_string()) return "the string \"" + excerpt(v.get_ref<const std::string&>()) + "\"";
  if (v.is_discarded()) return "nothing";
  return excerpt(v.dump());  // a number, true, false or null: short
}

nlohmann::json parse_json_input(const std::string& text, const std::string& where) {
  // A NUL byte ends the text for nlohmann's parser, which would then accept whatever follows
  // it: JSON text never holds one (inside a string it is written \u0000).
  if (const size_t nul = text.find('\0'); nul != std::string::npos)
    throw InputError(where + ": a NUL byte at byte " + std::to_string(nul) + ": the file is not JSON text");
  // The nesting first, outside strings: nlohmann parses deep input without recursion, but
  // printing or copying it recurses.
  int depth = 0;
  bool in_string = false;
  for (size_t k = 0; k < text.size(); ++k) {
    const char c = text[k];
    if (in_string) {
      if (c == '\\') ++k;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        throw InputError(where + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels (at byte " +
                         std::to_string(k) + ")");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(where + ": malformed JSON at byte " + std::to_string(e.byte) + ": the file is not valid JSON");
  } catch (const nlohmann::json::exception& e) {  // e.g. out_of_range: a number such as 1e999
    throw InputError(where + ": bad JSON: " + excerpt(e.what(), 120));
  }
}

void check_text_length(const std::string& text, size_t max, const std::string& where, const std::string& field) {
  if (text.size() > max)
    throw InputError(where + ": " + field + " is " + std::to_string(text.size()) + " characters long; at most " +
                     std::to_string(max));
}

}  // namespace flashstep
