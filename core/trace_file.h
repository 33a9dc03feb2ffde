// A trace file that can be read back: the JSON of core/export.h (trace_to_json) with a "replay"
// section holding what the readers of a Trace need and the JSON leaves out: the inputs Q, K, V,
// the mask, the outputs, what HBM held before the first step (Trace::hbm_before), and per step
// the HBM writes, the on-chip tiles and the per-tensor traffic; with the backward, its phases,
// dO and the gradients. `flashstep gui --trace FILE` opens such a file (a student's puzzle run
// written by the Python module, or any run); docs/python.md ("Trace files") describes it.
// replay.kind says what is traced: "attention" (the above; a file without the field too) or
// "softmax-row" (core/row_trace.h: one row x and the student's freely labelled steps, with
// "row" in place of "problem").
#pragma once
#include "core/row_trace.h"
#include "core/trace.h"

#include <nlohmann/json.hpp>
#include <string>

namespace flashstep {

// trace_to_json(t) plus "replay" (format "flashstep-trace-replay", version 1, kind "attention").
nlohmann::json trace_to_replay_json(const Trace& t);

// Rebuilds the Trace from such a JSON document. `source` names it in errors. Everything that
// is not an attention trace with a replay section (wrong types, a boolean that is not true or
// false, unknown labels, shapes that do not match the problem, a problem `run` refuses or a
// tiling other than run's of it, negative counts, running totals that are not the sums of the
// steps' bytes, a missing section, a softmax row) is an InputError naming the file and the field.
Trace trace_from_replay_json(const nlohmann::json& doc, const std::string& source);
// Reads and parses the file (size-capped, as every reader: docs/limits.md), then the above.
Trace read_trace_file(const std::string& path);

// A softmax row's trace as a file: {"row", "steps", "totals", "replay" (kind "softmax-row")}.
nlohmann::json row_trace_to_replay_json(const RowTrace& t);

// Either kind, as the app opens it. Every file that is neither (and an attention file with a
// bad field, as above) is an InputError naming the file and the field.
enum class TraceKind { attention, softmax_row };
struct TraceFile {
  TraceKind kind = TraceKind::attention;
  Trace trace;   // kind attention
  RowTrace row;  // kind softmax_row
};
TraceFile trace_file_from_json(const nlohmann::json& doc, const std::string& source);
TraceFile read_any_trace_file(const std::string& path);

// Why a reader cannot draw step `s` at its blocks, "" when it can: i or j outside the tiling
// (-1 is "none"), a line without the loop index its role works on (line_blocks: scores without
// i or j, a write of O without i), or on-chip values (a tile, O_i, row statistics, a dropout
// mask) at a step without a Q block. The app indexes its per-tile tables by i and j. Core's
// own runs always place; a puzzle's trace is checked when it is saved and when it is read. The
// text follows the step's name: "has i = -1, j = 0, but Alg1 L9 (scores) works on ...".
std::string step_placement_error(const Step& s, const Tiling& t);

// The line whose trace label is `label` ("Alg1 L9", "FA2fwd L8", ...) in any algorithm's
// table; false when no line has it.
bool line_from_label(const std::string& label, Line& out);

}  // namespace flashstep
