// Strict text checks that run before CLI11 converts a flag's text: otherwise "-1" for an
// unsigned flag wraps around, and "" or "1e999" for a number becomes 0 or inf silently.
#pragma once
#include "core/checked.h"

#include <CLI/CLI.hpp>
#include <string>

namespace flashstep {

// A validator that runs parse(text, what) and reports its InputError's message. It keeps its own
// copy of `what` (a flag's name may come from a temporary).
template <class Parse>
CLI::Validator strict(const std::string& what, Parse parse) {
  return CLI::Validator(
      [what, parse](std::string& text) {
        try {
          parse(text, what.c_str());
        } catch (const InputError& e) {
          return std::string(e.what());
        }
        return std::string();
      },
      "", what);
}
inline CLI::Validator whole_number(const char* what) { return strict(what, checked::parse_int); }
// A whole number >= 1, for flags whose 0 is not "the default" but invalid (--splits 0).
inline CLI::Validator at_least_one(const char* what) {
  return strict(what, [](const std::string& text, const char* name) {
    if (checked::parse_int(text, name) < 1)
      throw InputError(std::string(name) + " must be at least 1 (got " + text + ")");
  });
}
inline CLI::Validator real_number(const char* what) { return strict(what, checked::parse_double); }

}  // namespace flashstep
