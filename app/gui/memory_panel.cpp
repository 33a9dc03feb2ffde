// The memory panel: HBM bytes per tensor so far, the DRAM bytes and the L2 at this step (with the
// L2 model), SRAM occupancy at this step, and the whole run of every schedule (fa1, fa2,
// standard) on the same inputs beside its closed form, its DRAM bytes and a measurement's.
#include "app/gui/decode_view.h"
#include "app/gui/panels.h"
#include "app/gui/widgets.h"
#include "core/backward.h"
#include "core/schedule_registry.h"

#include <imgui_internal.h>  // a window's visible rectangle (BringAnchorIntoView)

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>

namespace flashstep::gui {

namespace {

// One line of figures, wrapped at spaces in a narrow panel; a group, so that a tooltip after it
// answers the whole of it.
void WrappedLine(const char* text) {
  ImGui::BeginGroup();
  TextWrappedAtSpaces(text);
  ImGui::EndGroup();
}

// A count with an SI prefix and three significant digits ("1.79 k", "268 M"): shorter than
// "1.79e+03" in the side-by-side table's narrow columns.
const char* fmt_si(char* buf, size_t n, double x) {
  static const char* const kPrefix[] = {"", " k", " M", " G", " T", " P"};
  int p = 0;
  while (std::abs(x) >= 999.5 && p < 5) {
    x /= 1000;
    ++p;
  }
  std::snprintf(buf, n, p == 0 ? "%.0f%s" : "%.3g%s", x, kPrefix[p]);
  return buf;
}

// Bytes to three significant digits ("896 B", "1.06 KiB", "33.0 KiB", "260 KiB", "4.56 MiB"): the
// side-by-side table's four schedules share a column's width of the right panel.
const char* fmt_bytes3(char* buf, size_t n, int64_t b) {
  if (b < 1024) {
    std::snprintf(buf, n, "%lld B", (long long)b);
    return buf;
  }
  static const char* const kUnit[] = {"KiB", "MiB", "GiB", "TiB"};
  double x = double(b) / 1024;
  int u = 0;
  while (x >= 999.5 && u < 3) {
    x /= 1024;
    ++u;
  }
  std::snprintf(buf, n, "%.*f %s", x < 9.995 ? 2 : x < 99.95 ? 1 : 0, x, kUnit[u]);
  return buf;
}

// The L2 model at this step (l2_view.h): DRAM bytes beside the HBM bytes above, the L2's
// occupancy and hit rate.
void DrawL2Step(const Trace& tr, const Step* cur) {
  char a[32], b[32], d[32], c[200];
  const L2Totals& l2 = tr.totals.l2;
  if (!l2.enabled) {
    DimText("DRAM = HBM here: no L2 model (tick \"L2 model\" in the Problem panel).");
    return;
  }
  const L2StepView v = l2_step_view(tr, cur);
  std::snprintf(c, sizeof c, "DRAM so far: read %s, written %s (through the L2)", fmt_bytes(a, sizeof a, v.dram_read_total),
                fmt_bytes(b, sizeof b, v.dram_write_total));
  WrappedLine(c);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Head 0's bytes between the L2 and DRAM, with %lld heads sharing a %s %s L2 and\n"
                      "%lld blocks in flight (docs/l2-model.md). A load reads DRAM only for bytes not in\n"
                      "the L2; a store dirties L2 lines, written back when evicted or at the end\n"
                      "(%lld B at the end, in no step).",
                      (long long)l2.config.heads, fmt_bytes(a, sizeof a, l2.config.bytes), l2.config.gpu.c_str(),
                      (long long)l2.plan.slots, (long long)l2.final_writeback_bytes);
  if (cur) {
    std::snprintf(c, sizeof c, "this step: DRAM read %s, written %s", fmt_bytes(a, sizeof a, v.dram_read),
                  fmt_bytes(b, sizeof b, v.dram_write));
    WrappedLine(c);
  }
  const int64_t line = L2Config::kLineBytes;
  std::snprintf(c, sizeof c, "L2: %s of %s held, %s dirty", fmt_bytes(a, sizeof a, v.lines * line),
                fmt_bytes(b, sizeof b, v.capacity_lines * line), fmt_bytes(d, sizeof d, v.dirty_lines * line));
  // A group: the label above the bar where it does not fit inside, and the tooltip for both.
  ImGui::BeginGroup();
  LabelledBar(v.capacity_lines ? float(double(v.lines) / double(v.capacity_lines)) : 0.0f, c);
  ImGui::EndGroup();
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Every head's lines (%lld B each) when this step happens in the GPU's order:\n"
                      "%lld of %lld lines held, %lld dirty.", (long long)line, (long long)v.lines,
                      (long long)v.capacity_lines, (long long)v.dirty_lines);
  std::snprintf(c, sizeof c, "L2 hit rate so far: %.1f%% of the HBM reads (%s)", 100.0 * v.hit_rate,
                fmt_bytes(a, sizeof a, v.hit_total));
  WrappedLine(c);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Head 0's bytes loaded so far that the L2 served, over its HBM bytes read so far");
}

}  // namespace

bool AnchorPending(const AppState& s, course::Anchor a) {
  const CourseState& c = s.course;
  if (!c.active || !c.chapter || c.chapter->pages[size_t(c.page)].scene.anchor != a) return false;
  return c.anchor_version != c.version || c.anchor_frames > 0;
}

