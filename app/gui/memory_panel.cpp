// The memory panel: HBM bytes per tensor so far, SRAM occupancy at this step, and the whole run
// of every schedule (fa1, fa2, standard) on the same inputs beside its closed form.
#include "app/gui/panels.h"
#include "app/gui/widgets.h"

#include <algorithm>
#include <cstdio>

namespace flashstep::gui {

void DrawMemoryPanel(AppState& s, const Layout& l) {
  if (!BeginPanel("Memory: HBM and SRAM", l.memory_pos, l.memory_size, s)) return;
  const RunView& v = *s.run;
  const Trace& tr = v.trace;
  const Problem& p = tr.problem;
  const Tiling& t = tr.tiling;
  const Schedule sched = v.schedule();
  const Step* cur = current_step(s);
  const int bpe = p.bytes_per_elem;
  char a[32], b[32], c[128];
  const ImGuiTableFlags tf = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingStretchProp;

  ImGui::Text("HBM: bytes so far (%s, %d B/element)", dtype_name(p.dtype), bpe);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Q, K, V, O (and S, P in Algorithm 0) are stored in %s; l, m and L stay float32.",
                      dtype_name(p.dtype));
  if (ImGui::BeginTable("hbm", 4, tf)) {
    ImGui::TableSetupColumn("tensor");
    ImGui::TableSetupColumn("shape");
    ImGui::TableSetupColumn("read");
    ImGui::TableSetupColumn("written");
    ImGui::TableHeadersRow();
    // The tensors this schedule keeps in HBM, then the ones it never stores there.
    static const Tensor kFa1[] = {Tensor::Q, Tensor::K, Tensor::V, Tensor::O, Tensor::l, Tensor::m};
    static const Tensor kFa2[] = {Tensor::Q, Tensor::K, Tensor::V, Tensor::O, Tensor::L};
    static const Tensor kStd[] = {Tensor::Q, Tensor::K, Tensor::V, Tensor::S, Tensor::P, Tensor::O};
    const Tensor* list = sched == Schedule::fa1 ? kFa1 : sched == Schedule::fa2 ? kFa2 : kStd;
    const int n = sched == Schedule::fa1 ? 6 : sched == Schedule::fa2 ? 5 : 6;
    for (int e = 0; e < n; ++e) {
      const Tensor tn = list[e];
      ImGui::TableNextRow();
      const int ti = int(tn);
      const int64_t rd = cur ? cur->tensor_read[ti] : 0, wr = cur ? cur->tensor_written[ti] : 0;
      const bool r_now = tensor_read_now(s, tn);
      bool w_now = false;
      if (cur)
        for (const HbmWrite& w : cur->writes) w_now |= w.tensor == tn;
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(tn == Tensor::L ? "L (lse)" : tensor_name(tn));
      ImGui::TableNextColumn();
      const int64_t rows = (tn == Tensor::K || tn == Tensor::V) ? p.nk : p.nq;
      const int64_t cols = (tn == Tensor::l || tn == Tensor::m || tn == Tensor::L) ? 1
                           : (tn == Tensor::S || tn == Tensor::P)                  ? p.nk
                                                                                   : p.d;
      ImGui::Text("%lld x %lld", (long long)rows, (long long)cols);
      ImGui::TableNextColumn();
      if (r_now) ImGui::TextColored(ImColor(kReadCol), "%s", fmt_bytes(a, sizeof a, rd));
      else ImGui::TextUnformatted(fmt_bytes(a, sizeof a, rd));
      ImGui::TableNextColumn();
      if (w_now) ImGui::TextColored(ImColor(kWriteCol), "%s", fmt_bytes(b, sizeof b, wr));
      else ImGui::TextUnformatted(fmt_bytes(b, sizeof b, wr));
    }
    auto never = [&](const char* name, const char* where) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(name);
      ImGui::TableNextColumn();
      ImGui::TextDisabled("%s", where);
      ImGui::TableNextColumn();
      ImGui::TextDisabled("0 B");
      ImGui::TableNextColumn();
      ImGui::TextDisabled("0 B");
    };
    if (sched == Schedule::fa2) never("l, m", "on chip");
    if (sched != Schedule::standard) never("S, P", "on chip");
    ImGui::EndTable();
  }
  const int64_t rd = cur ? cur->hbm_read_total : 0, wr = cur ? cur->hbm_write_total : 0;
  const int64_t total = tr.totals.hbm_read_bytes + tr.totals.hbm_write_bytes;
  std::snprintf(c, sizeof c, "so far: read %s, written %s (%.0f%%)", fmt_bytes(a, sizeof a, rd),
                fmt_bytes(b, sizeof b, wr), total ? 100.0 * double(rd + wr) / double(total) : 0.0);
  ImGui::ProgressBar(total ? float(double(rd + wr) / double(total)) : 0.0f, ImVec2(-1, 0), c);
  if (cur) ImGui::Text("this step: read %s, written %s", fmt_bytes(a, sizeof a, cur->hbm_read), fmt_bytes(b, sizeof b, cur->hbm_write));
  else ImGui::TextUnformatted("this step: -");

  // What the loop order does to O, l, m: Algorithm 1's round trips against FA2's one write.
  const ScheduleRun& r1 = v.runs[schedule_column(Schedule::fa1)];
  const ScheduleRun& r2 = v.runs[schedule_column(Schedule::fa2)];
  if (r1.ok && r2.ok && sched != Schedule::standard) {
    const Traffic& f1 = r1.totals.traffic;
    const Traffic& f2 = r2.totals.traffic;
    const int O = int(Tensor::O), lt = int(Tensor::l), mt = int(Tensor::m), Lt = int(Tensor::L);
    const int64_t olm1 = f1.read[O] + f1.read[lt] + f1.read[mt] + f1.written[O] + f1.written[lt] + f1.written[mt];
    const int64_t o2 = f2.read[O] + f2.written[O] + f2.read[Lt] + f2.written[Lt];
    char line[320];
    if (sched == Schedule::fa2)
      std::snprintf(line, sizeof line,
                    "No round trips: O_i, l_i, m_i stay on chip; O and L are written once (%s). "
                    "Algorithm 1 moves O, l, m to HBM and back at every (i, j): %s.",
                    fmt_bytes(a, sizeof a, o2), fmt_bytes(b, sizeof b, olm1));
    else
      std::snprintf(line, sizeof line,
                    "O_i, l_i, m_i go to HBM and back at every (i, j): %s over the run. "
                    "FlashAttention-2 keeps them on chip and writes only O and L once (%s).",
                    fmt_bytes(a, sizeof a, olm1), fmt_bytes(b, sizeof b, o2));
    DimText(line);
  } else if (sched == Schedule::standard) {
    const Traffic& f0 = tr.totals.traffic;
    const int S = int(Tensor::S), P = int(Tensor::P);
    char line[200];
    std::snprintf(line, sizeof line, "S and P (Nq x Nk each) go to HBM and back: %s of the run's %s.",
                  fmt_bytes(a, sizeof a, f0.read[S] + f0.written[S] + f0.read[P] + f0.written[P]),
                  fmt_bytes(b, sizeof b, total));
    DimText(line);
  }

  ImGui::Separator();
  const int64_t cap = t.tile_capacity * bpe;
  int64_t tiles = 0, scratch = 0;
  if (cur)
    for (int k = 0; k < kSlots; ++k)
      (slot_is_tile(Slot(k)) ? tiles : scratch) += cur->sram_elems[size_t(k)] * slot_elem_bytes(Slot(k), bpe);
  ImGui::Text("SRAM: M = %lld elements = %s", (long long)p.M, fmt_bytes(a, sizeof a, p.M * bpe));
  if (sched == Schedule::standard)
    std::snprintf(c, sizeof c, "tiles %s; M = %s not enforced in Alg 0", fmt_bytes(a, sizeof a, tiles), fmt_bytes(b, sizeof b, cap));
  else
    std::snprintf(c, sizeof c, "tiles %s of %s", fmt_bytes(a, sizeof a, tiles), fmt_bytes(b, sizeof b, cap));
  ImGui::ProgressBar(cap ? std::min(1.0f, float(double(tiles) / double(cap))) : 0.0f, ImVec2(-1, 0), c);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Q_i, K_j, V_j and O_i are charged to M (a quarter each: Bc = ceil(M/4d)).\n"
                      "The budget is M rounded up to whole tile rows, 4d ceil(M/4d) elements.\n"
                      "Algorithm 0 is not tiled against M: its row blocks of S and P overshoot it.");
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
      std::snprintf(c, sizeof c, "%s %s", slot_name(Slot(k)), fmt_bytes(a, sizeof a, e * slot_elem_bytes(Slot(k), bpe)));
      const float w = ImGui::CalcTextSize(c).x;
      ImGui::SameLine();
      if (ImGui::GetContentRegionAvail().x < w) ImGui::NewLine();
      ImGui::TextUnformatted(c);
      any = true;
    }
    if (!any) {
      ImGui::SameLine();
      ImGui::TextDisabled("none");
    }
  }

  // The whole run of each schedule on the same inputs, with its closed form.
  ImGui::Separator();
  ImGui::Text("Whole run: fa1, fa2 and standard (%s)", dtype_name(p.dtype));
  const int shown = schedule_column(sched);
  const bool masked = p.mask.any();
  if (ImGui::BeginTable("vs", 4, tf)) {
    ImGui::TableSetupColumn("same inputs");
    ImGui::TableSetupColumn("fa1");
    ImGui::TableSetupColumn("fa2");
    ImGui::TableSetupColumn("standard");
    ImGui::TableHeadersRow();
    const ImU32 shown_bg = IM_COL32(45, 60, 105, 255);
    auto label = [&](const char* name, const char* tip) {
      ImGui::TableNextRow();
      ImGui::TableSetBgColor(ImGuiTableBgTarget_CellBg, shown_bg, 1 + shown);
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(name);
      if (tip && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tip);
    };
    auto bytes_row = [&](const char* name, int64_t (*get)(const ScheduleRun&)) {
      label(name, nullptr);
      for (const ScheduleRun& r : v.runs) {
        ImGui::TableNextColumn();
        if (!r.ok) ImGui::TextDisabled("n/a");
        else ImGui::TextUnformatted(fmt_bytes(a, sizeof a, get(r)));
      }
    };
    // The closed form beside the simulated count: green when equal, amber when a mask makes the
    // form an upper bound (skipped blocks move nothing), red otherwise.
    auto form_row = [&](const char* name, bool read) {
      label(name, "The unmasked closed form (core/closed_form.h) at the stored size.\n"
                  "Green: the simulation equals it. Amber: less, because masked blocks are skipped.");
      for (const ScheduleRun& r : v.runs) {
        ImGui::TableNextColumn();
        if (!r.ok) {
          ImGui::TextDisabled("n/a");
          continue;
        }
        const int64_t form = read ? r.form.read_bytes(bpe) : r.form.write_bytes(bpe);
        const int64_t sim = read ? r.totals.hbm_read_bytes : r.totals.hbm_write_bytes;
        const ImVec4 col = form == sim ? kPassText : masked && sim < form ? kBoundText : kErrorText;
        ImGui::TextColored(col, "%s%s", form == sim ? "= " : masked && sim < form ? "<= " : "!= ",
                           fmt_bytes(a, sizeof a, form));
      }
    };
    bytes_row("HBM read", [](const ScheduleRun& r) { return r.totals.hbm_read_bytes; });
    form_row("  closed form", true);
    bytes_row("HBM written", [](const ScheduleRun& r) { return r.totals.hbm_write_bytes; });
    form_row("  closed form", false);
    label("FLOPs", nullptr);
    for (const ScheduleRun& r : v.runs) {
      ImGui::TableNextColumn();
      if (r.ok) ImGui::Text("%.3g", double(r.totals.flops));
      else ImGui::TextDisabled("n/a");
    }
    bytes_row("peak on chip", [](const ScheduleRun& r) { return r.totals.peak_sram_bytes; });
    const ScheduleRun& st = v.runs[schedule_column(Schedule::standard)];
    const int64_t st_total = st.totals.hbm_read_bytes + st.totals.hbm_write_bytes;
    label("HBM / standard", "This schedule's HBM bytes over standard attention's: below 1x, tiling pays");
    for (const ScheduleRun& r : v.runs) {
      ImGui::TableNextColumn();
      if (r.ok && st.ok && st_total > 0)
        ImGui::Text("%.2fx", double(r.totals.hbm_read_bytes + r.totals.hbm_write_bytes) / double(st_total));
      else ImGui::TextDisabled("n/a");
    }
    label("O error vs fp64", "max |O - O_ref| / max |O_ref| against the float64 reference on the\n"
                             "original float32 inputs (same mask and dropout). In fp16 or bf16 every\n"
                             "schedule rounds Q, K, V and O on store; standard attention also S and P.");
    for (const ScheduleRun& r : v.runs) {
      ImGui::TableNextColumn();
      if (r.have_error) ImGui::TextUnformatted(fmt_g(a, sizeof a, r.o_err.max_rel));
      else ImGui::TextDisabled("-");
    }
    ImGui::EndTable();
  }
  const ScheduleRun& r0 = v.runs[schedule_column(Schedule::standard)];
  if (masked && v.skipped_tiles) {
    std::snprintf(c, sizeof c, "%lld of %lld tiles", (long long)v.skipped_tiles, (long long)(t.Tr * t.Tc));
    char line[400];
    std::snprintf(line, sizeof line,
                  "Masked: the closed forms are upper bounds. fa1 and fa2 skip %s (no loads, no "
                  "FLOPs); standard attention computes every entry.", c);
    DimText(line);
  }
  if (r0.ok && r1.ok && r2.ok &&
      r0.totals.hbm_read_bytes + r0.totals.hbm_write_bytes < r1.totals.hbm_read_bytes + r1.totals.hbm_write_bytes)
    DimText("N is too small here for tiling to pay: standard attention moves fewer bytes than fa1.");
  for (const ScheduleRun& r : v.runs)
    if (!r.ok) ErrorText(r.error);
  if (!v.reference_note.empty()) DimText(v.reference_note.c_str());
  ImGui::End();
}

}  // namespace flashstep::gui
