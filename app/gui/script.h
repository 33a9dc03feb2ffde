// The app's script (`gui --script`, the web page's links): its syntax, apart from the actions.
// parse_script splits the text at ';' and checks each command's form before anything runs, so
// that a script either runs as written or is refused with one line; AppState::run_script
// (app_script.cpp) then runs the commands. No state, no files: the fuzz target feeds it.
#pragma once
#include <string>
#include <vector>

namespace flashstep::gui {

struct ScriptCommand {
  std::string verb;               // "step", "set", "course", ...
  std::vector<std::string> args;  // the words after the verb; `course` and `display`: the rest, whole
};

// InputError ("script: ...") for: a control character such as a newline (commands are separated
// by ';' only, so text after a newline would otherwise be dropped), an unknown action, a missing
// or extra word, and a value that is not a whole number where one is taken (step, back, seek,
// jump, and set nq, nk, d, M, br, bc, kvlen, heads, window: "12.7" is refused, not cut to 12;
// set seed: 0 .. 2^64 - 1 as --seed) or not a number (set causal, backward, ncu, dropout).
std::vector<ScriptCommand> parse_script(const std::string& script);

}  // namespace flashstep::gui