float BringAnchorIntoView(AppState& s, course::Anchor a, bool at_start) {
  CourseState& c = s.course;
  if (!c.active || !c.chapter || c.chapter->pages[size_t(c.page)].scene.anchor != a) return 0;
  if (c.anchor_version != c.version) {
    c.anchor_version = c.version;
    c.anchor_frames = 3;
    c.anchor_scrolled = false;
  }
  // The part's first (or last) four lines, against the visible part of the window being drawn.
  const ImRect view = ImGui::GetCurrentWindow()->InnerClipRect;
  const float y = ImGui::GetCursorScreenPos().y, span = 4 * ImGui::GetTextLineHeightWithSpacing();
  const float y0 = at_start ? y : y - span, y1 = at_start ? y + span : y;
  const float outside = std::max(0.0f, view.Min.y - y0) + std::max(0.0f, y1 - view.Max.y);
  if (c.anchor_frames > 0) {
    --c.anchor_frames;
    if (outside > 0) {
      ImGui::SetScrollHereY(at_start ? 0.0f : 1.0f);
      c.anchor_scrolled = true;
    }
  }
  c.anchor_outside_px = outside;
  return outside;
}

void DrawMemoryPanel(AppState& s, const Layout& l) {
  if (s.row) return DrawRowMemoryPanel(s, l);
  if (!BeginPanel("Memory: HBM and SRAM", l.memory_pos, l.memory_size, s)) return;
  const RunView& v = *s.run;
  const Trace& tr = v.trace;
  const Problem& p = tr.problem;
  const Tiling& t = tr.tiling;
  const Schedule sched = v.schedule();
  const ScheduleInfo& info = schedule_info(sched);
  const Step* cur = current_step(s);
  const int bpe = p.bytes_per_elem, out_bpe = dtype_bytes(output_dtype(p.dtype));  // fp8: e4m3 inputs, bf16 O
  const auto slot_bytes = [&](Slot k) { return slot_elem_bytes(k, k == Slot::Oi ? out_bpe : bpe); };
  char a[32], b[32], c[128];
  const ImGuiTableFlags tf = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingStretchProp;

  if (p.dtype == Dtype::fp8) {  // docs/fp8.md
    // Written short where in full it would take more than four lines (font scale 2.5 in a
    // 1024x768 window: eight lines, the whole panel's view, the table under it); the tooltip has it all.
    std::snprintf(c, sizeof c, "HBM: bytes so far (fp8: Q, K, V in e4m3 at 1 B, %s float32 scales s_Q, s_K, s_V; O in bf16 at 2 B)",
                  fp8_scale_name(p.fp8_scale));
    const bool whole = ImGui::CalcTextSize(c).x <= 4 * ImGui::GetContentRegionAvail().x;
    s.memory_header = TextWrappedAtSpaces(whole ? c : "HBM: bytes so far (fp8, 1 B/element)");
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("%s%sA scale is read (4 B) with every Q, K or V tile loaded; l, m and L stay float32.",
                        whole ? "" : c, whole ? "" : "\n");
  } else {
    s.memory_header = TextWrappedF("HBM: bytes so far (%s, %d B/element)", dtype_name(p.dtype), bpe);
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("Q, K, V, O (and S, P in Algorithm 0) are stored in %s; l, m and L stay float32.",
                        dtype_name(p.dtype));
  }
  // The tensors this schedule keeps in HBM, then the ones it never stores there. The
  // backward's tensors follow when it ran: dO, the gradients, D (fa2), dP, dS (standard).
  const std::vector<Tensor>& list = info.hbm_tensors;
  const std::vector<Tensor>& blist = info.backward_hbm_tensors;
  static const std::vector<Tensor> scales = {Tensor::sQ, Tensor::sK, Tensor::sV};  // fp8's
  const size_t n = list.size(), nb = v.backward ? blist.size() : p.dtype == Dtype::fp8 ? scales.size() : 0;
  const auto tensor_at = [&](size_t e) { return e < n ? list[e] : v.backward ? blist[e - n] : scales[e - n]; };
  // core/memory.h's shapes (decode's partials stack S blocks of Nq rows); fp8's scales: one per
  // tensor, or one per Q block (Tr) / K, V block (Tc).
  const auto shape = [&](Tensor tn, bool compact, char* buf, size_t size) {
    const int64_t rows = tn == Tensor::sQ || tn == Tensor::sK || tn == Tensor::sV
                             ? (p.fp8_scale != Fp8Scale::per_block ? 1 : tn == Tensor::sQ ? t.Tr : t.Tc)
                             : tensor_rows(tn, p.nq, p.nk, t.S);
    std::snprintf(buf, size, compact ? "%lldx%lld" : "%lld x %lld", (long long)rows, (long long)tensor_cols(tn, p.nk, p.d));
    return buf;
  };
  // The columns' widths: their widest text, in full and short (byte counts as the run's last
  // step has them: they only grow, so the choice below holds for the whole run). Where the table in full would not fit (presentation mode at 1280 x 720), shapes lose
  // their spaces and byte counts their second decimal; where that does not fit either (decode's
  // 4096x128 beside lse^(s)), the shape column goes (its tensor's tooltip gives the shape). The
  // columns stretch in proportion to these widths, so that each gets at least its own.
  const ImGuiStyle& st = ImGui::GetStyle();
  float name_w = ImGui::CalcTextSize("tensor").x, shape_w[2] = {ImGui::CalcTextSize("shape").x, 0};
  shape_w[1] = shape_w[0];
  for (size_t e = 0; e < n + nb; ++e) {
    const Tensor tn = tensor_at(e);
    name_w = std::max(name_w, ImGui::CalcTextSize(tn == Tensor::L ? "L (lse)" : tensor_name(tn)).x);
    shape_w[0] = std::max(shape_w[0], ImGui::CalcTextSize(shape(tn, false, c, sizeof c)).x);
    shape_w[1] = std::max(shape_w[1], ImGui::CalcTextSize(shape(tn, true, c, sizeof c)).x);
  }
  for (const char* name : info.on_chip_only) {  // their row reads "on chip" in the shape column
    name_w = std::max(name_w, ImGui::CalcTextSize(name).x);
    for (float& w : shape_w) w = std::max(w, ImGui::CalcTextSize("on chip").x);
  }
  // Byte counts in full, short ("2.00 KiB") and tight ("2KiB": fmt_bytes_tight) forms.
  float bytes_w[3] = {ImGui::CalcTextSize("written").x, ImGui::CalcTextSize("written").x, ImGui::CalcTextSize("written").x};
  const Step* last = tr.steps.empty() ? cur : &tr.steps.back();
  for (size_t e = 0; last && e < n + nb; ++e)
    for (const int64_t x : {last->tensor_read[int(tensor_at(e))], last->tensor_written[int(tensor_at(e))]}) {
      bytes_w[0] = std::max(bytes_w[0], ImGui::CalcTextSize(fmt_bytes(a, sizeof a, x)).x);
      bytes_w[1] = std::max(bytes_w[1], ImGui::CalcTextSize(fmt_bytes_short(a, sizeof a, x)).x);
      bytes_w[2] = std::max(bytes_w[2], ImGui::CalcTextSize(fmt_bytes_tight(a, sizeof a, x)).x);
    }
  const float cell = 2 * st.CellPadding.x + 1;  // a column's padding and border
  const auto need = [&](int form, bool with_shape) {
    return name_w + (with_shape ? shape_w[std::min(form, 1)] : 0) + 2 * bytes_w[form] + (with_shape ? 4 : 3) * cell + 2;
  };
  const float room = ImGui::GetContentRegionAvail().x;
  const bool compact = need(0, true) > room;
  const bool with_shape = need(1, true) <= room || !compact;
  // Where not even that fits, the cells' padding narrows to 2 px (io-complexity's "tensor" and
  // "12.0 KiB" at 1024x768 in presentation mode); then the byte counts take their tight form
  // (fp8's and decode's decoding pages at 1024x768 in presentation mode: "lse^(s)" beside
  // "2.00 KiB" scrolled by 7 to 15 px); where that is not enough either, the columns keep their
  // texts' widths and the table scrolls sideways rather than cut a number to "2.00 Mi".
  const float tight_pad = std::min(st.CellPadding.x, 2.0f);
  const bool tight = !with_shape && need(1, false) > room;
  const float pad_saved = 6 * (st.CellPadding.x - tight_pad);
  const bool tight_text = tight && need(1, false) - pad_saved > room;
  const bool hbm_scroll = tight_text && need(2, false) - pad_saved > room;
  const int form = tight_text && !hbm_scroll ? 2 : compact ? 1 : 0;  // scrolling, the short form reads better
  const auto bytes = [&](char* buf, size_t size, int64_t x) {
    return form == 2 ? fmt_bytes_tight(buf, size, x) : form == 1 ? fmt_bytes_short(buf, size, x) : fmt_bytes(buf, size, x);
  };
  // How far the widest cell's text reached past its cell (0: none cut), for the state dump.
  float clip_px = 0;
  const auto cell_text = [&](const char* text, const ImVec4* colour) {
    if (!hbm_scroll) {
      clip_px = std::max(clip_px, TableCellText(text, colour));
      return;
    }
    // Scrolling, a cell is measured against its column's own width, not the part in view.
    const ImGuiTable* table = ImGui::GetCurrentTable();
    const float right = table->Columns[ImGui::TableGetColumnIndex()].WorkMaxX;
    clip_px = std::max(clip_px, ImGui::GetCursorScreenPos().x + ImGui::CalcTextSize(text).x - right);
    if (colour) ImGui::TextColored(*colour, "%s", text);
    else ImGui::TextUnformatted(text);
  };
  const ImVec4 read_col = ImColor(kReadCol), write_col = ImColor(kWriteCol);
  const size_t n_rows = n + nb + info.on_chip_only.size() + 1;  // and the header
  // Scrolling sideways, the table keeps to the part of the panel in view below it (the panel
  // scrolled to its top) and its rows scroll inside it, the tensor names and the header frozen:
  // at font scale 2.5 in a 1024x768 window its whole height put the sideways scrollbar under the
  // panel's bottom edge. It keeps its header and two rows at least.
  const float hbm_row_h = ImGui::GetTextLineHeight() + 2 * st.CellPadding.y + 1;
  const float whole_h = float(n_rows) * hbm_row_h + st.ScrollbarSize + 2;
  const float hbm_h =
      hbm_scroll ? std::min(whole_h, std::max(3 * hbm_row_h + st.ScrollbarSize + 2, VisibleBelowAtTop())) : 0.0f;
  const bool hbm_scroll_y = hbm_scroll && hbm_h < whole_h;
  const ImGuiTableFlags scroll_f = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit |
                                   ImGuiTableFlags_ScrollX | (hbm_scroll_y ? ImGuiTableFlags_ScrollY : 0);
  if (tight) ImGui::PushStyleVar(ImGuiStyleVar_CellPadding, ImVec2(tight_pad, st.CellPadding.y));
  s.memory_table_hidden_px = hbm_scroll ? HiddenBelowAtTop(ImGui::GetCursorScreenPos().y + hbm_h) : 0.0f;
  if (ImGui::BeginTable("hbm", with_shape ? 4 : 3, hbm_scroll ? scroll_f : tf, ImVec2(0, hbm_h))) {
    if (hbm_scroll_y) ImGui::TableSetupScrollFreeze(1, 1);
    const ImGuiTableColumnFlags stretch = hbm_scroll ? ImGuiTableColumnFlags_WidthFixed : ImGuiTableColumnFlags_WidthStretch;
    ImGui::TableSetupColumn("tensor", stretch, name_w);
    if (with_shape) ImGui::TableSetupColumn("shape", stretch, shape_w[compact]);
    ImGui::TableSetupColumn("read", stretch, bytes_w[form]);
    ImGui::TableSetupColumn("written", stretch, bytes_w[form]);
    ImGui::TableHeadersRow();
    for (size_t e = 0; e < n + nb; ++e) {
      const Tensor tn = tensor_at(e);
      ImGui::TableNextRow();
      const int ti = int(tn);
      const int64_t rd = cur ? cur->tensor_read[ti] : 0, wr = cur ? cur->tensor_written[ti] : 0;
      const bool r_now = tensor_read_now(s, tn);
      bool w_now = false;
      if (cur)
        for (const HbmWrite& w : cur->writes) w_now |= w.tensor == tn;
      ImGui::TableNextColumn();
      cell_text(tn == Tensor::L ? "L (lse)" : tensor_name(tn), nullptr);
      if (with_shape) {
        ImGui::TableNextColumn();
        cell_text(shape(tn, compact, c, sizeof c), nullptr);
      } else if (ImGui::IsItemHovered()) {
        ImGui::SetTooltip("%s", shape(tn, false, c, sizeof c));
      }
      ImGui::TableNextColumn();
      cell_text(bytes(a, sizeof a, rd), r_now ? &read_col : nullptr);
      if (form == 2 && ImGui::IsItemHovered()) ImGui::SetTooltip("%lld bytes read", (long long)rd);
      ImGui::TableNextColumn();
      cell_text(bytes(b, sizeof b, wr), w_now ? &write_col : nullptr);
      if (form == 2 && ImGui::IsItemHovered()) ImGui::SetTooltip("%lld bytes written", (long long)wr);
    }
    const ImVec4 dim = ImGui::GetStyle().Colors[ImGuiCol_TextDisabled];
    auto never = [&](const char* name, const char* where) {  // measured as the other cells are
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      cell_text(name, nullptr);
      if (with_shape) {
        ImGui::TableNextColumn();
        cell_text(where, &dim);
      }
      const char* zero = form == 2 ? "0B" : "0 B";  // as the byte counts above it
      ImGui::TableNextColumn();
      cell_text(zero, &dim);
      ImGui::TableNextColumn();
      cell_text(zero, &dim);
    };
    for (const char* name : info.on_chip_only) never(name, "on chip");
    ImGui::EndTable();
  }
  if (tight) ImGui::PopStyleVar();
  s.memory_table_clip_px = clip_px;
  s.memory_table_compact = compact;
  s.memory_table_shape = with_shape;
  s.memory_table_scroll = hbm_scroll;
  s.memory_table_tight_text = form == 2;
  const int64_t rd = cur ? cur->hbm_read_total : 0, wr = cur ? cur->hbm_write_total : 0;
  const int64_t total = tr.totals.hbm_read_bytes + tr.totals.hbm_write_bytes;
  // The share of the run's bytes moved so far, rounded down: rounded to nearest, decode's last
  // steps (the combine's 8 KiB of 4 MiB still to come) read "100%" before the run's end.
  const int64_t moved = rd + wr;
  s.memory_so_far_pct = total == 0 ? 0 : moved >= total ? 100 : int(std::floor(100.0 * double(moved) / double(total)));
  std::snprintf(c, sizeof c, "so far: read %s, written %s (%d%%)", fmt_bytes(a, sizeof a, rd),
                fmt_bytes(b, sizeof b, wr), s.memory_so_far_pct);
  LabelledBar(total ? float(double(rd + wr) / double(total)) : 0.0f, c);
  if (cur) TextWrappedF("this step: read %s, written %s", fmt_bytes(a, sizeof a, cur->hbm_read), fmt_bytes(b, sizeof b, cur->hbm_write));
  else ImGui::TextUnformatted("this step: -");
  if (tr.has_backward) {  // the two passes apart (Trace phases): so far, of each pass's whole
    const Totals& F = tr.forward_totals;
    const Totals& B = tr.backward_totals;
    const int64_t frd = std::min(rd, F.hbm_read_bytes), fwr = std::min(wr, F.hbm_write_bytes);
    char f1[32], f2[32], f3[32], f4[32];
    TextWrappedF("forward:  read %s of %s, written %s of %s", fmt_bytes(a, sizeof a, frd),
                fmt_bytes(f1, sizeof f1, F.hbm_read_bytes), fmt_bytes(b, sizeof b, fwr),
                fmt_bytes(f2, sizeof f2, F.hbm_write_bytes));
    TextWrappedF("backward: read %s of %s, written %s of %s", fmt_bytes(f3, sizeof f3, rd - frd),
                fmt_bytes(a, sizeof a, B.hbm_read_bytes), fmt_bytes(f4, sizeof f4, wr - fwr),
                fmt_bytes(b, sizeof b, B.hbm_write_bytes));
  }
  DrawL2Step(tr, cur);

  // What the loop order does to the schedule's state in HBM (ScheduleInfo::traffic_note): its
  // bytes of state_tensors over the forward against the contrast schedule's (Algorithm 1's
  // round trips against FA2's one write), or against the forward's whole traffic.
  {
    auto state_bytes = [](const Totals& forward, const ScheduleInfo& si) {
      int64_t sum = 0;
      for (Tensor x : si.state_tensors) sum += forward.traffic.read[int(x)] + forward.traffic.written[int(x)];
      return sum;
    };
    const ScheduleRun& own = v.runs[size_t(schedule_column(sched))];
    const ScheduleRun& other = v.runs[size_t(schedule_column(info.contrast))];
    // A trace that holds part of its schedule (RunView::whole_schedule): the note is about the
    // schedule, so core's whole run of it
    const Totals& F = v.whole_schedule ? *v.whole_schedule : own.forward_totals;
    char line[320];
    if (info.contrast != sched && own.ok && other.ok) {
      std::snprintf(line, sizeof line, info.traffic_note, fmt_bytes(a, sizeof a, state_bytes(F, info)),
                    fmt_bytes(b, sizeof b, state_bytes(other.forward_totals, schedule_info(info.contrast))));
      DimText(line);
    } else if (info.contrast == sched) {
      std::snprintf(line, sizeof line, info.traffic_note, fmt_bytes(a, sizeof a, state_bytes(F, info)),
                    fmt_bytes(b, sizeof b, F.hbm_read_bytes + F.hbm_write_bytes));
      DimText(line);
    }
  }

  DrawDecodeTraffic(s);  // decode: what the partials add against fa2 (decode_view.cpp)

  ImGui::Separator();
  BringAnchorIntoView(s, course::Anchor::sram, true);
  // The backward's d-wide tiles are twice the forward's four: its budget is 2M (core/backward.h).
  const bool bwd = cur && is_backward_line(cur->line) && info.tiled;
  const int64_t cap = bwd ? backward_tile_capacity(t) * bpe
                      : p.dtype == Dtype::fp8 ? t.tile_capacity / 4 * (3 * bpe + out_bpe)  // e4m3 Q_i, K_j, V_j; bf16 O_i
                                              : t.tile_capacity * bpe;
  int64_t tiles = 0, scratch = 0;
  if (cur)
    for (int k = 0; k < kSlots; ++k)
      (slot_is_tile(Slot(k)) ? tiles : scratch) += cur->sram_elems[size_t(k)] * slot_bytes(Slot(k));
  if (p.dtype == Dtype::fp8)
    std::snprintf(c, sizeof c, "SRAM: M = %lld elements (Q_i, K_j, V_j e4m3, O_i bf16)", (long long)p.M);
  else
    std::snprintf(c, sizeof c, "SRAM: M = %lld elements = %s", (long long)p.M, fmt_bytes(a, sizeof a, p.M * bpe));
  WrappedLine(c);
  if (!info.tiled)
    std::snprintf(c, sizeof c, "tiles %s; M = %s not enforced in %s", fmt_bytes(a, sizeof a, tiles),
                  fmt_bytes(b, sizeof b, cap),
                  (cur && is_backward_line(cur->line) ? info.backward_lines : info.forward_lines)->short_name);
  else
    std::snprintf(c, sizeof c, "tiles %s of %s%s", fmt_bytes(a, sizeof a, tiles), fmt_bytes(b, sizeof b, cap),
                  bwd ? " (backward: 2M)" : "");
  LabelledBar(cap ? std::min(1.0f, float(double(tiles) / double(cap))) : 0.0f, c);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Q_i, K_j, V_j and O_i are charged to M (a quarter each: Bc = ceil(M/4d)).\n"
                      "The budget is M rounded up to whole tile rows, 4d ceil(M/4d) elements.\n"
                      "Algorithm 0 is not tiled against M: its row blocks of S and P overshoot it.\n"
                      "The backward holds eight d-wide tiles (K_j, V_j, dK~_j, dV~_j, Q_i, O_i, dO_i,\n"
                      "dQ_i) at the same Br, Bc: twice the budget (docs/backward.md).");
  // Resident slots, tiles (charged to M) then on-chip scratch, as compact wrapped lines.
  for (int pass = 0; pass < 2; ++pass) {
    bool any = false;
    ImGui::TextUnformatted(pass == 0 ? "tiles:" : "scratch:");
    if (pass == 1 && ImGui::IsItemHovered())
      ImGui::SetTooltip("Scratch = registers on a GPU, not charged to M; all resident now: %s",
                        fmt_bytes(b, sizeof b, cur ? cur->sram_bytes : 0));
    for (int k = 0; k < kSlots; ++k) {
      const int64_t e = cur ? cur->sram_elems[size_t(k)] : 0;
      if (!e || slot_is_tile(Slot(k)) != (pass == 0)) continue;
      std::snprintf(c, sizeof c, "%s %s", slot_name(Slot(k)), fmt_bytes(a, sizeof a, e * slot_bytes(Slot(k))));
      SameLineIfWidthFits(ImGui::CalcTextSize(c).x);  // else on the next line (LineRoomAfterItem says why not NewLine)
      TextWrappedAtSpaces(c);  // on two lines where wider than the panel ("S_ij 64.00 KiB" at font scale 2.5)
      any = true;
    }
    if (!any) {
      ImGui::SameLine();
      ImGui::TextDisabled("none");
    }
  }

  // The whole run of each schedule on the same inputs, with its closed form.
  ImGui::Separator();
  BringAnchorIntoView(s, course::Anchor::whole_run, true);
  static const std::string all_names = schedule_names(" and ");  // made once: idle frames allocate nothing
  ImGui::PushTextWrapPos(0.0f);  // a narrow panel (1280 pixels) wraps the four names
  ImGui::Text("Whole run: %s (%s)", all_names.c_str(), dtype_name(p.dtype));
  ImGui::PopTextWrapPos();
  const int shown = schedule_column(sched);
  const bool masked = p.mask.any();
  const size_t n_runs = v.runs.size();
  // The table's columns share the panel's width while their texts fit it (measured as they are
  // drawn, for the next frame); where even the short labels and numbers do not (large byte counts
  // with the L2 rows, large text), the columns keep their texts' widths and the table scrolls
  // sideways rather than cut a number.
  constexpr int kMaxCols = 8;
  static float widest[kMaxCols], need_w = 0;
  static int rows_drawn = 0;
  const ImGuiStyle& style = ImGui::GetStyle();
  // Cells a little narrower than the style's: five columns in the right panel.
  const ImVec2 pad(std::min(style.CellPadding.x, 3.0f), style.CellPadding.y);
  const bool scroll = need_w > ImGui::GetContentRegionAvail().x;
  const float row_h = ImGui::GetTextLineHeight() + 2 * style.CellPadding.y;
  // Scrolling sideways, the table is at most the panel's visible height, its rows scrolling inside
  // (the labels and the header frozen): scrolled to, it shows whole with its scrollbar, where at
  // font scale 2.5 in a 1024x768 window its dozen rows were taller than the panel.
  const float vs_whole_h = float(rows_drawn + 1) * row_h + style.ScrollbarSize + 2;
  const float panel_h = ImGui::GetCurrentWindow()->InnerClipRect.GetHeight();
  const float vs_h = scroll ? std::min(vs_whole_h, std::max(3 * row_h + style.ScrollbarSize + 2, panel_h)) : 0.0f;
  const bool vs_scroll_y = scroll && vs_h < vs_whole_h;
  const ImVec2 vs_size(0, vs_h);
  const ImGuiTableFlags vf = scroll ? ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit |
                                          ImGuiTableFlags_ScrollX | (vs_scroll_y ? ImGuiTableFlags_ScrollY : 0)
                                    : tf;
  const int n_cols = std::min(1 + int(n_runs), kMaxCols);
  std::fill(widest, widest + kMaxCols, 0.0f);
  auto track = [&] {  // the last text drawn, at its full width (a cut one too)
    const int col = ImGui::TableGetColumnIndex();
    if (col >= 0 && col < kMaxCols) widest[col] = std::max(widest[col], ImGui::GetItemRectSize().x);
  };
  ImGui::PushStyleVar(ImGuiStyleVar_CellPadding, pad);
  s.whole_run_scroll = scroll;
  s.whole_run_hidden_px = scroll ? vs_h - panel_h : 0.0f;
  // A scrolling table wholly out of the panel's view is not drawn (BeginTable returns false).
  if (ImGui::BeginTable("vs", n_cols, vf, vs_size)) {
    rows_drawn = 0;  // counted as drawn; kept from the last frame that drew them where not drawn
    if (vs_scroll_y) ImGui::TableSetupScrollFreeze(1, 1);
    ImGui::TableSetupColumn("same inputs");
    for (const ScheduleInfo* si : schedules()) ImGui::TableSetupColumn(si->name);
    ImGui::TableHeadersRow();
    widest[0] = ImGui::CalcTextSize("same inputs").x;
    for (int k = 1; k < n_cols; ++k) widest[k] = ImGui::CalcTextSize(schedules()[size_t(k - 1)]->name).x;
    const ImU32 shown_bg = kShownCol;
    auto label = [&](const char* name, const char* tip) {
      ImGui::TableNextRow();
      ImGui::TableSetBgColor(ImGuiTableBgTarget_CellBg, shown_bg, 1 + shown);
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(name);
      track();
      ++rows_drawn;
      if (tip && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tip);
    };
    auto bytes_row = [&](const char* name, int64_t (*get)(const ScheduleRun&), const char* tip = nullptr) {
      label(name, tip);
      for (const ScheduleRun& r : v.runs) {
        ImGui::TableNextColumn();
        if (!r.ok) ImGui::TextDisabled("n/a");
        else ImGui::TextUnformatted(fmt_bytes3(a, sizeof a, get(r)));
        track();
      }
    };
    // The closed form under the simulated count: green when equal, amber with "<" when a mask
    // makes the form an upper bound the run stays under (skipped blocks move nothing), red with
    // "!=" otherwise.
    auto form_row = [&](const char* name, bool read, bool bwd) {
      label(name, "The unmasked closed form (core/closed_form.h) at the stored size.\n"
                  "Green: the simulation equals it. Amber (<): less, because masked blocks are skipped.\n"
                  "Red (!=): the simulation and the form disagree.");
      for (const ScheduleRun& r : v.runs) {
        ImGui::TableNextColumn();
        if (!r.ok) {
          ImGui::TextDisabled("n/a");
          track();
          continue;
        }
        const TrafficForm& f = bwd ? r.backward_form : r.form;
        const Totals& tt = bwd ? r.backward_totals : r.forward_totals;
        const int64_t form = bwd ? (read ? f.read_bytes(bpe) : f.write_bytes(bpe))
                                 : read ? f.read_bytes(bpe, out_bpe) : f.write_bytes(bpe, out_bpe);
        const int64_t sim = read ? tt.hbm_read_bytes : tt.hbm_write_bytes;
        const ImVec4 col = form == sim ? kPassText : masked && sim < form ? kBoundText : kErrorText;
        // Equal needs no sign (green, and the label's tooltip says so); the others keep theirs.
        ImGui::TextColored(col, "%s%s", form == sim ? "" : masked && sim < form ? "<" : "!=", fmt_bytes3(a, sizeof a, form));
        track();
      }
    };
    // Row labels are kept short (a tooltip says the rest) and bytes have three digits: with four
    // schedules beside them the table fits the right column at 1600 pixels without cutting a number.
    const char* fwd = v.backward ? "fwd read" : "HBM read";
    bytes_row(fwd, [](const ScheduleRun& r) { return r.forward_totals.hbm_read_bytes; }, "HBM bytes read by the forward pass");
    form_row("  closed form", true, false);
    bytes_row(v.backward ? "fwd written" : "HBM written", [](const ScheduleRun& r) { return r.forward_totals.hbm_write_bytes; },
              "HBM bytes written by the forward pass");
    form_row("  closed form", false, false);
    if (v.backward) {
      bytes_row("bwd read", [](const ScheduleRun& r) { return r.backward_totals.hbm_read_bytes; }, "HBM bytes read by the backward pass");
      form_row("  closed form", true, true);
      bytes_row("bwd written", [](const ScheduleRun& r) { return r.backward_totals.hbm_write_bytes; },
                "HBM bytes written by the backward pass");
      form_row("  closed form", false, true);
      bytes_row("fwd+bwd R+W", [](const ScheduleRun& r) { return r.totals.hbm_read_bytes + r.totals.hbm_write_bytes; },
                "Forward + backward HBM bytes read and written, simulated");
    }
    if (v.l2) {  // the L2 model's DRAM bytes, and a measurement's (l2_view.h)
      const DramMeasurements* m = s.dram.loaded ? &s.dram.data : nullptr;
      static std::vector<DramColumn> cols;  // grows once, then reused: idle frames allocate nothing
      cols.resize(n_runs);
      for (size_t k = 0; k < n_runs; ++k) cols[k] = dram_column(v.runs[k].totals, v.runs[k].schedule, p, m);
      auto dram_row = [&](const char* name, const char* tip, auto get) {
        label(name, tip);
        for (size_t k = 0; k < n_runs; ++k) {
          ImGui::TableNextColumn();
          const int64_t x = v.runs[k].ok ? get(cols[k]) : -1;
          if (x < 0) ImGui::TextDisabled(v.runs[k].ok ? "-" : "n/a");
          else ImGui::TextUnformatted(fmt_bytes3(a, sizeof a, x));
          track();
        }
      };
      const int64_t H = v.l2->heads;
      dram_row("DRAM read", "Between the L2 and DRAM, with the L2 model (head 0)", [](const DramColumn& d) { return d.read; });
      dram_row("DRAM written", "Including the dirty lines written back at the end", [](const DramColumn& d) { return d.write; });
      if (H > 1) {
        std::snprintf(c, sizeof c, "H=%lld read", (long long)H);
        dram_row(c, "Every head's DRAM bytes read: the figure to compare with a measurement", [](const DramColumn& d) { return d.all_heads_read; });
        std::snprintf(c, sizeof c, "H=%lld written", (long long)H);
        dram_row(c, "Every head's DRAM bytes written", [](const DramColumn& d) { return d.all_heads_write; });
      }
      if (v.l2->ncu) {
        const char* tip = "Every head, counted as Nsight Compute does: the L2 emptied before each kernel,\n"
                          "dirty lines a kernel leaves behind not counted (docs/l2-model.md)";
        dram_row("ncu read", tip, [](const DramColumn& d) { return d.ncu_read; });
        dram_row("ncu written", tip, [](const DramColumn& d) { return d.ncu_write; });
      }
      if (m) {
        const char* tip = "Measured with Nsight Compute (the loaded file), every head; '-': no point for this\n"
                          "problem (Nq = Nk, d, M, dtype), heads and GPU in the file";
        dram_row("meas. read", tip, [](const DramColumn& d) { return d.measured ? int64_t(d.measured->read_bytes) : -1; });
        dram_row("meas. written", tip, [](const DramColumn& d) { return d.measured ? int64_t(d.measured->write_bytes) : -1; });
      }
    }
    // The paper's Figure 2 (left): forward + backward HBM reads and writes, from the closed
    // forms, so the row is there also when the backward did not run (the gpt2-medium preset).
    label("fwd+bwd form", "Forward + backward HBM bytes read and written, from the closed forms\n"
                               "(core/closed_form.h; unmasked), as in the paper's Figure 2 (left),\n"
                               "for one head: 40.3 GB against 4.4 GB there for the whole batch.");
    for (const ScheduleRun& r : v.runs) {
      ImGui::TableNextColumn();
      const int64_t bytes = fwd_bwd_form_bytes(r, p.dtype);
      if (bytes < 0) ImGui::TextDisabled("n/a");  // no backward in this type: nothing to add up
      else ImGui::TextUnformatted(fmt_bytes3(a, sizeof a, bytes));
      track();
    }
    label("FLOPs", "Floating-point operations of the whole run (k = 10^3, M = 10^6, G = 10^9, T = 10^12)");
    for (const ScheduleRun& r : v.runs) {
      ImGui::TableNextColumn();
      // A saved trace with no FLOPs (a puzzle's: the student's NumPy is not counted): not 0 FLOPs.
      const bool uncounted = v.from_file && r.schedule == v.schedule() && r.totals.flops == 0;
      if (r.ok && !uncounted) ImGui::TextUnformatted(fmt_si(a, sizeof a, double(r.totals.flops)));
      else ImGui::TextDisabled(r.ok ? "-" : "n/a");
      if (uncounted && ImGui::IsItemHovered()) ImGui::SetTooltip("This trace counts no FLOPs (a puzzle's NumPy is not counted)");
      track();
    }
    bytes_row("peak on chip", [](const ScheduleRun& r) { return r.totals.peak_sram_bytes; },
              "The most bytes on chip at once: tiles and scratch");
    const ScheduleRun& st = v.runs[size_t(schedule_column(baseline_schedule().id))];
    const int64_t st_total = st.totals.hbm_read_bytes + st.totals.hbm_write_bytes;
    label("vs standard", "This schedule's HBM bytes over standard attention's: below 1x, tiling pays");
    for (const ScheduleRun& r : v.runs) {
      ImGui::TableNextColumn();
      if (r.ok && st.ok && st_total > 0)
        ImGui::Text("%.2fx", double(r.totals.hbm_read_bytes + r.totals.hbm_write_bytes) / double(st_total));
      else ImGui::TextDisabled("n/a");
      track();
    }
    label("O error", "max |O - O_ref| / max |O_ref| against the float64 reference on the\n"
                             "original float32 inputs (same mask and dropout). In fp16 or bf16 every\n"
                             "schedule rounds Q, K, V and O on store; standard attention also S and P.");
    for (const ScheduleRun& r : v.runs) {
      ImGui::TableNextColumn();
      if (r.have_error) ImGui::Text("%.2e", r.o_err.max_rel);  // three digits: "6.41e-08" fits its column
      else ImGui::TextDisabled(r.ok ? "-" : "n/a");  // "-": ran, no reference (too large); n/a: no run
      track();
    }
    // A course page about O's error shows this row where the table's rows scroll.
    if (vs_scroll_y && AnchorPending(s, course::Anchor::o_error)) ImGui::SetScrollHereY(1.0f);
    ImGui::EndTable();
    need_w = 0;
    for (int k = 0; k < n_cols; ++k) need_w += widest[k] + 2 * pad.x + 1;  // and a border
  }
  ImGui::PopStyleVar();
  BringAnchorIntoView(s, course::Anchor::o_error, false);  // the table's last row, O's error
  const ScheduleInfo& base = baseline_schedule();
  const ScheduleRun& r0 = v.runs[size_t(schedule_column(base.id))];
  if (masked && v.skipped_tiles) {
    std::snprintf(c, sizeof c, "%lld of %lld tiles", (long long)v.skipped_tiles, (long long)(t.Tr * t.Tc));
    static const std::string tiled = [] {  // "fa1 and fa2", made once
      std::string names;
      for (const ScheduleInfo* si : schedules())
        if (si->tiled) names += std::string(names.empty() ? "" : " and ") + si->name;
      return names;
    }();
    char line[400];
    std::snprintf(line, sizeof line,
                  "Masked: the closed forms are upper bounds. %s skip %s (no loads, no "
                  "FLOPs); %s computes every entry.", tiled.c_str(), c, base.device_title);
    DimText(line);
  }
  // Against the first schedule (Algorithm 1): where the baseline moves fewer bytes, tiling does not pay.
  const ScheduleInfo& first = *schedules().front();
  const ScheduleRun& r1 = v.runs[0];
  bool all_ok = true;
  for (const ScheduleRun& r : v.runs) all_ok = all_ok && r.ok;
  if (all_ok && r0.totals.hbm_read_bytes + r0.totals.hbm_write_bytes < r1.totals.hbm_read_bytes + r1.totals.hbm_write_bytes) {
    char line[200];
    std::snprintf(line, sizeof line, "N is too small here for tiling to pay: %s moves fewer bytes than %s.",
                  base.device_title, first.name);
    DimText(line);
  }
  for (const ScheduleRun& r : v.runs)
    if (r.not_applicable) DimText(r.error.c_str());
    else if (!r.ok) ErrorText(r.error);
  if (!v.reference_note.empty()) DimText(v.reference_note.c_str());

  // A measurement to set beside the model: the JSON tools/device/ncu_dram.sh writes.
  ImGui::Separator();
  // The web page adds "Open..." after Load: the file from the user's computer.
  const char* kOpen = "Open...###dram_open";
  // The buttons beside the path where it keeps four characters' width, else under it, and
  // "Load" where even "Load measured" is wider than the panel (at font scale 2.5 in a 1024x768
  // window it ran 50 px past the panel's edge).
  const char* kLoad = "Load measured###dram_load";
  const float gap = ImGui::GetStyle().ItemSpacing.x;
  const float open_w = s.pick_local_file ? ButtonWidth(kOpen) + gap : 0.0f;
  const float buttons_w = ButtonWidth(kLoad) + gap + open_w;
  const bool beside = ImGui::GetContentRegionAvail().x - buttons_w >= 4 * ImGui::GetFontSize();
  ImGui::SetNextItemWidth(beside ? -buttons_w : -FLT_MIN);
  ImGui::InputText("##dram", s.dram.path, sizeof s.dram.path);
  if (beside) ImGui::SameLine();
  if (ImGui::Button(beside ? kLoad : FitButton({kLoad, "Load###dram_load"}))) s.load_dram();
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Nsight Compute's DRAM bytes, as tools/device/ncu_dram.sh writes them (flashstep gui --dram F.json)");
  if (s.pick_local_file) {
    SameLineIfButtonFits(kOpen);
    if (ImGui::Button(kOpen)) s.pick_local_file(LocalFile::dram);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("A measurement file from this computer (tools/device/ncu_dram.sh's JSON)");
  }
  if (!s.dram.error.empty()) ErrorText(s.dram.error);
  else if (s.dram.loaded) {
    std::snprintf(c, sizeof c, "%zu measured points (%s)%s", s.dram.data.points.size(), s.dram.data.gpu.c_str(),
                  v.l2 ? "" : "; the rows need the L2 model on (heads, GPU)");
    DimText(c);
  }
  s.memory_overflow_px = PanelOverflowPx();
  ImGui::End();
}

}  // namespace flashstep::gui
