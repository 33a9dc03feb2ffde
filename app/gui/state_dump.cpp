#include "app/gui/state_dump.h"

#include "app/gui/backward_state.h"
#include "app/gui/decode_state.h"

#include "core/export.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace flashstep::gui {

namespace {

nlohmann::json number_or_text(float x) {
  if (std::isfinite(x)) return double(x);
  return std::isnan(x) ? "nan" : (x < 0 ? "-inf" : "inf");
}

// A colour as drawn, [r, g, b] (ImGui's IM_COL32 packing: red in the lowest byte).
nlohmann::json rgb(uint32_t c) { return {c & 0xff, (c >> 8) & 0xff, (c >> 16) & 0xff}; }

// The Bench view: the file, the figure shown and its series, as the model built them.
nlohmann::json bench_to_json(const BenchState& b) {
  nlohmann::json series = nlohmann::json::array();
  for (const plot::Series& x : b.shown.series)
    series.push_back({{"label", x.label}, {"x", x.x}, {"y", x.y}, {"right", x.right}, {"bars", x.bars}});
  return {{"path", b.path}, {"loaded", b.loaded}, {"error", b.error}, {"figure", plot::figure_name(b.figure)},
          {"d", b.d}, {"title", b.shown.title}, {"empty", b.shown.empty}, {"series", series},
          {"x_log", b.shown.x.log}, {"y_log", b.shown.y.log}, {"plot_h_px", b.plot_h},
          {"figure_background_rgb", rgb(b.figure_background)}, {"y_labels_gap_px", b.y_labels_gap},
          {"y_labels_stacked", b.y_labels_stacked}};
}

nlohmann::json matrix_to_json(const Mat& m) {
  nlohmann::json rows = nlohmann::json::array();
  for (int64_t r = 0; r < m.rows(); ++r) {
    nlohmann::json row = nlohmann::json::array();
    for (int64_t c = 0; c < m.cols(); ++c) row.push_back(number_or_text(m(r, c)));
    rows.push_back(std::move(row));
  }
  return rows;
}

// The compare view's snapshot state: the per-j ratios to the tolerance, the first j over it,
// and the tile at the cursor (the folder's, the trace's, the difference in tolerance units).
nlohmann::json snapshots_to_json(const SnapshotCompare& c) {
  nlohmann::json j = {{"loaded", c.loaded}, {"dir", c.dir}, {"mismatch", c.mismatch}, {"error", c.error},
                      {"first_over_j", c.first_over_j}, {"first_over_i", c.first_over_i}, {"worst", c.worst},
                      {"final_o_ratio", c.final_o_ratio}, {"final_lse_ratio", c.final_lse_ratio}};
  const SnapshotTile& t = c.tile;
  j["tile"] = {{"i", t.i}, {"j", t.j}, {"row0", t.row0}, {"rows", t.rows}};
  if (t.i >= 0)
    for (int k = 0; k < kSnapTensors; ++k)
      j["tile"][kSnapTensorNames[k]] = {{"other", matrix_to_json(t.other[size_t(k)])}, {"cpu", matrix_to_json(t.cpu[size_t(k)])},
                                        {"diff", matrix_to_json(t.diff[size_t(k)])}, {"max_diff", t.max_diff[size_t(k)]}};
  return j;
}

nlohmann::json vec_to_json(const Vec& v) {
  nlohmann::json a = nlohmann::json::array();
  for (int64_t k = 0; k < v.size(); ++k) a.push_back(number_or_text(v(k)));
  return a;
}

// A softmax row's trace (row_state.h): the step, HBM, what was loaded and written, and per block
// core's lesson beside the student's m and l after it.
nlohmann::json row_to_json(const AppState& s) {
  const RowView& v = *s.row;
  const RowAt& at = s.row_now;
  const size_t k = at.k;
  nlohmann::json j;
  j["kind"] = "softmax-row";
  j["index"] = k;
  j["steps"] = v.trace.steps.size();
  j["line"] = k ? v.trace.steps[k - 1].label : "";
  j["hbm_read_total"] = k ? v.trace.steps[k - 1].read_total : 0;
  j["hbm_write_total"] = k ? v.trace.steps[k - 1].write_total : 0;
  nlohmann::json blocks = nlohmann::json::array();
  for (size_t b = 0; b < v.lesson.blocks.size(); ++b) {
    const LessonBlock& lb = v.lesson.blocks[b];
    const RowBlockAt& rb = at.blocks[b];
    blocks.push_back({{"begin", lb.begin}, {"end", lb.end}, {"reached", rb.reached},
                      {"lesson", {{"local_max", lb.local_max}, {"local_sum", lb.local_sum}, {"m_new", lb.m_new},
                                  {"l_new", lb.l_new}, {"alpha", lb.alpha}, {"beta", lb.beta}}},
                      {"student", {{"m", rb.m_stored ? number_or_text(rb.m) : nullptr},
                                   {"l", rb.l_stored ? number_or_text(rb.l) : nullptr}}}});
  }
  auto seen = [](const std::vector<Seen>& v) {
    nlohmann::json a = nlohmann::json::array();
    for (Seen x : v) a.push_back(x == Seen::no ? "no" : x == Seen::now ? "now" : "before");
    return a;
  };
  nlohmann::json hbm, read, written;
  for (int t = 0; t < kRowTensors; ++t) {
    hbm[row_tensor_name(RowTensor(t))] = vec_to_json(at.hbm[size_t(t)]);
    read[row_tensor_name(RowTensor(t))] = at.read[size_t(t)];
    written[row_tensor_name(RowTensor(t))] = at.written[size_t(t)];
  }
  j["row"] = {{"n", v.trace.n()}, {"block", v.trace.block}, {"current_block", at.current_block},
              {"blocks", blocks}, {"hbm", hbm}, {"x_loaded", seen(at.x_loaded)}, {"y_written", seen(at.y_written)},
              {"tensor_read", read}, {"tensor_written", written},
              {"judged", {{"read_so_far", at.so_far.read}, {"written_so_far", at.so_far.written},
                          {"read_step", at.this_step.read}, {"written_step", at.this_step.written},
                          {"read_run", at.whole_run.read}, {"written_run", at.whole_run.written},
                          {"diagnostic_run", at.whole_run.diagnostic}}},
              {"lesson_softmax", v.lesson.direct}, {"lesson_online", v.lesson.online}};
  j["explanation"] = s.explanation;
  j["view"] = "row";
  return j;
}

}  // namespace

