// `flashstep gui --trace FILE`: a saved trace (a student's puzzle run, or any run written by the
// Python module's save_trace) opened in the app, stepped through with the same panels as a
// built-in schedule's run (with the backward view from a backward's first step on); a softmax
// row's trace with the row's panels instead (row_view.cpp). The file format: core/trace_file.h.
#pragma once
#include "app/gui/app_state.h"

#include <string>

namespace flashstep::gui {

// Reads the trace and makes it the app's run (the editor shows its problem), or its open row.
// Throws InputError for a file that is not a trace with its replay section.
void open_trace_file(AppState& s, const std::string& path);

}  // namespace flashstep::gui
