#include "app/gui/script.h"

#include "core/checked.h"
#include "core/input_files.h"
#include "core/types.h"

#include <algorithm>
#include <sstream>

namespace flashstep::gui {

namespace {

// The actions and how many words follow each (min, max); -1: the rest of the command, whole.
struct Action {
  const char* verb;
  int min_args, max_args;
};
constexpr Action kActions[] = {
    {"step", 0, 1},      {"back", 0, 1},   {"seek", 1, 1},      {"play", 0, 0},      {"pause", 0, 0},
    {"end", 0, 0},       {"home", 0, 0},   {"reset", 0, 0},     {"jump", 2, 2},      {"course", -1, -1},
    {"display", -1, -1}, {"set", 2, 3},    {"files", 3, 3},     {"export", 1, 1},    {"dram", 1, 1},
    {"snapshots", 1, 1}, {"snapshot-problem", 0, 0},            {"first-over", 0, 0}, {"apply", 0, 0},
    {"pipeline", 1, 2}};

const char* const kUnknown =
    "' (expected step N, back N, seek K, play, pause, end, home, jump I J, set FIELD N, apply, display WHAT, "
    "export BASE, dram FILE, snapshots DIR, snapshot-problem, first-over, course WHAT, pipeline WHAT)";

// The editor's fields a script sets, and how each value is read.
enum class Value { whole, seed, number, word };
struct Field {
  const char* name;
  Value value;
};
constexpr Field kFields[] = {{"nq", Value::whole},      {"nk", Value::whole},     {"d", Value::whole},
                             {"M", Value::whole},       {"br", Value::whole},     {"bc", Value::whole},
                             {"kvlen", Value::whole},   {"heads", Value::whole},  {"window", Value::whole},
                             {"seed", Value::seed},     {"causal", Value::number}, {"backward", Value::number},
                             {"ncu", Value::number},    {"dropout", Value::number}, {"schedule", Value::word},
                             {"dtype", Value::word},    {"l2", Value::word},      {"gpu", Value::word}};

void check_set(const ScriptCommand& c) {
  const std::string& field = c.args[0];
  const Field* f = std::find_if(std::begin(kFields), std::end(kFields), [&](const Field& x) { return field == x.name; });
  if (f == std::end(kFields))
    throw InputError("script: set knows nq, nk, d, M, br, bc, seed, schedule, dtype, causal, window, kvlen, dropout, "
                     "backward, l2, gpu, heads, ncu (got '" + excerpt(field) + "')");
  const size_t values = field == "window" ? 2 : 1;
  if (c.args.size() != 1 + values)
    throw InputError("script: set " + field + (values == 2 ? " needs LEFT and RIGHT" : " takes one value") +
                     " (separate commands with ';')");
  const std::string what = "script: set " + field;
  for (size_t k = 1; k < c.args.size(); ++k) {
    if (f->value == Value::whole) checked::parse_int(c.args[k], what.c_str());
    else if (f->value == Value::seed) checked::parse_uint(c.args[k], what.c_str());
    else if (f->value == Value::number) checked::parse_double(c.args[k], what.c_str());
  }
}

// The Pipeline view's radio buttons: "pipeline forward|backward", "pipeline d 64|128",
// "pipeline n 4096|16384", "pipeline causal 0|1" (the view's choices, no others).
void check_pipeline(const ScriptCommand& c) {
  const std::string& what = c.args[0];
  const bool model = what == "forward" || what == "backward";
  const char* values = what == "d" ? "64 128" : what == "n" ? "4096 16384" : what == "causal" ? "0 1" : nullptr;
  if (!model && !values)
    throw InputError("script: pipeline takes forward, backward, d 64|128, n 4096|16384 or causal 0|1 (got '" +
                     excerpt(what) + "')");
  if (model && c.args.size() != 1) throw InputError("script: pipeline " + what + " takes no value");
  if (values) {
    const std::string v = c.args.size() == 2 ? c.args[1] : "";
    std::istringstream vs(values);
    bool known = false;
    for (std::string w; vs >> w;) known = known || w == v;
    if (!known) throw InputError("script: pipeline " + what + " takes one of " + values + " (got '" + excerpt(v) + "')");
  }
}

}  // namespace

std::vector<ScriptCommand> parse_script(const std::string& script) {
  for (size_t k = 0; k < script.size(); ++k) {
    const unsigned char ch = static_cast<unsigned char>(script[k]);
    if (ch < 0x20 && ch != '\t')
      throw InputError("script: a control character (code " + std::to_string(int(ch)) + ") at byte " + std::to_string(k) +
                       ": separate commands with ';', not newlines");
  }
  std::vector<ScriptCommand> out;
  std::stringstream ss(script);
  std::string text;
  while (std::getline(ss, text, ';')) {
    std::istringstream cs(text);
    ScriptCommand c;
    if (!(cs >> c.verb)) continue;  // an empty command: "step; ; step"
    const Action* a =
        std::find_if(std::begin(kActions), std::end(kActions), [&](const Action& x) { return c.verb == x.verb; });
    if (a == std::end(kActions)) throw InputError("script: unknown action '" + excerpt(c.verb) + kUnknown);
    if (a->min_args < 0) {  // the rest, whole, without its leading blanks
      std::string rest;
      std::getline(cs, rest);
      const size_t b = rest.find_first_not_of(" \t");
      c.args.push_back(b == std::string::npos ? "" : rest.substr(b));
    } else {
      for (std::string w; cs >> w;) c.args.push_back(w);
      if (int(c.args.size()) > a->max_args)
        throw InputError("script: '" + excerpt(c.verb) + "' does not take '" + excerpt(c.args[size_t(a->max_args)]) +
                         "' (separate commands with ';')");
      if (int(c.args.size()) < a->min_args)
        throw InputError("script: '" + excerpt(c.verb) + "' needs " + std::to_string(a->min_args) +
                         (a->min_args == 1 ? " value" : " values"));
    }
    if (c.verb == "step" || c.verb == "back" || c.verb == "seek") {
      if (!c.args.empty() && checked::parse_int(c.args[0], ("script: " + c.verb).c_str()) < 0)
        throw InputError("script: " + c.verb + (c.verb == "seek" ? " needs a step index >= 0" : " needs a count >= 0") +
                         " (got '" + excerpt(c.args[0]) + "')");
    } else if (c.verb == "jump") {
      for (const std::string& w : c.args) checked::parse_int(w, "script: jump");
    } else if (c.verb == "set") {
      check_set(c);
    } else if (c.verb == "pipeline") {
      check_pipeline(c);
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace flashstep::gui
