#include "web/url_state.h"

#include "app/gui/preset.h"
#include "core/types.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

namespace flashstep::web {

namespace {

// The problem editor's fields a link may set, as the app's `set` script action names them.
const std::set<std::string> kIntFields = {"nq", "nk", "d", "M", "br", "bc", "seed", "kvlen"};

int64_t whole_number(const std::string& name, const std::string& text, int64_t lo, int64_t hi) {
  char* end = nullptr;
  const long long x = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end || x < lo || x > hi)
    throw InputError(name + " must be a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) +
                     " (got '" + text + "')");
  return x;
}

double real_number(const std::string& name, const std::string& text) {
  char* end = nullptr;
  const double x = std::strtod(text.c_str(), &end);
  if (text.empty() || *end) throw InputError(name + " must be a number (got '" + text + "')");
  return x;
}

bool flag(const std::string& name, const std::string& text) {
  if (text == "1" || text == "true") return true;
  if (text == "0" || text == "false") return false;
  throw InputError(name + " must be 0 or 1 (got '" + text + "')");
}

// A value goes into the app's script (split at ';', words at spaces): only plain characters.
void check_characters(const std::string& name, const std::string& value) {
  for (char c : value)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' || c == ',' || c == '+'))
      throw InputError("the value of " + name + " has a character a link cannot carry: '" + std::string(1, c) + "'");
}

const char* view_name(gui::View v) {
  return v == gui::View::lesson ? "lesson" : v == gui::View::compare ? "compare" : v == gui::View::bench ? "bench"
       : v == gui::View::pipeline ? "pipeline" : "tiles";
}

// The request as the desktop's flags would open it: prepare_state, then the problem fields and
// the step. Its errors name the flags; apply_request rewords them for the link.
void apply_request_as_flags(gui::AppState& s, const UrlRequest& r) {
  gui::prepare_state(s, r.options);
  if (!r.problem_script.empty()) {
    try {
      s.run_script(r.problem_script);  // the editor's fields, as typed
    } catch (const InputError&) {
      // A refused apply is "script: apply: <reason>"; a link names no script, so its reader is
      // told the reason alone: the field's message (Apply stays disabled) or the run's refusal.
      if (!s.form.error.empty()) throw InputError(s.form.error);
      if (!s.apply_error.empty()) throw InputError(s.apply_error);
      throw;
    }
    if (!r.options.view.empty()) {  // a new run opens on the tiles: the link's view wins
      s.view = r.options.view == "lesson" ? gui::View::lesson : r.options.view == "compare" ? gui::View::compare
             : r.options.view == "bench" ? gui::View::bench : r.options.view == "pipeline" ? gui::View::pipeline
             : gui::View::tiles;
      s.view_changed = true;
    }
  }
  if (r.step >= 0) {
    if (size_t(r.step) > s.steps())
      throw InputError("step=" + std::to_string(r.step) + " is past the last step of this problem (" +
                       std::to_string(s.steps()) + ")");
    s.seek(size_t(r.step));
  }
}

}  // namespace

