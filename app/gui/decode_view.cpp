// Flash-decoding's drawing (decode_view.h). Every number comes from the trace: the partials'
// values from the Cursor's HBM, the factors from the combine's steps (decode_state.h), the
// bytes from the runs' counters.
//
// [SECTION] Split colours and the tiles view's partials
// [SECTION] The combine's rescale factors (softmax panel)
// [SECTION] The partials' traffic (memory panel)
// [SECTION] The partials against a snapshot folder (compare view)
#include "app/gui/decode_view.h"

#include "app/gui/decode_state.h"
#include "app/gui/widgets.h"
#include "core/schedules/decode/decode.h"
#include "core/schedule_registry.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace flashstep::gui {

// [SECTION] Split colours and the tiles view's partials

ImU32 split_colour(int64_t s) {
  static const ImU32 kSplitCols[8] = {IM_COL32(230, 159, 0, 255),   IM_COL32(86, 180, 233, 255),
                                      IM_COL32(0, 158, 115, 255),   IM_COL32(240, 228, 66, 255),
                                      IM_COL32(204, 121, 167, 255), IM_COL32(213, 94, 0, 255),
                                      IM_COL32(150, 150, 255, 255), IM_COL32(200, 200, 200, 255)};
  return kSplitCols[size_t(((s % 8) + 8) % 8)];
}

namespace {

// What the tiles view needs of the partials, made once per run (an idle frame allocates nothing).
struct PartialsCache {
  uint64_t run = ~uint64_t(0);
  PartialWrites writes;
  float range = 1;  // max |O^(s)| over every write (and the setup's): the colour scale
};
const PartialsCache& partials_cache(const AppState& s) {
  static PartialsCache c;
  if (c.run != s.run_version) {
    c.run = s.run_version;
    c.writes = partial_writes(s.run->trace);
    c.range = 1e-30f;
    auto widen = [](const std::vector<HbmWrite>& writes) {
      for (const HbmWrite& w : writes)
        if (w.tensor == Tensor::Op) c.range = std::max(c.range, float(w.data.cwiseAbs().maxCoeff()));
    };
    widen(s.run->trace.hbm_before);  // a puzzle's partials, in HBM before the first step
    for (const Step& st : s.run->trace.steps) widen(st.writes);
  }
  return c;
}

// Blue below zero, white at zero, red above (the tiles' diverging scale); -inf in the tiles'
// -inf colour.
ImU32 diverging(float x, float range) {
  if (std::isinf(x)) return IM_COL32(92, 77, 117, 255);
  const float t = std::clamp(x / range, -1.0f, 1.0f);
  const float a = std::abs(t);
  const int hi = 245, lo_r = t < 0 ? int(hi - a * (hi - 40)) : hi, lo_b = t > 0 ? int(hi - a * (hi - 40)) : hi;
  const int g = int(hi - a * (hi - 60));
  return IM_COL32(lo_r, g, lo_b, 255);
}

}  // namespace

const char* DecodeLseLabel(float x_l, float right) {
  return x_l + ImGui::CalcTextSize("lse^(s)").x + 2 <= right ? "lse^(s)" : "lse";
}

float DecodeLseLabelX(float x_l, float right) {
  return std::min(x_l, right - ImGui::CalcTextSize(DecodeLseLabel(x_l, right)).x - 2);
}

