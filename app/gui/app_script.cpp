// The app's scripted actions (--script, the web page's commands): one command at a time, the
// same actions the buttons and keys call.
#include "app/gui/app_state.h"

#include "core/checked.h"

#include <cstdlib>
#include <sstream>
#include <string>

namespace flashstep::gui {

void AppState::run_script(const std::string& script) {
  std::stringstream ss(script);
  std::string cmd;
  while (std::getline(ss, cmd, ';')) {
    std::istringstream cs(cmd);
    std::string verb;
    if (!(cs >> verb)) continue;
    long long a = 1, b = 0;
    if (verb == "step" || verb == "back") {
      if (!(cs >> a)) a = 1;
      if (a < 0) throw InputError("script: '" + excerpt(verb) + "' needs a count >= 0");
      a = std::min(a, (long long)steps());  // more steps than the trace has do nothing more
      for (long long n = 0; n < a; ++n) verb == "step" ? step_forward() : step_back();
    } else if (verb == "seek") {
      if (!(cs >> a) || a < 0) throw InputError("script: seek needs a step index >= 0");
      seek(size_t(a));
    } else if (verb == "play" || verb == "pause") {  // the Play/Pause button (offline frames have dt = 0: no step moves)
      playing = verb == "play";
    } else if (verb == "end") {
      run_to_end();
    } else if (verb == "home" || verb == "reset") {
      reset();
    } else if (verb == "jump") {
      if (!(cs >> a >> b)) throw InputError("script: jump needs i and j");
      if (!jump_to(a, b)) throw InputError("script: jump " + jump_error);
    } else if (verb == "course") {  // the course column's buttons (course_state.h)
      std::string rest;
      std::getline(cs, rest);
      course.run_command(*this, rest);
    } else if (verb == "display") {  // the Display menu: "display theme light", "display hide memory"
      std::string rest;
      std::getline(cs, rest);
      display.run_command(rest);
    } else if (verb == "set") {  // the problem editor, as typed into a field
      std::string field, value;
      if (!(cs >> field >> value)) throw InputError("script: set needs a field and a value");
      auto number = [&](const std::string& text) {
        char* end = nullptr;
        const double x = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end) throw InputError("script: set " + field + " needs a number (got '" + excerpt(text) + "')");
        return x;
      };
      int64_t* slot = field == "nq" ? &form.nq : field == "nk" ? &form.nk : field == "d" ? &form.d
                    : field == "M" ? &form.M : field == "br" ? &form.br : field == "bc" ? &form.bc
                    : field == "seed" ? &form.seed : field == "kvlen" ? &form.options.mask.kv_len : nullptr;
      if (slot) {
        *slot = int64_t(number(value));
        if (slot == &form.M) std::snprintf(form.M_kib, sizeof form.M_kib, "%g", double(*slot) * 4.0 / 1024.0);
      } else if (field == "schedule") {
        form.schedule = parse_schedule(value);  // the editor's combo offers only valid names
      } else if (field == "dtype") {
        form.options.dtype = parse_dtype(excerpt(value));
      } else if (field == "causal") {
        form.options.mask.causal = number(value) != 0;
      } else if (field == "backward") {
        form.backward = number(value) != 0;
      } else if (field == "dropout") {
        form.options.dropout = number(value);
      } else if (field == "l2") {  // a size, "gpu" (the GPU's own size) or "off"
        form.l2 = value != "off";
        std::snprintf(form.l2_size, sizeof form.l2_size, "%s", value == "gpu" || value == "off" ? "" : value.c_str());
      } else if (field == "gpu") {
        const auto* at = std::find(std::begin(kGpuNames), std::end(kGpuNames), value);
        if (at == std::end(kGpuNames)) throw InputError("script: set gpu knows h200, a100 (got '" + excerpt(value) + "')");
        form.gpu = int(at - std::begin(kGpuNames));
      } else if (field == "heads") {
        form.heads = int64_t(number(value));
      } else if (field == "ncu") {
        form.ncu = number(value) != 0;
      } else if (field == "window") {
        std::string right;
        if (!(cs >> right)) throw InputError("script: set window needs LEFT and RIGHT");
        form.options.mask.window_left = int64_t(number(value));
        form.options.mask.window_right = int64_t(number(right));
      } else {
        throw InputError("script: set knows nq, nk, d, M, br, bc, seed, schedule, dtype, causal, window, "
                         "kvlen, dropout, backward, l2, gpu, heads, ncu (got '" + excerpt(field) + "')");
      }
      form.validate();
    } else if (verb == "files") {
      std::string q, k, v;
      if (!(cs >> q >> k >> v)) throw InputError("script: files needs three .npy paths (Q K V)");
      set_files(q, k, v);
    } else if (verb == "export") {
      std::string base;
      if (!(cs >> base)) throw InputError("script: export needs a path without extension");
      set_field(export_base, base, "export path");
      for (ExportKind kind : {ExportKind::json, ExportKind::csv, ExportKind::chrome, ExportKind::png}) {
        export_as(kind);
        if (export_message.rfind("error", 0) == 0) throw InputError("script: export " + export_message);
      }
    } else if (verb == "dram") {
      std::string path;
      if (!(cs >> path)) throw InputError("script: dram needs a measurement .json path");
      set_field(dram.path, path, "--dram");
      load_dram();
      if (!dram.error.empty()) throw InputError("script: dram " + dram.error);
    } else if (verb == "snapshots") {  // the compare view's folder field and Load button
      std::string dir;
      if (!(cs >> dir)) throw InputError("script: snapshots needs a folder");
      set_field(snapshots.dir, dir, "--snapshots");
      load_snapshots();
      if (!snapshots.error.empty()) throw InputError("script: snapshots: " + snapshots.error);
    } else if (verb == "snapshot-problem") {  // the "Load the folder's problem" button
      if (!load_snapshot_problem()) throw InputError("script: snapshot-problem: no folder of another problem is loaded");
    } else if (verb == "first-over") {  // the "Go to the first over tolerance" button
      if (!seek_first_over()) throw InputError("script: first-over: no snapshot j is over tolerance");
    } else if (verb == "apply") {  // the Apply button: disabled while a field is invalid
      if (form.error.empty()) apply_form();
    } else {
      throw InputError("script: unknown action '" + excerpt(verb) +
                       "' (expected step N, back N, seek K, play, pause, end, home, jump I J, set FIELD N, apply, display WHAT, "
                       "export BASE, dram FILE, snapshots DIR, snapshot-problem, first-over)");
    }
  }
}

}  // namespace flashstep::gui