UrlRequest parse_query(const Query& q) {
  UrlRequest r;
  std::set<std::string> seen;
  std::string script;
  for (const auto& [name, value] : q) {
    if (!seen.insert(name).second) throw InputError("the link names " + name + " twice");
    check_characters(name, value);
    if (name == "preset") {
      if (value.empty() || value.find('.') != std::string::npos)  // a name, never a path
        throw InputError("preset must be a preset's name, such as tiny or gpt2-medium (got '" + value + "')");
      r.options.preset = value;
    } else if (kIntFields.count(name)) {
      const int64_t lo = name == "kvlen" || name == "br" || name == "bc" ? -1 : 0;
      script += "set " + name + " " + std::to_string(whole_number(name, value, lo, int64_t(1) << 40)) + "; ";
    } else if (name == "schedule") {
      parse_schedule(value);  // throws, naming the schedules
      script += "set schedule " + value + "; ";
    } else if (name == "dtype") {
      parse_dtype(value);
      script += "set dtype " + value + "; ";
    } else if (name == "causal" || name == "backward") {
      script += "set " + name + (flag(name, value) ? " 1; " : " 0; ");
    } else if (name == "dropout") {
      real_number(name, value);
      script += "set dropout " + value + "; ";
    } else if (name == "window") {
      const size_t comma = value.find(',');
      if (comma == std::string::npos) throw InputError("window must be LEFT,RIGHT, such as 4,0 or -1,0 (got '" + value + "')");
      const int64_t left = whole_number("window's LEFT", value.substr(0, comma), -1, int64_t(1) << 40);
      const int64_t right = whole_number("window's RIGHT", value.substr(comma + 1), -1, int64_t(1) << 40);
      script += "set window " + std::to_string(left) + " " + std::to_string(right) + "; ";
    } else if (name == "step") {
      r.step = whole_number(name, value, 0, int64_t(1) << 40);
    } else if (name == "view") {
      if (value != "tiles" && value != "lesson" && value != "compare" && value != "bench" && value != "pipeline")
        throw InputError("view must be tiles, lesson, compare, bench or pipeline (got '" + value + "')");
      r.options.view = value;
    } else if (name == "theme") {
      r.options.theme = value;  // checked by prepare_display (dark or light)
    } else if (name == "font") {
      r.options.font_scale = value;
    } else if (name == "hide") {
      r.options.hide = value;
    } else if (name == "presentation") {
      r.options.presentation = flag(name, value);
    } else if (name == "course") {  // empty: the first chapter not finished (as gui --course)
      r.options.course = true;
      r.options.course_chapter = value;
    } else if (name == "page") {
      r.options.course_page = whole_number(name, value, 1, 1000);
      r.options.course_page_given = true;
    } else if (name == "course_seed") {
      r.options.course_seed = whole_number(name, value, 1, int64_t(1) << 40);
    } else if (name == "dump") {
      r.dump = flag(name, value);
    } else if (name == "bench") {
      r.bench_frames = int(whole_number(name, value, 1, 10000));
    } else {
      throw InputError("unknown link parameter '" + name + "' (known: preset, nq, nk, d, M, br, bc, seed, schedule, "
                       "dtype, causal, window, kvlen, dropout, backward, step, view, course, page, course_seed, theme, "
                       "font, hide, presentation, dump, bench)");
    }
  }
  if (!r.options.course && (r.options.course_page_given || r.options.course_seed != 1))
    throw InputError("page and course_seed need course=CHAPTER");
  if (r.options.course && !script.empty())
    throw InputError("a course page sets its own problem: drop the problem fields or course");
  if (r.options.course && seen.count("preset"))
    throw InputError("a course page sets its own problem: drop preset or course");
  if (r.options.course && seen.count("view"))
    throw InputError("a course page sets its own view: drop view or course");
  if (!script.empty()) r.problem_script = script + "apply";
  return r;
}

void apply_request(gui::AppState& s, const UrlRequest& r) {
  try {
    apply_request_as_flags(s, r);
  } catch (const InputError& e) {  // the app's checks speak of `flashstep gui`'s flags
    throw InputError(link_wording(e.what()));
  }
}

std::string link_wording(const std::string& message) {
  // Flag -> the link's name. The L2 model has no link parameter: it comes with a preset.
  static const std::map<std::string, std::string> names = {
      {"font-scale", "font"}, {"theme", "theme"}, {"hide", "hide"}, {"presentation", "presentation"},
      {"page", "page"}, {"course", "course"}, {"seed", "course_seed"}, {"view", "view"},
      {"schedule", "schedule"}, {"dtype", "dtype"}, {"backward", "backward"}, {"causal", "causal"},
      {"dropout", "dropout"}, {"window", "window"}, {"kvlen", "kvlen"}, {"step", "step"}};
  // Words that follow a flag in a sentence ("--theme must be ..."), not its value.
  static const std::set<std::string> words = {"must", "takes", "needs", "has", "is", "and", "or", "does",
                                              "covers", "for", "with", "cannot", "opens", "the", "a"};
  std::string text = message;
  for (const char* l2 : {"the L2 model (--l2, --gpu)", "the L2 model (--l2, --gpu, --dram)"}) {
    for (size_t at; (at = text.find(l2)) != std::string::npos;)
      text.replace(at, std::string(l2).size(), "the preset's L2 model");
  }
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    if (text.compare(i, 2, "--") != 0 || (i > 0 && std::isalnum(static_cast<unsigned char>(text[i - 1])))) {
      out += text[i++];
      continue;
    }
    size_t end = i + 2;
    while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '-')) ++end;
    const auto it = names.find(text.substr(i + 2, end - i - 2));
    if (it == names.end()) {  // a flag with no link parameter (--splits, --l2): as written
      out += text.substr(i, end - i);
      i = end;
      continue;
    }
    // The value after the flag, if the next word is one: "--page 99:" -> "page=99".
    size_t vend = end + 1;
    while (vend < text.size() && (std::isalnum(static_cast<unsigned char>(text[vend])) || text[vend] == '.' ||
                                  text[vend] == '_' || text[vend] == '-'))
      ++vend;
    const bool has_value = end < text.size() && text[end] == ' ' && vend > end + 1 &&
                           !words.count(text.substr(end + 1, vend - end - 1)) &&
                           text.compare(end + 1, 2, "--") != 0;
    if (has_value) {
      out += it->second + "=" + text.substr(end + 1, vend - end - 1);
      i = vend;
    } else {
      out += it->second == "backward" || it->second == "causal" || it->second == "presentation" ? it->second + "=1"
                                                                                                 : it->second;
      i = end;
    }
  }
  return out;
}