float DrawDecodeTiles(AppState& s, const DecodeTilesPlace& g) {
  const RunView& v = *s.run;
  const Trace& tr = v.trace;
  if (!has_partials(tr)) return g.x_l;
  const Problem& p = tr.problem;
  const Tiling& t = tr.tiling;
  const int64_t S = t.S, nq = p.nq, d = p.d;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  char buf[96];

  // Bands under K^T and under the scores: block j's split, with "s=1" where it fits its band and
  // clears K^T's j labels on the same row (at 1024x768 in presentation mode they were drawn over
  // each other).
  const float band_y = g.y_k + g.kv_h + 1;
  const int64_t j_stride = JLabelStride(t, g.cs);
  s.tiles_split_labels = s.tiles_split_label_overlaps = 0;
  for (int64_t sp = 0; sp < S; ++sp) {
    const SplitRange J = split_range(t.Tc, S, sp);
    const float x0 = g.x_s + float(J.j0 * t.Bc) * g.cs, x1 = g.x_s + float(std::min(J.j1 * t.Bc, p.nk)) * g.cs;
    const ImU32 col = split_colour(sp);
    dl->AddRectFilled(ImVec2(x0 + 0.5f, band_y), ImVec2(x1 - 0.5f, band_y + 3), col);
    dl->AddRectFilled(ImVec2(x0 + 0.5f, g.y_s + g.s_h + 2), ImVec2(x1 - 0.5f, g.y_s + g.s_h + 5), col);
    std::snprintf(buf, sizeof buf, "s=%lld", (long long)(sp + 1));
    const float tw = ImGui::CalcTextSize(buf).x;
    const float lx = (x0 + x1 - tw) * 0.5f;
    bool hits_j = false;
    for (int64_t j = 0; !hits_j && j < t.Tc; ++j) {
      float jl = 0, jr = 0;
      hits_j = JLabelSpan(t, p.nk, j, j_stride, g.x_s, g.cs, g.left, &jl, &jr) && jl < lx + tw + 2 && lx < jr + 2;
    }
    if (x1 - x0 >= tw + 4 && !hits_j) {
      dl->AddText(ImVec2(lx, band_y + 3), col, buf);
      ++s.tiles_split_labels;
      s.tiles_split_label_overlaps += hits_j;  // for --dump-state
    }
  }

  // The partials in HBM under O: S Nq rows (split s at rows s Nq ..), d columns; lse^(s) beside.
  const PartialsCache& pc = partials_cache(s);
  const int64_t rows = S * nq;
  const float top = g.y_v, avail_h = std::max(g.kv_h, 8.0f);
  const float ch = std::clamp(avail_h / float(rows), 0.25f, 24.0f), cw = g.o_w / float(d);
  const float lse_w = std::max(g.stat_w, 14.0f);
  // Labels: lse^(s) (or "lse" where that does not fit) ends inside the panel; O^(s)'s label takes
  // the longest form that fits before it. The lse^(s) column itself stays under L, at x_l.
  const char* lse_label = DecodeLseLabel(g.x_l, g.right);
  const float lse_label_x = DecodeLseLabelX(g.x_l, g.right), lse_x = g.x_l;
  std::snprintf(buf, sizeof buf, "O^(s) partials (S Nq x d = %lld x %lld), HBM, float32", (long long)rows, (long long)d);
  char mid[64];
  std::snprintf(mid, sizeof mid, "O^(s) (%lld x %lld), HBM", (long long)rows, (long long)d);
  dl->AddText(ImVec2(g.x_o, top - g.lab), text, LongestFitting(lse_label_x - g.x_o - 6, {buf, mid, "O^(s)", "O"}));
  dl->AddText(ImVec2(lse_label_x, top - g.lab), text, lse_label);
  const bool cells = rows * d <= 65536;  // one rectangle per element; beyond that an outline only
  const Cursor& c = *s.cursor;
  const size_t k = c.index();
  const bool have_o = c.written(Tensor::Op), have_l = c.written(Tensor::Lp);
  const Mat* Op = have_o ? &c.hbm(Tensor::Op) : nullptr;
  const Mat* Lp = have_l ? &c.hbm(Tensor::Lp) : nullptr;
  for (int64_t sp = 0; sp < S; ++sp)
    for (int64_t i = 0; i < t.Tr; ++i) {
      const int64_t r0 = sp * nq + i * t.Br, br = t.rows_in_q_block(i, nq);
      const float y0 = top + float(r0) * ch, y1 = y0 + float(br) * ch;
      const int64_t os = pc.writes.o_step[size_t(sp * t.Tr + i)], ls = pc.writes.lse_step[size_t(sp * t.Tr + i)];
      const bool o_in = Op && partial_in_hbm(os, k), l_in = Lp && partial_in_hbm(ls, k);
      if (o_in && cells)
        for (int64_t r = 0; r < br; ++r)
          for (int64_t col = 0; col < d; ++col)
            dl->AddRectFilled(ImVec2(g.x_o + float(col) * cw, y0 + float(r) * ch),
                              ImVec2(g.x_o + float(col + 1) * cw, y0 + float(r + 1) * ch),
                              diverging((*Op)(r0 + r, col), pc.range));
      if (l_in)
        for (int64_t r = 0; r < br; ++r)
          dl->AddRectFilled(ImVec2(lse_x, y0 + float(r) * ch), ImVec2(lse_x + lse_w, y0 + float(r + 1) * ch),
                            diverging((*Lp)(r0 + r, 0), std::max(1.0f, float(v.range_L))));
      if (!o_in) dl->AddRect(ImVec2(g.x_o, y0), ImVec2(g.x_o + g.o_w, y1), kEmptyEdgeCol);
      if (!l_in) dl->AddRect(ImVec2(lse_x, y0), ImVec2(lse_x + lse_w, y1), kEmptyEdgeCol);
    }
  // Each split's rows marked in its colour at the left; the grid's frame.
  for (int64_t sp = 0; sp < S; ++sp)
    dl->AddRectFilled(ImVec2(g.x_o - 5, top + float(sp * nq) * ch), ImVec2(g.x_o - 2, top + float((sp + 1) * nq) * ch),
                      split_colour(sp));
  const float bottom = top + float(rows) * ch;
  dl->AddRect(ImVec2(g.x_o - 1, top - 1), ImVec2(g.x_o + g.o_w + 1, bottom + 1), IM_COL32(110, 110, 120, 255));
  dl->AddRect(ImVec2(lse_x - 1, top - 1), ImVec2(lse_x + lse_w + 1, bottom + 1), IM_COL32(110, 110, 120, 255));
  if (!cells) dl->AddText(ImVec2(g.x_o + 4, top + 4), text, "(too many to draw)");

  // This step: partial rows written (orange) or read by the combine (blue).
  if (const Step* cur = c.current()) {
    auto rows_outline = [&](float x, float w, int64_t r0, int64_t n, ImU32 col) {
      dl->AddRect(ImVec2(x - 1.5f, top + float(r0) * ch - 1.5f), ImVec2(x + w + 1.5f, top + float(r0 + n) * ch + 1.5f),
                  col, 0, 0, 3.0f);
    };
    for (const HbmWrite& w : cur->writes) {
      if (w.tensor == Tensor::Op) rows_outline(g.x_o, g.o_w, w.row0, w.data.rows(), kWriteCol);
      if (w.tensor == Tensor::Lp) rows_outline(lse_x, lse_w, w.row0, w.data.rows(), kWriteCol);
    }
    if (cur->i >= 0) {
      const int64_t r0 = cur->i * t.Br, br = t.rows_in_q_block(cur->i, nq);
      if (tensor_read_now(s, Tensor::Lp))  // FD L17: lse_i^(s) of every split
        for (int64_t sp = 0; sp < S; ++sp) rows_outline(lse_x, lse_w, sp * nq + r0, br, kReadCol);
      if (tensor_read_now(s, Tensor::Op) && cur->split >= 0)  // FD L18: O_i^(s) of one split
        rows_outline(g.x_o, g.o_w, cur->split * nq + r0, br, kReadCol);
    }
  }

  // Hover: the element, its split and row, or "not written yet".
  if (!ImGui::IsWindowHovered()) return lse_x;
  const ImVec2 mp = ImGui::GetIO().MousePos;
  const bool in_o = mp.x >= g.x_o && mp.x < g.x_o + g.o_w, in_l = mp.x >= lse_x && mp.x < lse_x + lse_w;
  if (!(in_o || in_l) || mp.y < top || mp.y >= bottom) return lse_x;
  const int64_t r = std::clamp(int64_t((mp.y - top) / ch), int64_t(0), rows - 1), sp = r / nq, row = r % nq;
  const int64_t i = row / t.Br;
  const int64_t step = (in_o ? pc.writes.o_step : pc.writes.lse_step)[size_t(sp * t.Tr + i)];
  ImGui::BeginTooltip();
  if (!partial_in_hbm(step, k)) {
    ImGui::Text("%s of split %lld, row %lld: not written yet (FD %s)", in_o ? "O^(s)" : "lse^(s)", (long long)(sp + 1),
                (long long)row, in_o ? "L13" : "L14");
  } else if (in_o) {
    const int64_t col = std::clamp(int64_t((mp.x - g.x_o) / cw), int64_t(0), d - 1);
    ImGui::Text("O^(%lld)[%lld, %lld] = %s in HBM (float32)", (long long)(sp + 1), (long long)row, (long long)col,
                fmt_value(buf, sizeof buf, (*Op)(r, col), 6));
  } else {
    ImGui::Text("lse^(%lld)[%lld] = %s in HBM (float32)%s", (long long)(sp + 1), (long long)row,
                fmt_value(buf, sizeof buf, (*Lp)(r, 0), 6),
                std::isinf((*Lp)(r, 0)) ? ": the split keeps no key of this row; the combine gives it weight 0" : "");
  }
  ImGui::EndTooltip();
  return lse_x;
}

