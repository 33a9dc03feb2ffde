// Strict text checks that run before CLI11 converts a flag's text: otherwise "-1" for an
// unsigned flag wraps around, and "" or "1e999" for a number becomes 0 or inf silently.
#pragma once
#include "core/checked.h"

#include <CLI/CLI.hpp>
#include <string>

namespace flashstep {

// A validator that runs parse(text, what) and reports its InputError's message.
template <class Parse>
CLI::Validator strict(const char* what, Parse parse) {
  return CLI::Validator(
      [what, parse](std::string& text) {
        try {
          parse(text, what);
        } catch (const InputError& e) {
          return std::string(e.what());
        }
        return std::string();
      },
      "", what);
}
inline CLI::Validator whole_number(const char* what) { return strict(what, checked::parse_int); }
inline CLI::Validator real_number(const char* what) { return strict(what, checked::parse_double); }

}  // namespace flashstep
