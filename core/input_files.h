// Reading the files a user names (presets, settings, snapshot manifests, bench and measurement
// JSON, ...) and quoting what they hold, with one set of rules (docs/limits.md, "Inputs"):
//   - read_input_file opens without blocking (a FIFO given as a file must not hang the
//     program), refuses anything that is not a regular file (a directory, FIFO or device),
//     and refuses a file over its size limit before reading it;
//   - parse_json_input refuses JSON nested deeper than kMaxJsonDepth before parsing (a deep
//     value would overflow the stack when printed or destroyed) and turns every nlohmann
//     exception (malformed text, a number such as 1e999) into an InputError;
//   - excerpt and json_excerpt quote at most a short, cut piece of rejected input in a
//     message, so that an error is always one short line;
//   - check_text_length bounds text that a view or a figure draws.
// Every failure is an InputError with one line naming the file.
#pragma once
#include "core/types.h"

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace flashstep {

constexpr int64_t kMaxJsonInputBytes = int64_t(64) << 20;  // a preset, manifest, bench file, ...
constexpr int kMaxJsonDepth = 64;                          // nesting of [ and { in a JSON input
constexpr size_t kMaxExcerpt = 48;                         // characters of input quoted in a message
constexpr size_t kMaxPathChars = 4095;                     // a file name from an input (PATH_MAX - 1)

// The whole of a regular file of at most max_bytes. `what` names it in messages ("preset",
// "settings file", "measurement file"): "WHAT PATH: is a FIFO, not a regular file".
std::string read_input_file(const std::string& path, const std::string& what, int64_t max_bytes = kMaxJsonInputBytes);
// The same check without reading: InputError unless `path` is a regular file (or missing, when
// missing_ok; returns false then).
bool check_input_file(const std::string& path, const std::string& what, bool missing_ok = false);

// At most `max` bytes of `text` for a message: control characters (a newline) shown as '?',
// a longer text cut with "... (N characters)".
std::string excerpt(const std::string& text, size_t max = kMaxExcerpt);
// A JSON value for a message: a scalar as a short excerpt of its text, an array or object by
// its kind and size only (never dumped: it may be huge or deeply nested).
std::string json_excerpt(const nlohmann::json& v);

// Parses JSON text read from `where` (a file name for messages); InputError on any problem.
nlohmann::json parse_json_input(const std::string& text, const std::string& where);

// InputError "WHERE: FIELD is N characters long; at most MAX" when text is longer than max.
void check_text_length(const std::string& text, size_t max, const std::string& where, const std::string& field);

}  // namespace flashstep