void DrawSplitLegend(const AppState& s) {
  const Trace& tr = s.run->trace;
  if (!has_partials(tr)) return;
  const int64_t S = tr.tiling.S;
  ImGui::TextUnformatted("K/V blocks by split:");
  char buf[64];
  for (int64_t sp = 0; sp < std::min<int64_t>(S, 8); ++sp) {
    const SplitRange J = split_range(tr.tiling.Tc, S, sp);
    std::snprintf(buf, sizeof buf, "s=%lld: j %lld-%lld", (long long)(sp + 1), (long long)J.j0, (long long)(J.j1 - 1));
    Swatch(split_colour(sp), false, buf, true);
  }
  if (S > 8) {
    ImGui::SameLine();
    ImGui::TextDisabled("(colours repeat every 8 splits)");
  }
}

// [SECTION] The combine's rescale factors (softmax panel)

bool DrawCombineFactors(const AppState& s) {
  static CombineFactors c;  // remade when the cursor moves: an idle frame allocates nothing
  static uint64_t run_seen = ~uint64_t(0), cursor_seen = ~uint64_t(0);
  if (run_seen != s.run_version || cursor_seen != s.cursor_version) {
    run_seen = s.run_version;
    cursor_seen = s.cursor_version;
    c = combine_factors(s.run->trace, *s.cursor);
  }
  if (c.i < 0) return false;
  const Tiling& t = s.run->trace.tiling;
  const int64_t r = std::clamp(int64_t(s.plot_row) - c.row0, int64_t(0), c.rows - 1);
  char a[32], b[32];
  ImGui::Text("Combine of block i = %lld, row %lld (%lld splits)", (long long)c.i, (long long)(c.row0 + r), (long long)c.S);
  DimText("lse_i = log sum_s e^(lse_i^(s)); each split's O_i^(s) is added weighted by e^(lse_i^(s) - lse_i), "
          "as the lesson merges two blocks. A split that keeps no key of the row has lse^(s) = -inf: weight 0.");
  if (std::isnan(c.lse(r))) ImGui::TextUnformatted("lse_i: not computed yet (FD L17)");
  else ImGui::Text("lse_i = %s", fmt_value(a, sizeof a, c.lse(r), 6));
  const ImGuiTableFlags tf = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY |
                             ImGuiTableFlags_SizingStretchProp;
  const float line = ImGui::GetTextLineHeightWithSpacing();  // the table takes the panel but for the sum and the plot's row
  const float h = std::min(line * float(c.S + 2), std::max(ImGui::GetContentRegionAvail().y - 3 * line, 5 * line));
  double sum = 0;
  int added = 0;
  if (ImGui::BeginTable("combine", 4, tf, ImVec2(0, h))) {
    ImGui::TableSetupScrollFreeze(0, 1);
    for (const char* hd : {"split", "keys", "lse_i^(s)", "e^(lse_i^(s) - lse_i)"}) ImGui::TableSetupColumn(hd);
    ImGui::TableHeadersRow();
    for (int64_t sp = 0; sp < c.S; ++sp) {
      ImGui::TableNextRow();
      if (sp == c.current_split) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, kHighlightCol);
      ImGui::TableNextColumn();
      std::snprintf(a, sizeof a, "s=%lld", (long long)(sp + 1));
      Swatch(split_colour(sp), false, a);
      ImGui::TableNextColumn();
      const SplitRange J = split_range(t.Tc, c.S, sp);
      ImGui::Text("%lld-%lld", (long long)(J.j0 * t.Bc), (long long)(std::min(J.j1 * t.Bc, s.run->trace.problem.nk) - 1));
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(fmt_value(a, sizeof a, c.lse_split(r, sp), 5));
      ImGui::TableNextColumn();
      const float f = c.factor(r, sp);
      if (std::isnan(f)) {
        ImGui::TextDisabled("- (FD L18 of s=%lld not yet)", (long long)(sp + 1));
      } else {
        ImGui::TextUnformatted(fmt_value(b, sizeof b, f, 5));
        sum += double(f);
        ++added;
      }
    }
    ImGui::EndTable();
  }
  ImGui::Text("sum of the %d factors so far: %s (1 once all %lld are added)", added, fmt_g(a, sizeof a, sum), (long long)c.S);
  return true;
}

