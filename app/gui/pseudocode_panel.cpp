// The pseudocode panel: the shown schedule's algorithm (fa1's Algorithm 1, FlashAttention-2, or
// Algorithm 0) with the current line lit, the loop variables, and core's sentence for the step.
#include "app/gui/panels.h"
#include "app/gui/widgets.h"

#include <iterator>

namespace flashstep::gui {

namespace {

struct PseudoLine {
  int number, indent;
  const char* text;  // nullptr: the recorded line's text from core (line_pseudocode)
  Line line;
};

const PseudoLine kAlgorithm1[] = {
    {1, 0, "Set block sizes Bc = ceil(M/4d), Br = min(ceil(M/4d), d).", Line::A1_L2},
    {2, 0, nullptr, Line::A1_L2},
    {3, 0, "Divide Q into Tr = ceil(Nq/Br) blocks Q_i of Br x d, and K, V into Tc = ceil(Nk/Bc) blocks K_j, V_j of Bc x d.", Line::A1_L2},
    {4, 0, "Divide O into Tr blocks O_i (Br x d), l and m into Tr blocks l_i, m_i (Br each).", Line::A1_L2},
    {5, 0, "for 1 <= j <= Tc do", Line::A1_L2},
    {6, 1, nullptr, Line::A1_L6},
    {7, 1, "for 1 <= i <= Tr do", Line::A1_SKIP},
    {8, 2, nullptr, Line::A1_L8},
    {9, 2, nullptr, Line::A1_L9},
    {10, 2, nullptr, Line::A1_L10},
    {11, 2, nullptr, Line::A1_L11},
    {12, 2, nullptr, Line::A1_L12},
    {13, 2, nullptr, Line::A1_L13},
    {14, 1, "end for", Line::A1_L2},
    {15, 0, "end for", Line::A1_L2},
    {16, 0, "Return O.", Line::A1_L2},
};

// FlashAttention-2's forward pass (Dao 2023, Algorithm 1).
const PseudoLine kFlash2[] = {
    {1, 0, "Divide Q into Tr = ceil(Nq/Br) blocks Q_i of Br x d, and K, V into Tc = ceil(Nk/Bc) blocks K_j, V_j of Bc x d.", Line::A2_L4},
    {2, 0, "Divide O into Tr blocks O_i of Br x d, and the logsumexp L into Tr blocks L_i of Br.", Line::A2_L4},
    {3, 0, "for 1 <= i <= Tr do", Line::A2_L4},
    {4, 1, nullptr, Line::A2_L4},
    {5, 1, nullptr, Line::A2_L5},
    {6, 1, "for 1 <= j <= Tc do", Line::A2_SKIP},
    {7, 2, nullptr, Line::A2_L7},
    {8, 2, nullptr, Line::A2_L8},
    {9, 2, nullptr, Line::A2_L9},
    {10, 2, nullptr, Line::A2_L10},
    {11, 1, "end for", Line::A2_L4},
    {12, 1, nullptr, Line::A2_L12},
    {13, 1, nullptr, Line::A2_L13},
    {14, 1, nullptr, Line::A2_L14},
    {15, 1, nullptr, Line::A2_L15},
    {16, 0, "end for", Line::A2_L4},
    {17, 0, "Return the output O and the logsumexp L.", Line::A2_L4},
};

// Algorithm 0 (standard attention), as in Dao et al. 2022.
const PseudoLine kAlgorithm0[] = {
    {0, 0, "Require: matrices Q, K, V in HBM.", Line::A0_L1},
    {1, 0, nullptr, Line::A0_L1},
    {2, 0, nullptr, Line::A0_L2},
    {3, 0, nullptr, Line::A0_L3},
    {4, 0, "Return O.", Line::A0_L1},
};

// The backward passes, numbered as core numbers them (core/trace_backward.cpp); the recorded
// lines take their text from core.
const PseudoLine kAlgorithm4[] = {
    {1, 0, "Require: Q, K, V, O, dO in HBM (Nq x d, Nk x d), l, m in HBM, SRAM of size M, tau, MASK, p_drop.", Line::A4_L5},
    {2, 0, "Set the pseudo-random number generator state R as in the forward pass.", Line::A4_L5},
    {3, 0, "Set block sizes Bc = ceil(M/4d), Br = min(ceil(M/4d), d).", Line::A4_L5},
    {4, 0, "Divide Q, O, dO into Tr blocks of Br x d, l, m into Tr blocks; K, V into Tc blocks of Bc x d.", Line::A4_L5},
    {5, 0, nullptr, Line::A4_L5},
    {6, 0, "for 1 <= j <= Tc do", Line::A4_L5},
    {7, 1, nullptr, Line::A4_L7},
    {8, 1, nullptr, Line::A4_L8},
    {9, 1, "for 1 <= i <= Tr do", Line::A4_SKIP},
    {10, 2, nullptr, Line::A4_L10},
    {11, 2, nullptr, Line::A4_L11},
    {12, 2, nullptr, Line::A4_L12},
    {13, 2, nullptr, Line::A4_L13},
    {14, 2, nullptr, Line::A4_L14},
    {16, 2, nullptr, Line::A4_L16},
    {17, 2, nullptr, Line::A4_L17},
    {18, 2, nullptr, Line::A4_L18},
    {19, 2, nullptr, Line::A4_L19},
    {20, 2, nullptr, Line::A4_L20},
    {21, 2, nullptr, Line::A4_L21},
    {22, 2, nullptr, Line::A4_L22},
    {23, 1, "end for", Line::A4_L5},
    {24, 1, nullptr, Line::A4_L24},
    {25, 0, "end for", Line::A4_L5},
    {26, 0, "Return dQ, dK, dV.", Line::A4_L5},
};

// FlashAttention-2's backward pass (Dao 2023, Algorithm 2).
const PseudoLine kFlash2Backward[] = {
    {1, 0, "Require: Q, K, V, O, dO in HBM, the logsumexp L in HBM, block sizes Bc, Br.", Line::B2_L3},
    {2, 0, "Divide Q, O, dO, dQ into Tr blocks of Br x d, L, D into Tr blocks; K, V, dK, dV into Tc blocks of Bc x d.", Line::B2_L3},
    {3, 0, nullptr, Line::B2_L3},
    {4, 0, nullptr, Line::B2_L4},
    {5, 0, "for 1 <= j <= Tc do", Line::B2_L3},
    {6, 1, nullptr, Line::B2_L6},
    {7, 1, nullptr, Line::B2_L7},
    {8, 1, "for 1 <= i <= Tr do", Line::B2_SKIP},
    {9, 2, nullptr, Line::B2_L9},
    {10, 2, nullptr, Line::B2_L10},
    {11, 2, nullptr, Line::B2_L11},
    {12, 2, nullptr, Line::B2_L12},
    {13, 2, nullptr, Line::B2_L13},
    {14, 2, nullptr, Line::B2_L14},
    {15, 2, nullptr, Line::B2_L15},
    {16, 2, nullptr, Line::B2_L16},
    {17, 1, "end for", Line::B2_L3},
    {18, 1, nullptr, Line::B2_L18},
    {19, 0, "end for", Line::B2_L3},
    {20, 0, "Return dQ, dK, dV.", Line::B2_L3},
};

// Algorithm 3 (standard attention's backward pass), as in Dao et al. 2022.
const PseudoLine kAlgorithm3[] = {
    {0, 0, "Require: Q, K, V, dO (Nq x d, Nk x d) and P (Nq x Nk) in HBM.", Line::A3_L1},
    {1, 0, nullptr, Line::A3_L1},
    {2, 0, nullptr, Line::A3_L2},
    {3, 0, nullptr, Line::A3_L3},
    {4, 0, nullptr, Line::A3_L4},
    {5, 0, nullptr, Line::A3_L5},
    {6, 0, "Return dQ, dK, dV.", Line::A3_L1},
};

const char* backward_title(Schedule s) {
  switch (s) {
    case Schedule::fa1: return "Algorithm 4 (FlashAttention backward)###algorithm";
    case Schedule::fa2: return "FlashAttention-2 backward (Dao 2023, Algorithm 2)###algorithm";
    case Schedule::standard: return "Algorithm 3 (standard attention backward)###algorithm";
  }
  return "###algorithm";
}

const char* algorithm_title(Schedule s) {
  switch (s) {
    case Schedule::fa1: return "Algorithm 1 (FlashAttention)###algorithm";
    case Schedule::fa2: return "FlashAttention-2 (Dao 2023, Algorithm 1)###algorithm";
    case Schedule::standard: return "Algorithm 0 (standard attention)###algorithm";
  }
  return "###algorithm";
}

}  // namespace

void DrawAlgorithmPanel(AppState& s, GpuState& g, const Layout& l) {
  const Schedule sched = s.run ? s.run->schedule() : Schedule::fa1;
  const Step* cur = s.run ? current_step(s) : nullptr;
  // The backward's algorithm from its first step on (both loops j outer, i inner).
  const bool bwd = cur && is_backward_line(cur->line);
  if (!BeginPanel(bwd ? backward_title(sched) : algorithm_title(sched), l.algo_pos, l.algo_size, s)) return;
  const Trace& tr = s.run->trace;
  const Tiling& t = tr.tiling;
  const int active = cur ? line_number(cur->line) : -1;

  // Loop variables and the step's sentence first, so they stay visible at 1280 x 720.
  if (cur && cur->i >= 0 && sched == Schedule::standard)
    ImGui::Text("row block i = %d of Tr = %lld", cur->i, (long long)t.Tr);
  else if (cur && cur->i >= 0 && cur->j < 0)
    ImGui::Text("i = %d of Tr = %lld  (j not in scope)", cur->i, (long long)t.Tr);
  else if (cur && cur->i >= 0 && sched == Schedule::fa2 && !bwd)
    ImGui::Text("i = %d of Tr = %lld,  j = %d of Tc = %lld", cur->i, (long long)t.Tr, cur->j, (long long)t.Tc);
  else if (cur && cur->i >= 0)
    ImGui::Text("j = %d of Tc = %lld,  i = %d of Tr = %lld", cur->j, (long long)t.Tc, cur->i, (long long)t.Tr);
  else if (cur && cur->j >= 0)
    ImGui::Text("j = %d of Tc = %lld  (i not in scope)", cur->j, (long long)t.Tc);
  else
    ImGui::Text("Tr = %lld, Tc = %lld  (no loop variable in scope)", (long long)t.Tr, (long long)t.Tc);
  if (ImGui::GetContentRegionAvail().x - ImGui::GetItemRectSize().x > ImGui::CalcTextSize("(0-based)").x + 12) {
    ImGui::SameLine();
    ImGui::TextDisabled("(0-based)");
  }
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextUnformatted(s.explanation.c_str());
  ImGui::PopTextWrapPos();
  ImGui::Separator();

  ImGui::BeginChild("pseudocode", ImVec2(0, 0), false);
  if (g.mono) ImGui::PushFont(g.mono);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float indent_w = ImGui::GetFontSize() * 1.2f;
  const PseudoLine* lines = nullptr;
  size_t n_lines = 0;
  auto use = [&](const auto& table) {
    lines = table;
    n_lines = std::size(table);
  };
  if (sched == Schedule::fa2) bwd ? use(kFlash2Backward) : use(kFlash2);
  else if (sched == Schedule::standard) bwd ? use(kAlgorithm3) : use(kAlgorithm0);
  else bwd ? use(kAlgorithm4) : use(kAlgorithm1);
  for (size_t li = 0; li < n_lines; ++li) {
    const PseudoLine& pl = lines[li];
    // A skipped block highlights its loop line, with core's text saying it was skipped.
    const bool on = cur && pl.number == active && (!pl.text || pl.line == cur->line);
    const char* text = pl.text && !on ? pl.text : line_pseudocode(pl.line);
    dl->ChannelsSplit(2);
    dl->ChannelsSetCurrent(1);
    ImGui::BeginGroup();
    if (pl.number > 0) ImGui::Text("%2d", pl.number);
    else ImGui::TextUnformatted("  ");
    ImGui::SameLine(0, ImGui::GetFontSize() * 0.6f + indent_w * float(pl.indent));
    ImGui::PushTextWrapPos(0.0f);
    if (on) ImGui::TextUnformatted(text);
    else {
      ImGui::PushStyleColor(ImGuiCol_Text, kDimText);
      ImGui::TextUnformatted(text);
      ImGui::PopStyleColor();
    }
    ImGui::PopTextWrapPos();
    ImGui::EndGroup();
    if (on) {
      dl->ChannelsSetCurrent(0);
      const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
      dl->AddRectFilled(ImVec2(a.x - 4, a.y - 1), ImVec2(ImGui::GetWindowPos().x + ImGui::GetWindowWidth(), b.y + 1),
                        kHighlightCol, 3.0f);
      if (s.playing || ImGui::IsWindowAppearing()) ImGui::SetScrollHereY(0.5f);
    }
    dl->ChannelsMerge();
  }
  ImGui::Spacing();
  ImGui::Text("M = %lld: Br = %lld, Bc = %lld%s, tau = %.4g", (long long)t.M, (long long)t.Br,
              (long long)t.Bc, t.overridden ? " (overridden)" : "", double(tr.problem.scale));
  const Problem& p = tr.problem;
  if (p.mask.any() || p.dropout > 0 || p.dtype != Dtype::fp32) {
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextDisabled("%s%s; dropout p = %g; stored as %s", p.mask.any() ? "mask: " : "no mask",
                        s.mask_text.c_str(), double(p.dropout), dtype_name(p.dtype));
    ImGui::PopTextWrapPos();
  }
  if (g.mono) ImGui::PopFont();
  ImGui::EndChild();
  ImGui::End();
}

}  // namespace flashstep::gui
