// The app's scripted actions (--script, the web page's commands): one command at a time, the
// same actions the buttons and keys call.
#include "app/gui/app_state.h"

#include "app/gui/script.h"
#include "core/checked.h"

#include <cstdlib>
#include <sstream>
#include <utility>
#include <string>

namespace flashstep::gui {

void AppState::run_script(const std::string& script) {
  // The whole script's form first (app/gui/script.h): a bad command anywhere runs none of it.
  for (const ScriptCommand& c : parse_script(script)) {
    const std::string& verb = c.verb;
    auto arg = [&c](size_t k) -> const std::string& { return c.args[k]; };
    auto whole = [&](size_t k) { return checked::parse_int(arg(k), ("script: " + verb).c_str()); };
    if (verb == "step" || verb == "back") {
      int64_t a = c.args.empty() ? 1 : whole(0);
      a = std::min(a, int64_t(steps()));  // more steps than the trace has do nothing more
      for (int64_t n = 0; n < a; ++n) verb == "step" ? step_forward() : step_back();
    } else if (verb == "seek") {
      seek(size_t(whole(0)));
    } else if (verb == "play" || verb == "pause") {  // the Play/Pause button (offline frames have dt = 0: no step moves)
      playing = verb == "play";
    } else if (verb == "end") {
      run_to_end();
    } else if (verb == "home" || verb == "reset") {
      reset();
    } else if (verb == "jump") {
      if (!jump_to(whole(0), whole(1))) throw InputError("script: jump " + jump_error);
    } else if (verb == "course") {  // the course column's buttons (course_state.h)
      course.run_command(*this, arg(0));
    } else if (verb == "display") {  // the Display menu: "display theme light", "display hide memory"
      display.run_command(arg(0));
    } else if (verb == "set") {  // the problem editor, as typed into a field (values checked by parse_script)
      set_field_from_script(arg(0), arg(1), c.args.size() > 2 ? arg(2) : std::string());
    } else if (verb == "files") {
      set_files(arg(0), arg(1), arg(2));
    } else if (verb == "export") {
      set_field(export_base, arg(0), "export path");
      for (ExportKind kind : {ExportKind::json, ExportKind::csv, ExportKind::chrome, ExportKind::png}) {
        export_as(kind);
        if (export_message.rfind("error", 0) == 0) throw InputError("script: export " + export_message);
      }
    } else if (verb == "dram") {
      set_field(dram.path, arg(0), "--dram");
      load_dram();
      if (!dram.error.empty()) throw InputError("script: dram " + dram.error);
    } else if (verb == "snapshots") {  // the compare view's folder field and Load button
      set_field(snapshots.dir, arg(0), "--snapshots");
      load_snapshots();
      if (!snapshots.error.empty()) throw InputError("script: snapshots: " + snapshots.error);
    } else if (verb == "snapshot-problem") {  // the "Load the folder's problem" button
      if (!load_snapshot_problem()) throw InputError("script: snapshot-problem: no folder of another problem is loaded");
    } else if (verb == "first-over") {  // the "Go to the first over tolerance" button
      if (!seek_first_over()) throw InputError("script: first-over: no snapshot j is over tolerance");
    } else if (verb == "pipeline") {  // the Pipeline view's radio buttons (values checked by parse_script)
      PipelineState& ps = pipeline;
      if (arg(0) == "forward" || arg(0) == "backward") ps.backward = arg(0) == "backward";
      else if (arg(0) == "d") ps.d = int(whole(1));
      else if (arg(0) == "n") ps.n = int(whole(1));
      else ps.causal = arg(1) == "1";
      ps.rebuild();
    } else if (verb == "apply") {  // the Apply button: disabled while a field is invalid
      // The window shows the field's red message, or "Not applied", and keeps the run; a script
      // has no one to read them, so its apply is refused with the same reason.
      if (!form.error.empty()) throw InputError("script: apply: " + form.error);
      if (!apply_form()) throw InputError("script: apply: " + apply_error);
    }
  }
}

void AppState::set_field_from_script(const std::string& field, const std::string& value, const std::string& right) {
  const std::string what = "script: set " + field;
  auto whole = [&what](const std::string& text) { return checked::parse_int(text, what.c_str()); };
  auto number = [&what](const std::string& text) { return checked::parse_double(text, what.c_str()); };
  int64_t* slot = field == "nq" ? &form.nq : field == "nk" ? &form.nk : field == "d" ? &form.d
                : field == "M" ? &form.M : field == "br" ? &form.br : field == "bc" ? &form.bc
                : field == "kvlen" ? &form.options.mask.kv_len : field == "heads" ? &form.heads : nullptr;
  if (slot) {  // whole numbers, read as text: no double in between
    *slot = whole(value);
    if (slot == &form.M) std::snprintf(form.M_kib, sizeof form.M_kib, "%g", double(*slot) * 4.0 / 1024.0);
  } else if (field == "seed") {  // 0 .. 2^64 - 1, as --seed
    form.seed = checked::parse_uint(value, what.c_str());
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
  } else if (field == "ncu") {
    form.ncu = number(value) != 0;
  } else if (field == "window") {
    form.options.mask.window_left = whole(value);
    form.options.mask.window_right = whole(right);
  }
  form.validate();
}

}  // namespace flashstep::gui