// [SECTION] The partials' traffic (memory panel)

void DrawDecodeTraffic(const AppState& s) {
  const RunView& v = *s.run;
  const Trace& tr = v.trace;
  DecodeExtraTraffic x;
  if (!decode_extra_traffic(v, x)) return;
  const ScheduleInfo& info = schedule_info(v.schedule());
  const auto& rows = x.rows;
  char a[32], b[32], c[32], d[32];
  TextWrappedF("The splits' extra traffic against %s (S = %lld):", schedule_info(info.contrast).name, (long long)tr.tiling.S);
  if (v.whole_schedule)
    DimText("This trace holds the combine alone (the partials were in HBM before its first step): the decode column "
            "is core's whole run of the problem.");
  // Where the table in full does not fit (presentation mode at 1280x720), the byte counts are
  // written short and the row names wrap in their cells; the columns stretch in proportion to
  // what they hold, so that no number is cut.
  const ImGuiStyle& st = ImGui::GetStyle();
  float name_w = ImGui::CalcTextSize("bytes").x, num_w[2] = {0, 0};
  for (const DecodeExtraRow& r : rows) {
    name_w = std::max(name_w, ImGui::CalcTextSize(r.name).x);
    for (const int64_t n : {r.decode, r.contrast}) {
      num_w[0] = std::max(num_w[0], ImGui::CalcTextSize(fmt_bytes(a, sizeof a, n)).x);
      num_w[1] = std::max(num_w[1], ImGui::CalcTextSize(fmt_bytes_short(a, sizeof a, n)).x);
    }
  }
  for (float& w : num_w)
    w = std::max({w, ImGui::CalcTextSize(info.name).x, ImGui::CalcTextSize(schedule_info(info.contrast).name).x});
  const float cell = 2 * st.CellPadding.x + 1, room = ImGui::GetContentRegionAvail().x;
  const bool compact = name_w + 2 * num_w[0] + 3 * cell + 2 > room;
  const float label_w = std::max(ImGui::CalcTextSize("whole forward").x, room - 2 * num_w[compact] - 3 * cell - 4);
  const ImGuiTableFlags tf = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingStretchProp;
  if (ImGui::BeginTable("decode_extra", 3, tf)) {
    const ImGuiTableColumnFlags stretch = ImGuiTableColumnFlags_WidthStretch;
    ImGui::TableSetupColumn("bytes", stretch, compact ? label_w : name_w);
    ImGui::TableSetupColumn(info.name, stretch, num_w[compact]);
    ImGui::TableSetupColumn(schedule_info(info.contrast).name, stretch, num_w[compact]);
    ImGui::TableHeadersRow();
    const auto bytes = [&](char* buf, size_t n, int64_t v) { return compact ? fmt_bytes_short(buf, n, v) : fmt_bytes(buf, n, v); };
    for (const DecodeExtraRow& r : rows) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      TextWrappedAtSpaces(r.name);
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(bytes(a, sizeof a, r.decode));
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(bytes(b, sizeof b, r.contrast));
    }
    ImGui::EndTable();
  }
  char line[256];
  std::snprintf(line, sizeof line, "+%s in all: %s of Q read again per split, and 2 S Nq (d + 1) float32 partials = %s. "
                "That is %.2f%% more than the %s of K and V both read.",
                fmt_bytes(a, sizeof a, x.extra), fmt_bytes(b, sizeof b, x.q_again), fmt_bytes(c, sizeof c, x.partials),
                x.kv > 0 ? 100.0 * double(x.extra) / double(x.kv) : 0.0, fmt_bytes(d, sizeof d, x.kv));
  DimText(line);
}