nlohmann::json state_to_json(const AppState& s) {
  if (s.row) return row_to_json(s);
  nlohmann::json j;
  const Step* cur = s.cursor->current();
  j["index"] = s.index();
  j["steps"] = s.steps();
  j["line"] = cur ? line_label(cur->line) : "";
  j["i"] = cur ? cur->i : -1;
  j["j"] = cur ? cur->j : -1;
  j["hbm_read_total"] = cur ? cur->hbm_read_total : 0;
  j["hbm_write_total"] = cur ? cur->hbm_write_total : 0;
  const Problem& p = s.run->trace.problem;
  j["problem"] = {{"nq", p.nq}, {"nk", p.nk}, {"d", p.d}, {"M", p.M}, {"seed", p.seed},
                  {"pattern", p.pattern}, {"scale", p.scale}, {"schedule", schedule_name(p.schedule)},
                  {"dtype", dtype_name(p.dtype)}, {"dropout", p.dropout}, {"mask", p.mask.describe()}};
  // The backward's HBM (dQ, dK, dV; D for fa2; dP, dS for standard) when it ran.
  const Trace& tr = s.run->trace;
  j["tiling"] = {{"Br", tr.tiling.Br}, {"Bc", tr.tiling.Bc}, {"Tr", tr.tiling.Tr}, {"Tc", tr.tiling.Tc}};
  j["backward"] = {{"ran", tr.has_backward}, {"first_step", tr.backward_first_step},
                   {"in_backward", tr.has_backward && s.index() > tr.backward_first_step}};
  // The backward view's on-chip tiles at this step (backward_state.h): the accumulators dV~_j,
  // dK~_j and the step each was recorded at.
  const BackwardChip chip = backward_chip(tr, s.index());
  for (const auto& [name, st] : {std::pair<const char*, const Step*>{"dV", chip.dV}, {"dK", chip.dK},
                                 {"P", chip.P}, {"dP", chip.dP}, {"dS", chip.dS}})
    j["backward"]["chip"][name] =
        st ? nlohmann::json{{"step", st - tr.steps.data()}, {"tile", matrix_to_json(st->tile)}} : nlohmann::json(nullptr);
  for (Tensor t : {Tensor::O, Tensor::l, Tensor::m, Tensor::L, Tensor::S, Tensor::P, Tensor::dQ, Tensor::dK,
                   Tensor::dV, Tensor::D, Tensor::dP, Tensor::dS}) {
    if (!s.cursor->written(t)) {
      j["hbm"][tensor_name(t)] = nullptr;
      continue;
    }
    j["hbm"][tensor_name(t)] = matrix_to_json(s.cursor->hbm(t));
  }
  // Whether the trace holds part of its schedule, compared as core's whole run (RunView::whole_schedule).
  j["whole_schedule"] = s.run->whole_schedule.has_value();
  // The memory panel's table of what decode's splits add against FA2, as drawn (decode_state.h).
  if (DecodeExtraTraffic x; decode_extra_traffic(*s.run, x)) {
    nlohmann::json rows = nlohmann::json::array();
    for (const DecodeExtraRow& r : x.rows) rows.push_back({{"name", r.name}, {"shown", r.decode}, {"contrast", r.contrast}});
    j["decode_extra"] = {{"rows", rows}, {"extra", x.extra}, {"q_again", x.q_again}, {"partials", x.partials},
                         {"kv", x.kv}};
  }
  // The memory panel's side-by-side table: each schedule's totals and closed form.
  for (const ScheduleRun& r : s.run->runs) {
    nlohmann::json e;
    e["ok"] = r.ok;
    e["hbm_read"] = r.totals.hbm_read_bytes;
    e["hbm_write"] = r.totals.hbm_write_bytes;
    const int bpe = p.bytes_per_elem, out_bpe = dtype_bytes(output_dtype(p.dtype));
    e["form_read"] = r.form.read_bytes(bpe, out_bpe);
    e["form_write"] = r.form.write_bytes(bpe, out_bpe);
    e["forward"] = {{"hbm_read", r.forward_totals.hbm_read_bytes}, {"hbm_write", r.forward_totals.hbm_write_bytes}};
    if (s.run->backward)
      e["backward"] = {{"hbm_read", r.backward_totals.hbm_read_bytes}, {"hbm_write", r.backward_totals.hbm_write_bytes},
                       {"form_read", r.backward_form.read_bytes(bpe)}, {"form_write", r.backward_form.write_bytes(bpe)}};
    const int64_t fwd_bwd = fwd_bwd_form_bytes(r, p.dtype);
    e["fwd_bwd_form_bytes"] = fwd_bwd < 0 ? nlohmann::json(nullptr) : nlohmann::json(fwd_bwd);  // null: "n/a"
    if (r.have_error) e["o_max_rel"] = r.o_err.max_rel;
    // The table's DRAM rows, as the panel draws them (l2_view.h).
    const DramColumn dc = dram_column(r.totals, r.schedule, p, s.dram.loaded ? &s.dram.data : nullptr);
    e["dram_read"] = dc.read;
    e["dram_write"] = dc.write;
    if (dc.model)
      e["l2"] = {{"all_heads_dram_read", dc.all_heads_read}, {"all_heads_dram_write", dc.all_heads_write}};
    if (dc.ncu) e["l2"]["ncu_dram_read"] = dc.ncu_read, e["l2"]["ncu_dram_write"] = dc.ncu_write;
    if (dc.measured)
      e["measured"] = {{"dram_read", dc.measured->read_bytes}, {"dram_write", dc.measured->write_bytes},
                       {"kernel_ms", dc.measured->kernel_ms}};
    j["runs"][schedule_name(r.schedule)] = std::move(e);
  }
  // The memory panel's L2 lines at the current step.
  if (tr.totals.l2.enabled) {
    const L2StepView l2 = l2_step_view(tr, cur);
    j["l2"] = {{"gpu", tr.totals.l2.config.gpu}, {"bytes", tr.totals.l2.config.bytes},
               {"heads", tr.totals.l2.config.heads}, {"ncu", tr.totals.l2.config.ncu},
               {"dram_read_total", l2.dram_read_total}, {"dram_write_total", l2.dram_write_total},
               {"lines", l2.lines}, {"dirty_lines", l2.dirty_lines}, {"capacity_lines", l2.capacity_lines},
               {"hit_total", l2.hit_total}, {"hit_rate", l2.hit_rate}};
  } else {
    j["l2"] = nullptr;
  }
  j["dram"] = {{"loaded", s.dram.loaded}, {"error", s.dram.error}, {"path", s.dram.path},
               {"points", s.dram.loaded ? s.dram.data.points.size() : 0}};
  // The .npy inputs: the editor's fields, and the files the run was made from ("" for a pattern).
  const ProblemSpec& rs = s.run->spec;
  j["inputs"] = {{"use_files", s.form.use_files}, {"q_path", s.form.q_path}, {"k_path", s.form.k_path},
                 {"v_path", s.form.v_path}, {"run_q_path", rs.q_path}, {"run_k_path", rs.k_path},
                 {"run_v_path", rs.v_path}};
  j["skipped_tiles"] = s.run->skipped_tiles;
  j["partial_tiles"] = s.run->partial_tiles;
  j["form_error"] = s.form.error;
  j["form_error_field"] = int(s.form.error_field);
  j["apply_error"] = s.apply_error;
  j["lesson_shown"] = s.lesson.shown;
  j["lesson_table"] = {{"form", s.lesson.table_form}, {"clip_px", s.lesson.table_clip_px},
                       {"scroll_px", s.lesson.table_scroll_px}, {"softmax_clip_px", s.lesson.softmax_clip_px}};
  j["compare"] = {{"loaded", s.compare.loaded}, {"passed", s.compare.passed()},
                  {"o_max_rel", s.compare.o_stats.max_rel}, {"lse_max_rel", s.compare.lse_stats.max_rel},
                  {"map_px", {s.compare.map_px[0], s.compare.map_px[1]}}, {"o_path", s.compare.o_path},
                  {"lse_path", s.compare.lse_path}, {"error", s.compare.error},
                  {"header_cut_px", s.compare.header_cut_px}};
  j["bench"] = bench_to_json(s.bench);
  if (s.forget_local_files) j["local_files"] = s.local_files_note;  // the web page's opened files (web/kept_files.h)
  // The display settings in force and what the window measured with them (0 without a window).
  const DisplayState& ds = s.display;
  j["display"] = {{"theme", theme_name(ds.now.theme)}, {"font_scale", ds.now.font_scale},
                  {"hidden", panel_list(ds.now.hidden)}, {"settings_path", ds.path},
                  {"font_px", ds.font_px}, {"font_file", ds.font_file},
                  {"sample_text", {{"text", "Step >"}, {"w", ds.sample_w}, {"h", ds.sample_h}}}};
  j["snapshots"] = snapshots_to_json(s.snapshots);
  const CourseState& c = s.course;
  j["course"] = {{"active", c.active}, {"chapter", c.chapter ? c.chapter->id : ""}, {"page", c.page + 1},
                 {"seed", c.seed}, {"outline", course::panel_title(c.outline())}, {"shown", panel_list(c.shown_panels())},
                 {"column_w", c.column_w}, {"centre_w", c.centre_w}, {"page_overflow", c.page_overflow}, {"overflow_px", c.column_overflow_px},
                 {"page_overflow_x_px", c.page_overflow_x_px}, {"picker_cut_px", c.picker_cut_px},
                 {"page_view_h", c.page_view_h},
                 {"part", c.part + 1}, {"parts", c.parts}, {"io_label_gap_px", c.io.label_gap_px},
                 // -1: the page names no part of a panel, or its panel was not drawn
                 {"anchor_outside_px", c.anchor_version == c.version && c.version ? c.anchor_outside_px : -1.0f},
                 {"anchor_scrolled", c.anchor_version == c.version && c.anchor_scrolled}};
  j["controls"] = {{"scrub_label_gap_px", s.scrub_label_gap_px}, {"scrub_label_cut_px", s.scrub_label_cut_px},
                   {"overflow_px", s.controls_overflow_px}};
  j["algorithm_panel"] = {{"listing_lines", s.algo_listing_lines}, {"overflow_px", s.algo_overflow_px},
                          {"sentence_hidden_px", s.algo_sentence_hidden_px},
                          {"listing_sideways", s.algo_listing_sideways}, {"current_shown_px", s.algo_current_shown_px}};
  j["softmax_panel"] = {{"table_columns", s.softmax_table_columns}, {"table_l_tilde", s.softmax_table_l_tilde},
                         {"table_fixed", std::vector<bool>(s.softmax_table_fixed, s.softmax_table_fixed + std::max(0, std::min(8, s.softmax_table_columns)))},
                         {"table_blank_px", s.softmax_table_blank_px},
                         {"overflow_px", s.softmax_overflow_px}, {"note", s.softmax_note}, {"plot_label_clear_px", s.softmax_plot_label_clear_px}};
  j["problem_panel"] = {{"overflow_px", s.problem_overflow_px}, {"preset_combo_cut_px", s.preset_combo_cut_px},
                        {"page", s.problem_page == 0 ? "problem" : "export"}, {"page_combo", s.problem_combo},
                        {"tabs_cut", s.problem_tabs_cut}};
  j["tiles"] = {{"cell_px", s.tiles_cell_px}, {"d_cell_px", s.tiles_d_cell_px},
                {"backward_overflow_px", s.backward_overflow_px}, {"backward_col_px", s.backward_col_px},
                {"decode_lse_gap_px", s.decode_lse_gap_px},
                {"bar_cut_px", s.tiles_bar_cut_px}, {"header_overflow_px", s.tiles_header_overflow_px}, {"rows_px", s.tiles_rows_px},
                {"rows_label_gap_px", s.tiles_rows_label_gap_px}, {"j_labels", s.tiles_j_labels},
                {"j_last_label", s.tiles_j_last_label}, {"j_stride", s.tiles_j_stride},
                {"split_labels", s.tiles_split_labels}, {"split_label_overlaps", s.tiles_split_label_overlaps}};
  j["memory_panel"] = {{"overflow_px", s.memory_overflow_px},
                       {"table_clip_px", s.memory_table_clip_px},
                       {"table_compact", s.memory_table_compact},
                       {"table_shape", s.memory_table_shape},
                       {"table_scroll", s.memory_table_scroll},
                       {"table_hidden_px", s.memory_table_hidden_px},
                       {"whole_run_scroll", s.whole_run_scroll},
                       {"whole_run_hidden_px", s.whole_run_hidden_px},
                       {"table_tight_text", s.memory_table_tight_text},
                       {"header", s.memory_header}, {"so_far_pct", s.memory_so_far_pct}};
  j["view_tabs_cut"] = s.view_tabs_cut;
  j["view_combo"] = s.view_combo;
  j["view_combo_cut_px"] = s.view_combo_cut_px;
  j["center_overflow_px"] = s.center_overflow_px;
  {  // the panels' title bars as last drawn: the whole title, what shows, and whether it was cut
    const auto& titles = s.panel_titles;
    const size_t n = sizeof titles / sizeof titles[0];
    int last = -1;
    for (size_t i = 0; i < n; ++i) last = std::max(last, titles[i].frame);
    nlohmann::json list = nlohmann::json::array();
    for (size_t i = 0; i < n; ++i)
      if (titles[i].frame >= 0 && titles[i].frame == last)
        list.push_back({{"id", titles[i].id}, {"title", titles[i].full}, {"shown", titles[i].shown},
                        {"shown_px", titles[i].shown_px}, {"room_px", titles[i].room_px},
                        {"cut", std::strcmp(titles[i].full, titles[i].shown) != 0}});
    j["panel_titles"] = list;
  }
  j["view"] = s.view == View::lesson ? "lesson" : s.view == View::compare ? "compare"
            : s.view == View::bench ? "bench" : s.view == View::pipeline ? "pipeline" : "tiles";
  nlohmann::json techniques = nlohmann::json::array();
  for (const auto& r : s.pipeline.rows)
    techniques.push_back({{"technique", r.kernel.key}, {"predicted_tflops", r.predicted},
                          {"measured_tflops", r.measured.found ? r.measured.value : 0.0}, {"measured_source", r.measured.source}});
  j["pipeline"] = {{"backward", s.pipeline.backward}, {"technique", s.pipeline.technique}, {"d", s.pipeline.d},
                   {"n", s.pipeline.n}, {"causal", s.pipeline.causal}, {"in_turn", s.pipeline.in_turn},
                   {"axis_label_gap_px", s.pipeline.axis_label_gap_px},
                   {"chart_clip_px", s.pipeline.chart_clip_px},
                   {"chart_bar_room_px", s.pipeline.chart_bar_room_px},
                   {"lane_rgb", {rgb(s.pipeline.lane_colours[0]), rgb(s.pipeline.lane_colours[1])}},
                   {"measured_loaded", s.pipeline.measured_loaded}, {"measured_error", s.pipeline.measured_error},
                   {"segments", s.pipeline.timeline.segments.size()}, {"predicted_tflops", s.pipeline.prediction.tflops},
                   {"backward_predicted_ms", s.pipeline.backward_prediction.ms},
                   {"backward_measured_ms", s.pipeline.backward_measured.found ? s.pipeline.backward_measured.value : 0.0},
                   {"techniques", techniques}};
  return j;
}

void write_state_dump(const AppState& s, const std::string& path) {
  write_file_atomic(path, state_to_json(s).dump(1) + "\n");
}

}  // namespace flashstep::gui
