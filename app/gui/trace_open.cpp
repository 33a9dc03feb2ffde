#include "app/gui/trace_open.h"

#include "core/trace_file.h"

namespace flashstep::gui {

void open_trace_file(AppState& s, const std::string& path) {
  auto v = make_run_view_from_trace(read_trace_file(path));  // throws before anything is replaced
  s.form.from_spec(v->spec);
  s.form.backward = false;
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