// [SECTION] The partials against a snapshot folder (compare view)

void DrawPartialsCompare(const AppState& s) {
  const SnapshotCompare& sc = s.snapshots;
  if (!sc.loaded || sc.partial_ratio.empty()) return;
  ImGui::Text("Partials O^(s), lse^(s) (float32, tolerance %.0e), in tolerance units:", sc.partial_tol);
  const ImGuiTableFlags tf = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingStretchProp |
                             ImGuiTableFlags_ScrollY;
  const float h = std::min(ImGui::GetTextLineHeightWithSpacing() * float(sc.partial_ratio.size() + 2), 220.0f);
  char a[32], b[32];
  if (ImGui::BeginTable("partials", 4, tf, ImVec2(0, h))) {
    ImGui::TableSetupScrollFreeze(0, 1);
    for (const char* hd : {"split", "O^(s)", "lse^(s)", ""}) ImGui::TableSetupColumn(hd);
    ImGui::TableHeadersRow();
    for (size_t sp = 0; sp < sc.partial_ratio.size(); ++sp) {
      const auto& r = sc.partial_ratio[sp];
      const bool ok = r[0] <= 1 && r[1] <= 1;
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      std::snprintf(a, sizeof a, "s=%zu", sp + 1);
      Swatch(split_colour(int64_t(sp)), false, a);
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(fmt_g(a, sizeof a, r[0]));
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(fmt_g(b, sizeof b, r[1]));
      ImGui::TableNextColumn();
      ImGui::TextColored(ok ? kPassText : kErrorText, ok ? "ok" : "OVER");
    }
    ImGui::EndTable();
  }
}

}  // namespace flashstep::gui
