#include "app/gui/trace_open.h"

#include "core/trace_file.h"

namespace flashstep::gui {

void open_trace_file(AppState& s, const std::string& path) {
  TraceFile f = read_any_trace_file(path);  // throws before anything is replaced
  if (f.kind == TraceKind::softmax_row) {
    auto rv = make_row_view(std::move(f.row), path);
    s.row = std::move(rv);  // the run stays behind it, not shown
    s.playing = false;
    s.row_now = row_at(*s.row, 0);
    s.cursor_moved();
    s.apply_error.clear();
    s.preset_name = "trace";
    s.preset_title = "Trace " + path;
    s.preset_description = "A softmax row's trace read from " + path + ": the steps over the row x as they were "
                           "recorded, beside core's lesson for the same row and block size.";
    return;
  }
  auto v = make_run_view_from_trace(std::move(f.trace));
  s.form.from_spec(v->spec);
  s.form.backward = v->backward;
  s.form.set_l2(std::nullopt);
  s.form.validate();
  s.set_run(std::move(v));
  s.apply_error.clear();
  s.preset_name = "trace";
  s.preset_title = "Trace " + path;
  s.preset_description = "A trace read from " + path + ": its steps, bytes and HBM writes as they were recorded; "
                         "the memory panel runs the built-in schedules on its inputs beside it.";
  s.view = View::tiles;
  s.view_changed = true;
}

}  // namespace flashstep::gui
