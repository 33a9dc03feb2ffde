#include "core/output_files.h"

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

namespace flashstep {

namespace {

// The temporaries that exist now, for the signal handler: fixed storage, because a handler
// may only call async-signal-safe functions (unlink, signal, raise).
constexpr int kMaxTemps = 16;
char g_temps[kMaxTemps][PATH_MAX];
volatile sig_atomic_t g_ntemps = 0;

extern "C" void remove_temps_and_die(int sig) {
  for (int k = 0; k < g_ntemps; ++k) ::unlink(g_temps[k]);
  g_ntemps = 0;
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

// Holds SIGINT and SIGTERM back for its lifetime (they are delivered when it ends).
struct SignalsHeld {
  sigset_t old;
  SignalsHeld() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigprocmask(SIG_BLOCK, &set, &old);
  }
  ~SignalsHeld() { sigprocmask(SIG_SETMASK, &old, nullptr); }
};

// Installs the handler for the lifetime of a commit, then puts the old ones back.
struct SignalCleanup {
  struct sigaction old_int, old_term;
  SignalCleanup() {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_handler = remove_temps_and_die;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
  }
  ~SignalCleanup() {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
  }
};

std::string errno_text() { return std::strerror(errno); }

std::string dir_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string real_path(const std::string& path) {
  char buf[PATH_MAX];
  if (!::realpath(path.c_str(), buf)) return "";
  return buf;
}

std::string inode_key(const struct stat& st) {
  return "inode " + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
}

}  // namespace

std::string file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symlink";
  return "not a regular file";
}

OutputFiles::~OutputFiles() { remove_temporaries(); }

void OutputFiles::add(const std::string& path, const std::string& what) {
  if (path.empty()) throw InputError(what + ": empty file name");
  if (int(outs_.size()) == kMaxTemps) throw InputError("too many output files (at most 16)");
  outs_.push_back({path, what, "", "", "", 0});
}

std::string& OutputFiles::bytes(const std::string& path) {
  for (Out& o : outs_)
    if (o.path == path) return o.bytes;
  throw std::logic_error("OutputFiles::bytes: " + path + " was not added");
}

void OutputFiles::add_input(const std::string& path, const std::string& what) {
  if (!path.empty()) ins_.push_back({path, what});
}

void OutputFiles::remove_temporaries() {
  SignalsHeld held;
  for (Out& o : outs_)
    if (!o.temp.empty()) {
      ::unlink(o.temp.c_str());
      o.temp.clear();
    }
  g_ntemps = 0;
}

void OutputFiles::check() {
  // 1. Every target checked, and the identity of each (device and inode, or the real path of
  //    a file not yet there), before anything is written.
  std::vector<std::string> keys;
  const mode_t mask = ::umask(0);
  ::umask(mask);
  for (Out& o : outs_) {
    struct stat st;
    if (::lstat(o.path.c_str(), &st) != 0) {
      if (errno != ENOENT) throw InputError(o.path + ": cannot write file (" + o.what + "): " + errno_text());
      const std::string dir = real_path(dir_of(o.path));
      if (dir.empty())
        throw InputError(o.path + ": cannot write file (" + o.what + "): folder " + dir_of(o.path) + ": " + errno_text());
      o.target = (dir == "/" ? "" : dir) + "/" + base_of(o.path);
      o.mode = 0666 & ~mask;
      keys.push_back("path " + o.target);
    } else {
      if (S_ISLNK(st.st_mode)) {  // written through to what it points at; the link stays
        o.target = real_path(o.path);
        if (o.target.empty() || ::stat(o.target.c_str(), &st) != 0)
          throw InputError(o.path + ": is a symlink to a missing file; refusing to write it (" + o.what + ")");
      } else {
        o.target = o.path;
      }
      if (!S_ISREG(st.st_mode))
        throw InputError(o.path + ": is " + file_kind(st.st_mode) + ", not a regular file; refusing to replace it (" + o.what + ")");
      o.mode = st.st_mode & 07777;
      keys.push_back(inode_key(st));
    }
  }
  for (size_t a = 0; a < outs_.size(); ++a)
    for (size_t b = a + 1; b < outs_.size(); ++b)
      if (keys[a] == keys[b])
        throw InputError(outs_[a].what + " and " + outs_[b].what + " name the same file (" + outs_[a].path + ")");
  for (const In& in : ins_) {
    struct stat st;
    if (::stat(in.path.c_str(), &st) != 0) continue;  // not there: the reader already said so
    for (size_t a = 0; a < outs_.size(); ++a)
      if (keys[a] == inode_key(st))
        throw InputError(outs_[a].what + " " + outs_[a].path + " is the " + in.what + " file " + in.path + "; refusing to overwrite an input");
  }
}

void OutputFiles::commit() {
  check();

  // 2. Temporaries next to each target, written and synced.
  SignalCleanup cleanup;
  try {
    for (Out& o : outs_) {
      std::string temp = dir_of(o.target) + "/." + base_of(o.target) + ".XXXXXX";
      int fd;
      {
        SignalsHeld held;  // the temporary is registered before a signal can see it
        fd = ::mkstemp(temp.data());
        if (fd < 0) throw InputError(o.path + ": cannot create a temporary file in " + dir_of(o.target) + ": " + errno_text());
        o.temp = temp;
        std::snprintf(g_temps[g_ntemps], PATH_MAX, "%s", temp.c_str());
        g_ntemps = g_ntemps + 1;
      }
      const char* p = o.bytes.data();
      size_t left = o.bytes.size();
      bool ok = ::fchmod(fd, o.mode) == 0;
      while (ok && left > 0) {
        const ssize_t n = ::write(fd, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) ok = false;
        else p += n, left -= size_t(n);
      }
      ok = ok && ::fsync(fd) == 0;
      const std::string why = errno_text();
      ok = (::close(fd) == 0) && ok;
      if (!ok) throw InputError(o.path + ": write failed (" + o.what + "): " + why);
      std::string().swap(o.bytes);
    }
    // 3. All written: rename them all, with the signals held so that none is left half-done.
    SignalsHeld held;
    for (Out& o : outs_) {
      if (::rename(o.temp.c_str(), o.target.c_str()) != 0)
        throw InputError(o.path + ": cannot write file (" + o.what + "): " + errno_text());
      o.temp.clear();
    }
    g_ntemps = 0;
  } catch (...) {
    remove_temporaries();
    throw;
  }
}

void write_file_atomic(const std::string& path, const std::string& text) {
  OutputFiles out;
  out.add(path);
  out.bytes(path) = text;
  out.commit();
}

}  // namespace flashstep
