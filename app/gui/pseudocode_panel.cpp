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
  if (!BeginPanel(algorithm_title(sched), l.algo_pos, l.algo_size, s)) return;
  const Trace& tr = s.run->trace;
  const Tiling& t = tr.tiling;
  const Step* cur = current_step(s);
  const int active = cur ? line_number(cur->line) : -1;

  // Loop variables and the step's sentence first, so they stay visible at 1280 x 720.
  if (cur && cur->i >= 0 && sched == Schedule::standard)
    ImGui::Text("row block i = %d of Tr = %lld", cur->i, (long long)t.Tr);
  else if (cur && cur->i >= 0 && cur->j < 0)
    ImGui::Text("i = %d of Tr = %lld  (j not in scope)", cur->i, (long long)t.Tr);
  else if (cur && cur->i >= 0 && sched == Schedule::fa2)
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
  const PseudoLine* lines = sched == Schedule::fa2 ? kFlash2 : sched == Schedule::standard ? kAlgorithm0 : kAlgorithm1;
  const size_t n_lines = sched == Schedule::fa2        ? std::size(kFlash2)
                         : sched == Schedule::standard ? std::size(kAlgorithm0)
                                                       : std::size(kAlgorithm1);
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
                        IM_COL32(70, 90, 160, 255), 3.0f);
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