namespace {

// The Display menu's settings where they are not the defaults: presentation=1 when they are
// presentation mode's, else theme, font and hide, so that a copied link or a reload keeps them.
std::string display_query(const gui::DisplaySettings& d) {
  const gui::DisplaySettings def;
  if (d == def) return "";
  if (d == gui::presentation_settings()) return "&presentation=1";
  std::string q;
  if (d.theme != def.theme) q += std::string("&theme=") + gui::theme_name(d.theme);
  if (d.font_scale != def.font_scale) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", double(d.font_scale));
    q += std::string("&font=") + buf;
  }
  if (d.hidden != def.hidden) q += "&hide=" + (d.hidden ? gui::panel_list(d.hidden) : std::string("none"));
  return q;
}

}  // namespace

std::string query_for_state(const gui::AppState& s, const std::string& base) {
  // In the course: the chapter, the page (1-based), the seed when not the first, and the step
  // (the page's scene sets one; the reader may step on from it).
  if (s.course.active && s.course.chapter) {
    std::string q = "course=" + s.course.chapter->id + "&page=" + std::to_string(s.course.page + 1);
    if (s.course.seed != 1) q += "&course_seed=" + std::to_string(s.course.seed);
    return q + "&step=" + std::to_string(s.index()) + display_query(s.display.now);
  }
  // The preset's problem, read once per name (the assets are in the page's files).
  static std::map<std::string, gui::Preset> presets;
  const gui::Preset* preset = nullptr;
  auto it = presets.find(base);
  if (it == presets.end()) {
    try {
      it = presets.emplace(base, gui::load_preset(gui::preset_path(base, s.asset_dir))).first;
    } catch (const InputError&) {
      it = presets.end();
    }
  }
  if (it != presets.end()) preset = &it->second;
  std::string q = "preset=" + base;
  const ProblemSpec& now = s.run->spec;
  const ProblemSpec was = preset ? preset->spec : ProblemSpec{};
  auto add = [&q](const char* name, const std::string& value) { q += std::string("&") + name + "=" + value; };
  auto add_int = [&](const char* name, int64_t a, int64_t b) { if (a != b || !preset) add(name, std::to_string(a)); };
  add_int("nq", now.nq, was.nq);
  add_int("nk", now.nk, was.nk);
  add_int("d", now.d, was.d);
  add_int("M", now.M, was.M);
  add_int("br", now.br, was.br);
  add_int("bc", now.bc, was.bc);
  if (now.seed != was.seed || !preset) add("seed", std::to_string(now.seed));  // uint64: no int64 cast
  if (now.schedule != was.schedule || !preset) add("schedule", schedule_name(now.schedule));
  if (now.options.dtype != was.options.dtype) add("dtype", dtype_name(now.options.dtype));
  const Mask &m = now.options.mask, &mw = was.options.mask;
  if (m.causal != mw.causal) add("causal", m.causal ? "1" : "0");
  if (m.window_left != mw.window_left || m.window_right != mw.window_right)
    add("window", std::to_string(m.window_left) + "," + std::to_string(m.window_right));
  if (m.kv_len != mw.kv_len) add("kvlen", std::to_string(m.kv_len));
  if (now.options.dropout != was.options.dropout) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", now.options.dropout);
    add("dropout", buf);
  }
  if (preset && s.run->backward != preset->backward) add("backward", s.run->backward ? "1" : "0");
  add("step", std::to_string(s.index()));
  if (!preset || preset->view != view_name(s.view)) add("view", view_name(s.view));
  return q + display_query(s.display.now);
}

}  // namespace flashstep::web
