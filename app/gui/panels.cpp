// The desktop app's windows. Index:
//   [SECTION] Helpers: formatting without allocation, colours, layout
//   [SECTION] Keys
//   [SECTION] Heatmap uploads (only when data changes)
//   [SECTION] Controls panel: step, back, play, scrubber, jump
//   [SECTION] Algorithm 1 panel: pseudocode, loop variables, explanation
//   [SECTION] Problem panel: editor, presets, export
//   [SECTION] Tiles view: Q, K^T, V^T, S / P~, O, l, m as tile grids
//   [SECTION] Lesson view: online softmax of a vector
//   [SECTION] Compare view: a loaded O / lse against the CPU trace
//   [SECTION] Memory panel: HBM traffic, SRAM occupancy, Algorithm 1 vs standard
//   [SECTION] Online-softmax panel: m_i, l_i, rescale factors, plot over j
#include "app/gui/panels.h"

#include "core/npy.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <limits>

namespace flashstep::gui {

// =============================================================================================
// [SECTION] Helpers
// =============================================================================================

namespace {

const ImU32 kReadCol = IM_COL32(60, 200, 255, 255);
const ImU32 kWriteCol = IM_COL32(255, 140, 30, 255);
const ImU32 kComputeCol = IM_COL32(250, 225, 60, 255);
const ImU32 kResidentCol = IM_COL32(240, 240, 240, 200);
const ImU32 kGridCol = IM_COL32(15, 15, 20, 230);
const ImU32 kEmptyEdgeCol = IM_COL32(62, 65, 74, 255);  // outline of a tile that is not there yet
const ImU32 kVisitedCol = IM_COL32(120, 225, 120, 255);
const ImVec4 kErrorText(1.0f, 0.42f, 0.38f, 1.0f);
const ImVec4 kDimText(0.65f, 0.67f, 0.72f, 1.0f);
const ImVec4 kPassText(0.35f, 0.9f, 0.45f, 1.0f);
const ImVec4 kBoundText(0.95f, 0.75f, 0.3f, 1.0f);  // a closed form that is an upper bound

// "123 B", "1.50 KiB", "3.20 MiB" into buf.
const char* fmt_bytes(char* buf, size_t n, int64_t b) {
  if (b >= (int64_t(1) << 20)) std::snprintf(buf, n, "%.2f MiB", double(b) / 1048576.0);
  else if (b >= 1024) std::snprintf(buf, n, "%.2f KiB", double(b) / 1024.0);
  else std::snprintf(buf, n, "%lld B", (long long)b);
  return buf;
}

const char* fmt_value(char* buf, size_t n, float x, int decimals = 4) {
  if (std::isnan(x)) std::snprintf(buf, n, "-");
  else if (std::isinf(x)) std::snprintf(buf, n, x < 0 ? "-inf" : "inf");
  else std::snprintf(buf, n, "%.*f", decimals, double(x));
  return buf;
}

// Four significant digits, or -inf / inf.
const char* fmt_g(char* buf, size_t n, double x) {
  if (std::isinf(x)) std::snprintf(buf, n, x < 0 ? "-inf" : "inf");
  else std::snprintf(buf, n, "%.4g", x);
  return buf;
}

void ErrorText(const std::string& msg) {
  ImGui::PushStyleColor(ImGuiCol_Text, kErrorText);
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextUnformatted(msg.c_str());
  ImGui::PopTextWrapPos();
  ImGui::PopStyleColor();
}

void DimText(const char* text) {
  ImGui::PushStyleColor(ImGuiCol_Text, kDimText);
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextUnformatted(text);
  ImGui::PopTextWrapPos();
  ImGui::PopStyleColor();
}

// A colour key; `same_line` continues the row when it fits, else starts a new one.
void Swatch(ImU32 col, bool outline, const char* label, bool same_line = false) {
  const float h = ImGui::GetTextLineHeight();
  if (same_line) {
    ImGui::SameLine(0, 12);
    if (ImGui::GetContentRegionAvail().x < h + 4 + ImGui::CalcTextSize(label).x) ImGui::NewLine();
  }
  const ImVec2 p = ImGui::GetCursorScreenPos();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  if (outline) dl->AddRect(ImVec2(p.x + 1, p.y + 2), ImVec2(p.x + h - 1, p.y + h - 2), col, 0, 0, 2.5f);
  else dl->AddRectFilled(ImVec2(p.x + 1, p.y + 2), ImVec2(p.x + h - 1, p.y + h - 2), col);
  ImGui::Dummy(ImVec2(h, h));
  ImGui::SameLine(0, 4);
  ImGui::TextUnformatted(label);
}

void PlaceWindow(ImVec2 pos, ImVec2 size) {
  ImGui::SetNextWindowPos(pos, ImGuiCond_Always);
  ImGui::SetNextWindowSize(size, ImGuiCond_Always);
}

constexpr ImGuiWindowFlags kPanelFlags =
    ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoCollapse |
    ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoBringToFrontOnFocus;

// Places and opens a panel; returns false (the window already ended) when there is no run.
bool BeginPanel(const char* title, ImVec2 pos, ImVec2 size, const AppState& s, ImGuiWindowFlags extra = 0) {
  PlaceWindow(pos, size);
  ImGui::Begin(title, nullptr, kPanelFlags | extra);
  if (s.run && s.cursor) return true;
  ImGui::End();
  return false;
}

const Step* current_step(const AppState& s) { return s.cursor ? s.cursor->current() : nullptr; }

// The step before the current one (for "what did this step read": cumulative differences).
const Step* previous_step(const AppState& s) {
  const size_t k = s.index();
  return k >= 2 ? &s.run->trace.steps[k - 2] : nullptr;
}

bool tensor_read_now(const AppState& s, Tensor t) {
  const Step* cur = current_step(s);
  if (!cur) return false;
  const Step* prev = previous_step(s);
  const int64_t before = prev ? prev->tensor_read[int(t)] : 0;
  return cur->tensor_read[int(t)] > before;
}

}  // namespace

Layout ComputeLayout(ImVec2 d, float controls_h) {
  Layout l;
  const float left = std::clamp(d.x * 0.25f, 300.0f, 420.0f);
  const float right = std::clamp(d.x * 0.26f, 320.0f, 440.0f);
  const float center = std::max(d.x - left - right, 200.0f);
  const float body = std::max(d.y - controls_h, 200.0f);
  l.controls_pos = ImVec2(0, 0);
  l.controls_size = ImVec2(d.x, controls_h);
  const float algo_h = std::floor(body * 0.44f);
  l.algo_pos = ImVec2(0, controls_h);
  l.algo_size = ImVec2(left, algo_h);
  l.problem_pos = ImVec2(0, controls_h + algo_h);
  l.problem_size = ImVec2(left, body - algo_h);
  l.center_pos = ImVec2(left, controls_h);
  l.center_size = ImVec2(center, body);
  const float mem_h = std::floor(body * 0.72f);
  l.memory_pos = ImVec2(left + center, controls_h);
  l.memory_size = ImVec2(d.x - left - center, mem_h);
  l.softmax_pos = ImVec2(left + center, controls_h + mem_h);
  l.softmax_size = ImVec2(d.x - left - center, body - mem_h);
  return l;
}

// =============================================================================================
// [SECTION] Keys
// =============================================================================================

void HandleKeys(AppState& s) {
  const ImGuiIO& io = ImGui::GetIO();
  if (io.WantTextInput || !s.cursor) return;
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_RightArrow))) s.step_forward();
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_LeftArrow))) s.step_back();
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Space), false)) s.playing = !s.playing;
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Home), false)) s.reset();
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_End), false)) s.run_to_end();
}

// =============================================================================================
// [SECTION] Heatmap uploads
// =============================================================================================

namespace {

// Cumulative bytes written to a tensor up to the current step: equal keys mean equal contents,
// because HBM contents are a function of the writes replayed so far.
int64_t written_key(const AppState& s, Tensor t) {
  const Step* cur = current_step(s);
  return cur ? cur->tensor_written[int(t)] : 0;
}

void upload_hbm(const AppState& s, Heatmap& h, Tensor t, int64_t& key) {
  const int64_t now = written_key(s, t);
  if (now == key && h.valid()) return;
  key = now;
  if (s.cursor->written(t)) h.upload(s.cursor->hbm(t));
}

}  // namespace

void UpdateHeatmaps(AppState& s, GpuState& g) {
  if (!s.run || !g.shader.program()) return;
  const RunView& v = *s.run;
  const Problem& p = v.trace.problem;
  if (g.run_seen != s.run_version) {  // a new trace: inputs, score tiles and masks once
    g.run_seen = s.run_version;
    g.Q.upload(p.Q);
    g.K.upload(p.K);
    g.V.upload(p.V);
    if (v.S.size()) {
      g.S.upload(v.S);  // all tiles; only those computed so far are drawn
      g.P.upload(v.P);
    } else {  // too large to show: drop the previous run's textures
      g.S.destroy();
      g.P.destroy();
    }
    g.o_key = g.l_key = g.m_key = g.L_key = -1;
    if (!g.legend_div.valid()) {
      float ramp[128];
      for (int k = 0; k < 128; ++k) ramp[k] = -1.0f + 2.0f * float(k) / 127.0f;
      g.legend_div.upload(ramp, 1, 128);
      for (int k = 0; k < 128; ++k) ramp[k] = float(k) / 127.0f;
      g.legend_seq.upload(ramp, 1, 128);
    }
  }
  upload_hbm(s, g.O, Tensor::O, g.o_key);
  upload_hbm(s, g.l, Tensor::l, g.l_key);
  upload_hbm(s, g.m, Tensor::m, g.m_key);
  upload_hbm(s, g.L, Tensor::L, g.L_key);
  if (g.compare_seen != s.compare.version && s.compare.loaded) {
    g.compare_seen = s.compare.version;
    g.err.upload(s.compare.err);
    float ramp[128];
    for (int k = 0; k < 128; ++k)
      ramp[k] = std::pow(10.0f, s.compare.log_lo + (s.compare.log_hi - s.compare.log_lo) * float(k) / 127.0f);
    g.legend_log.upload(ramp, 1, 128);
  }

  HeatmapParams hp;
  hp.map = Colormap::diverging;
  hp.hi = v.range_qkv;
  g.Q.set_params(hp);
  hp.transpose = true;  // K and V are drawn as d x Nk, so block j lines up with S's columns
  g.K.set_params(hp);
  g.V.set_params(hp);
  hp.transpose = false;
  hp.hi = v.range_s;
  g.S.set_params(hp);
  HeatmapParams pp = hp;
  pp.map = Colormap::sequential;
  pp.lo = 0;
  pp.hi = 1;
  g.P.set_params(pp);
  HeatmapParams op;
  op.hi = v.range_o;
  op.empty = !s.cursor->written(Tensor::O);
  g.O.set_params(op);
  op.hi = v.range_m;
  op.empty = !s.cursor->written(Tensor::m);
  g.m.set_params(op);
  op.hi = v.range_L;
  op.empty = !s.cursor->written(Tensor::L);
  g.L.set_params(op);
  HeatmapParams lp;
  lp.map = Colormap::sequential;
  lp.lo = 0;
  lp.hi = v.max_l;
  lp.empty = !s.cursor->written(Tensor::l);
  g.l.set_params(lp);
  HeatmapParams ep;
  ep.map = Colormap::log_error;
  ep.lo = s.compare.log_lo;
  ep.hi = s.compare.log_hi;
  g.err.set_params(ep);
  g.legend_log.set_params(ep);
  HeatmapParams dp;
  g.legend_div.set_params(dp);
  HeatmapParams sp;
  sp.map = Colormap::sequential;
  sp.lo = 0;
  sp.hi = 1;
  g.legend_seq.set_params(sp);

  for (Heatmap* h : {&g.Q, &g.K, &g.V, &g.S, &g.P, &g.O, &g.l, &g.m, &g.L, &g.err, &g.legend_div,
                     &g.legend_seq, &g.legend_log})
    h->render(g.shader);
}

// =============================================================================================
// [SECTION] Controls panel
// =============================================================================================

void DrawControlsPanel(AppState& s, const Layout& l) {
  if (!BeginPanel("Controls", l.controls_pos, l.controls_size, s, ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoScrollbar)) return;
  if (ImGui::Button("Reset")) s.reset();
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Back to step 0 (Home)");
  ImGui::SameLine();
  if (ImGui::Button("< Back")) s.step_back();
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("One step back (Left)");
  ImGui::SameLine();
  if (ImGui::Button(s.playing ? "Pause" : "Play", ImVec2(ImGui::GetFontSize() * 4, 0))) {
    if (!s.playing && s.index() >= s.steps()) s.reset();
    s.playing = !s.playing;
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Play / pause (Space)");
  ImGui::SameLine();
  if (ImGui::Button("Step >")) s.step_forward();
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("One step forward (Right)");
  ImGui::SameLine();
  if (ImGui::Button("Run to end")) s.run_to_end();
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Apply every step (End)");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 9);
  ImGui::SliderFloat("steps/s", &s.speed, 0.5f, 500.0f, "%.1f", ImGuiSliderFlags_Logarithmic);
  ImGui::SameLine(0, ImGui::GetFontSize() * 1.5f);
  ImGui::TextUnformatted("Jump to i");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 5.5f);
  ImGui::InputInt("##ji", &s.jump_i);
  ImGui::SameLine();
  ImGui::TextUnformatted("j");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 5.5f);
  ImGui::InputInt("##jj", &s.jump_j);
  ImGui::SameLine();
  if (ImGui::Button("Go")) s.jump_to(s.jump_i, s.jump_j);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Go to the load of iteration (i, j): Q_i, O_i, l_i, m_i at Alg1 L8; K_j, V_j at "
                      "FA2fwd L7; row block i at Alg0 L1");
  if (!s.jump_error.empty()) {
    ImGui::SameLine();
    ImGui::TextColored(kErrorText, "%s", s.jump_error.c_str());
  }

  // Row 2: the scrubber and where we are.
  const Step* cur = current_step(s);
  char where[96];
  if (!cur) std::snprintf(where, sizeof where, "before the first step");
  else if (cur->i >= 0 && cur->j >= 0)
    std::snprintf(where, sizeof where, "%s  i = %d, j = %d", line_label(cur->line), cur->i, cur->j);
  else if (cur->i >= 0)
    std::snprintf(where, sizeof where, "%s  i = %d", line_label(cur->line), cur->i);
  else if (cur->j >= 0) std::snprintf(where, sizeof where, "%s  j = %d", line_label(cur->line), cur->j);
  else std::snprintf(where, sizeof where, "%s", line_label(cur->line));
  const float info_w = ImGui::GetFontSize() * 16;
  ImGui::SetNextItemWidth(std::max(ImGui::GetContentRegionAvail().x - info_w, 100.0f));
  int k = int(s.index());
  char fmt[48];
  std::snprintf(fmt, sizeof fmt, "step %%d of %zu", s.steps());
  if (ImGui::SliderInt("##scrub", &k, 0, int(s.steps()), fmt)) s.seek(size_t(k));
  ImGui::SameLine();
  ImGui::TextUnformatted(where);
  ImGui::End();
}

// =============================================================================================
// [SECTION] Algorithm 1 panel
// =============================================================================================

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

// =============================================================================================
// [SECTION] Problem panel
// =============================================================================================

namespace {

void FieldError(const ProblemForm& f, Field which) {
  if (f.error_field == which && !f.error.empty()) {
    ImGui::Indent();
    ErrorText(f.error);
    ImGui::Unindent();
  }
}

void DrawProblemTab(AppState& s) {
  ProblemForm& f = s.form;
  if (ImGui::BeginCombo("preset", s.preset_name.empty() ? "(edited problem)" : s.preset_name.c_str())) {
    for (const std::string& n : s.preset_names)
      if (ImGui::Selectable(n.c_str())) {
        try {
          s.load_preset(n);
        } catch (const InputError& e) {
          s.apply_error = e.what();
        }
      }
    ImGui::EndCombo();
  }
  if (!s.preset_title.empty()) DimText(s.preset_title.c_str());
  if (!s.preset_description.empty()) DimText(s.preset_description.c_str());
  bool changed = false;
  const float w = ImGui::GetFontSize() * 8;
  ImGui::PushItemWidth(w);
  static const char* const kScheduleItems[3] = {"fa1 (Algorithm 1)", "fa2 (FlashAttention-2)",
                                                "standard (Algorithm 0)"};
  int sched = schedule_column(f.schedule);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 15);
  if (ImGui::Combo("schedule", &sched, kScheduleItems, 3)) {
    f.schedule = kSchedules[std::clamp(sched, 0, 2)];
    changed = true;
  }
  const float half = (w - ImGui::GetStyle().ItemInnerSpacing.x) * 0.5f;
  // Two numbers on one line under one label (Nq, Nk; Br, Bc; the window).
  auto pair = [&](const char* id_a, int64_t* a, const char* label_b, int64_t* b) {
    ImGui::SetNextItemWidth(half);
    bool c = ImGui::InputScalar(id_a, ImGuiDataType_S64, a);
    ImGui::SameLine(0, ImGui::GetStyle().ItemInnerSpacing.x);
    ImGui::SetNextItemWidth(half);
    c |= ImGui::InputScalar(label_b, ImGuiDataType_S64, b);
    return c;
  };
  if (!f.use_files) {
    changed |= pair("##nq", &f.nq, "Nq, Nk (queries, keys)", &f.nk);
    FieldError(f, Field::nq);
    FieldError(f, Field::nk);
    changed |= ImGui::InputScalar("d (head dim)", ImGuiDataType_S64, &f.d);
    FieldError(f, Field::d);
  }
  if (ImGui::InputScalar("M (elements)", ImGuiDataType_S64, &f.M)) {
    std::snprintf(f.M_kib, sizeof f.M_kib, "%g", double(f.M) * 4.0 / 1024.0);
    changed = true;
  }
  FieldError(f, Field::M);
  std::string kib_error;
  if (ImGui::InputText("M (KiB of fp32)", f.M_kib, sizeof f.M_kib)) {
    char* end = nullptr;
    const double kib = std::strtod(f.M_kib, &end);
    while (end && *end == ' ') ++end;
    const bool unit = end && (std::string(end) == "" || std::string(end) == "KiB" || std::string(end) == "k");
    const double elems = kib * 256.0;
    if (end == f.M_kib || !unit || !(kib > 0) || elems > 1e15) {
      f.error = "M in KiB must be a positive number, as in 64 or 0.25";
      f.error_field = Field::M_kib;
    } else if (elems != std::floor(elems)) {
      f.error = "M in KiB must be a whole number of 4-byte elements (a multiple of 1/256 KiB)";
      f.error_field = Field::M_kib;
    } else {
      f.M = int64_t(elems);
      changed = true;
    }
  }
  FieldError(f, Field::M_kib);
  changed |= pair("##br", &f.br, "Br, Bc (0 = paper)", &f.bc);
  FieldError(f, Field::br);
  changed |= ImGui::Checkbox("tau = 1/sqrt(d)", &f.default_scale);
  if (!f.default_scale) {
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6);
    changed |= ImGui::InputDouble("tau", &f.scale, 0, 0, "%.6g");
  }
  FieldError(f, Field::scale);
  changed |= ImGui::Checkbox("causal mask", &f.options.mask.causal);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Bottom-right aligned when Nq != Nk: the last query sees the last key");
  changed |= pair("##wl", &f.options.mask.window_left, "window L, R (-1 none)", &f.options.mask.window_right);
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Sliding window: row r keeps keys [r + Nk - Nq - LEFT, r + Nk - Nq + RIGHT]; -1 = no limit");
  FieldError(f, Field::window);
  changed |= ImGui::InputScalar("key length (-1 all)", ImGuiDataType_S64, &f.options.mask.kv_len);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Key padding: only the first KV_LEN keys are valid (0..Nk; -1 = no padding)");
  FieldError(f, Field::kv_len);
  changed |= ImGui::InputDouble("dropout p", &f.options.dropout, 0, 0, "%.4g");
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("P~_ij entries dropped with probability p in [0, 1) (Philox keyed by the seed)");
  FieldError(f, Field::dropout);
  static const char* const kDtypeItems[3] = {"fp32", "fp16", "bf16"};
  int dt = int(f.options.dtype);
  if (ImGui::Combo("storage (HBM)", &dt, kDtypeItems, 3)) {
    f.options.dtype = Dtype(std::clamp(dt, 0, 2));
    changed = true;
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Q, K, V, O (and S, P in Algorithm 0) stored in this type; arithmetic in float32");
  FieldError(f, Field::dtype);
  changed |= ImGui::InputScalar("seed", ImGuiDataType_S64, &f.seed);
  FieldError(f, Field::seed);
  changed |= ImGui::Checkbox("inputs from .npy files", &f.use_files);
  if (!f.use_files) {
    const auto& pats = input_patterns();
    if (ImGui::BeginCombo("pattern", pats[size_t(std::clamp(f.pattern, 0, int(pats.size()) - 1))].c_str())) {
      for (size_t k = 0; k < pats.size(); ++k)
        if (ImGui::Selectable(pats[k].c_str(), int(k) == f.pattern)) {
          f.pattern = int(k);
          changed = true;
        }
      ImGui::EndCombo();
    }
    FieldError(f, Field::pattern);
  } else {
    ImGui::PopItemWidth();
    ImGui::PushItemWidth(-ImGui::GetFontSize() * 2);
    changed |= ImGui::InputText("Q", f.q_path, sizeof f.q_path);
    changed |= ImGui::InputText("K", f.k_path, sizeof f.k_path);
    changed |= ImGui::InputText("V", f.v_path, sizeof f.v_path);
    FieldError(f, Field::files);
  }
  ImGui::PopItemWidth();
  if (changed) f.validate();
  if (f.error_field == Field::none && !f.error.empty()) ErrorText(f.error);
  if (!f.preview.empty() && f.error.empty()) DimText(f.preview.c_str());

  const bool ok = f.error.empty();
  if (!ok) ImGui::BeginDisabled();
  if (ImGui::Button("Apply (new run)")) s.apply_form();
  if (!ok) ImGui::EndDisabled();
  ImGui::SameLine();
  if (ImGui::Button("Revert fields") && s.run) f.from_spec(s.run->spec);
  if (!s.apply_error.empty()) {
    ErrorText("Not applied: " + s.apply_error);
    DimText("The current run is kept.");
  }
}

void DrawExportTab(AppState& s) {
  DimText("Files are written next to this path, with the format's extension.");
  ImGui::SetNextItemWidth(-1);
  ImGui::InputText("##base", s.export_base, sizeof s.export_base);
  if (ImGui::Button("PNG screenshot")) s.export_as(ExportKind::png);
  ImGui::SameLine();
  if (ImGui::Button("Trace JSON")) s.export_as(ExportKind::json);
  ImGui::SameLine();
  if (ImGui::Button("CSV")) s.export_as(ExportKind::csv);
  ImGui::SameLine();
  if (ImGui::Button("Chrome trace")) s.export_as(ExportKind::chrome);
  if (!s.export_message.empty()) {
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextUnformatted(s.export_message.c_str());
    ImGui::PopTextWrapPos();
  }
  DimText("Chrome traces open in Perfetto (ui.perfetto.dev) or chrome://tracing.");
}

}  // namespace

void DrawProblemPanel(AppState& s, const Layout& l) {
  PlaceWindow(l.problem_pos, l.problem_size);
  ImGui::Begin("Problem", nullptr, kPanelFlags);
  if (ImGui::BeginTabBar("problem_tabs")) {
    if (ImGui::BeginTabItem("Problem")) {
      DrawProblemTab(s);
      ImGui::EndTabItem();
    }
    if (ImGui::BeginTabItem("Export")) {
      if (s.run) DrawExportTab(s);
      ImGui::EndTabItem();
    }
    ImGui::EndTabBar();
  }
  ImGui::End();
}

// =============================================================================================
// [SECTION] Tiles view
// =============================================================================================

namespace {

enum class MatId { Q, K, V, S, P, O, l, m, L };

const ImU32 kSkipFill = IM_COL32(38, 36, 34, 255);     // a tile the mask hides entirely
const ImU32 kSkipHatch = IM_COL32(110, 100, 88, 255);
const ImU32 kSkipNowCol = IM_COL32(255, 95, 95, 255);  // the skip step's own outline
const ImU32 kDropCol = IM_COL32(255, 70, 200, 255);    // an entry of P~ dropped by dropout
const ImU32 kNegInfCol = IM_COL32(92, 77, 117, 255);   // shaders/heatmap.frag's kNegInf

// One matrix on screen. Displayed rows/cols are after the optional transpose.
struct Grid {
  MatId id;
  const char* label;
  Heatmap* map;
  ImVec2 p0;
  float cw = 1, ch = 1;
  int rows = 0, cols = 0;     // displayed
  bool transpose = false;
  int row_block = 0, col_block = 0;  // tile size in displayed rows / cols (0 = no tiling)
  const Mat* ready = nullptr;        // S / P~: Tr x Tc steps after which each tile exists
  const Mat* skipped = nullptr;      // S / P~: Tr x Tc, 1 where the tile is skipped (masked)
  ImVec2 p1() const { return ImVec2(p0.x + cw * float(cols), p0.y + ch * float(rows)); }
  ImVec2 at(float r, float c) const { return ImVec2(p0.x + c * cw, p0.y + r * ch); }
};

// Value of element (r, c) in matrix coordinates; NaN when it does not exist at this step.
float value_at(const AppState& s, MatId id, int64_t r, int64_t c) {
  const RunView& v = *s.run;
  const Problem& p = v.trace.problem;
  const Tiling& t = v.trace.tiling;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float k = float(s.index());
  switch (id) {
    case MatId::Q: return p.Q(r, c);
    case MatId::K: return p.K(r, c);
    case MatId::V: return p.V(r, c);
    case MatId::S: return v.S.size() && v.s_ready(r / t.Br, c / t.Bc) <= k ? v.S(r, c) : nan;
    case MatId::P: return v.P.size() && v.p_ready(r / t.Br, c / t.Bc) <= k ? v.P(r, c) : nan;
    case MatId::O: return s.cursor->written(Tensor::O) ? s.cursor->hbm(Tensor::O)(r, c) : nan;
    case MatId::l: return s.cursor->written(Tensor::l) ? s.cursor->hbm(Tensor::l)(r, 0) : nan;
    case MatId::m: return s.cursor->written(Tensor::m) ? s.cursor->hbm(Tensor::m)(r, 0) : nan;
    case MatId::L: return s.cursor->written(Tensor::L) ? s.cursor->hbm(Tensor::L)(r, 0) : nan;
  }
  return nan;
}

// Whether a value is drawn light (so its number is written in dark text).
bool light_cell(MatId id, float x, const RunView& v) {
  if (!std::isfinite(x)) return false;
  switch (id) {
    case MatId::P: return x > 0.55f;
    case MatId::l: return x / v.max_l > 0.55f;
    case MatId::Q: case MatId::K: case MatId::V: return std::abs(x) / v.range_qkv < 0.6f;
    case MatId::S: return std::abs(x) / v.range_s < 0.6f;
    case MatId::O: return std::abs(x) / v.range_o < 0.6f;
    case MatId::m: return std::abs(x) / v.range_m < 0.6f;
    case MatId::L: return std::abs(x) / v.range_L < 0.6f;
  }
  return false;
}

// A band of displayed rows [r0, r1) or columns [c0, c1) of a grid, outlined.
void outline(ImDrawList* dl, const Grid& g, float r0, float r1, float c0, float c1, ImU32 col, float thick) {
  const ImVec2 a = g.at(r0, c0), b = g.at(r1, c1);
  dl->AddRect(ImVec2(a.x - thick * 0.5f, a.y - thick * 0.5f), ImVec2(b.x + thick * 0.5f, b.y + thick * 0.5f),
              col, 0.0f, 0, thick);
}

// Outline rows [row0, row0 + rows) in matrix coordinates (columns when transposed).
void outline_rows(ImDrawList* dl, const Grid& g, int64_t row0, int64_t rows, ImU32 col, float thick) {
  if (rows <= 0) return;
  if (g.transpose) outline(dl, g, 0, float(g.rows), float(row0), float(row0 + rows), col, thick);
  else outline(dl, g, float(row0), float(row0 + rows), 0, float(g.cols), col, thick);
}

// A skipped tile: a dark fill with diagonal hatching (when the tile is big enough to see it),
// unlike a tile that is merely not computed yet (an outline on the background).
void draw_skipped(ImDrawList* dl, ImVec2 a, ImVec2 b) {
  dl->AddRectFilled(a, b, kSkipFill);
  if (b.x - a.x < 8 || b.y - a.y < 8) return;
  const float step = 7.0f;
  // Lines x + y = c clipped to the rectangle.
  for (float c = a.x + a.y + step; c < b.x + b.y; c += step) {
    const float xa = std::max(a.x, c - b.y), xb = std::min(b.x, c - a.y);
    if (xa < xb) dl->AddLine(ImVec2(xa, c - xa), ImVec2(xb, c - xb), kSkipHatch, 1.0f);
  }
}

void draw_grid(ImDrawList* dl, const AppState& s, const Grid& g, ImFont* cell_font) {
  const RunView& v = *s.run;
  g.map->fit_to(float(g.cols) * g.cw, float(g.rows) * g.ch);  // colour no finer than drawn
  if (!g.map->valid()) {
    dl->AddRect(g.p0, g.p1(), kEmptyEdgeCol);
  } else if (!g.ready) {
    dl->AddImage(g.map->texture(), g.p0, g.p1());
  } else {
    // S / P~: only the tiles computed so far, each a piece of the texture; the rest stays the
    // panel's background (no overdraw, which is what a software rasteriser pays for).
    // One quad per run of consecutive computed tiles in a tile row (one per row for j-outer).
    const float k = float(s.index());
    const Mat& ready = *g.ready;
    const bool outlines = float(g.row_block) * g.ch >= 5.0f && float(g.col_block) * g.cw >= 5.0f;
    for (int64_t ti = 0; ti < ready.rows(); ++ti) {
      const float r0 = float(ti * g.row_block), r1 = std::min(r0 + float(g.row_block), float(g.rows));
      for (int64_t tj = 0; tj < ready.cols();) {
        const float c0 = float(tj * g.col_block);
        if (ready(ti, tj) <= k) {
          int64_t end = tj;
          while (end < ready.cols() && ready(ti, end) <= k) ++end;
          const float c1 = std::min(float(end * g.col_block), float(g.cols));
          dl->AddImage(g.map->texture(), g.at(r0, c0), g.at(r1, c1),
                       ImVec2(c0 / float(g.cols), r0 / float(g.rows)), ImVec2(c1 / float(g.cols), r1 / float(g.rows)));
          tj = end;
        } else {
          const ImVec2 a = g.at(r0, c0), b = g.at(r1, std::min(c0 + float(g.col_block), float(g.cols)));
          if (g.skipped && (*g.skipped)(ti, tj) != 0) draw_skipped(dl, a, b);
          else if (outlines) dl->AddRect(a, b, kEmptyEdgeCol);
          ++tj;
        }
      }
    }
  }
  // Tile boundaries, unless tiles are too thin to see between the lines (N = 3000, Br = 16).
  if (g.row_block > 0 && float(g.row_block) * g.ch >= 5.0f)
    for (int r = g.row_block; r < g.rows; r += g.row_block)
      dl->AddLine(g.at(float(r), 0), g.at(float(r), float(g.cols)), kGridCol, 1.0f);
  if (g.col_block > 0 && float(g.col_block) * g.cw >= 5.0f)
    for (int c = g.col_block; c < g.cols; c += g.col_block)
      dl->AddLine(g.at(0, float(c)), g.at(float(g.rows), float(c)), kGridCol, 1.0f);
  // Numbers in the cells when they fit (the tiny problem).
  if (cell_font && g.cw >= 30.0f && g.ch >= cell_font->FontSize + 2.0f) {
    const int decimals = g.cw >= 46.0f ? 3 : g.cw >= 38.0f ? 2 : 1;
    char buf[24];
    for (int r = 0; r < g.rows; ++r)
      for (int c = 0; c < g.cols; ++c) {
        const int64_t mr = g.transpose ? c : r, mc = g.transpose ? r : c;
        const float x = value_at(s, g.id, mr, mc);
        if (std::isnan(x)) continue;
        if (g.id == MatId::P && std::isinf(x)) continue;  // masked: weight 0, drawn in the -inf colour
        fmt_value(buf, sizeof buf, x, decimals);
        const ImVec2 ts = cell_font->CalcTextSizeA(cell_font->FontSize, 1e9f, 0, buf);
        const ImVec2 a = g.at(float(r), float(c));
        dl->AddText(cell_font, cell_font->FontSize,
                    ImVec2(a.x + (g.cw - ts.x) * 0.5f, a.y + (g.ch - ts.y) * 0.5f),
                    light_cell(g.id, x, v) ? IM_COL32(20, 20, 25, 255) : IM_COL32(250, 250, 250, 255), buf);
      }
  }
  dl->AddRect(ImVec2(g.p0.x - 1, g.p0.y - 1), ImVec2(g.p1().x + 1, g.p1().y + 1), IM_COL32(110, 110, 120, 255));
}

// The dropped entries of the current P~ tile (1 kept, 0 dropped in `keep`, whose top-left
// element is (row0, col0)): a dark cell crossed in magenta, or a magenta fill when tiny.
void draw_dropped(ImDrawList* dl, const Grid& g, const Mat& keep, int64_t row0, int64_t col0) {
  for (int64_t r = 0; r < keep.rows(); ++r)
    for (int64_t c = 0; c < keep.cols(); ++c) {
      if (keep(r, c) != 0) continue;
      const ImVec2 a = g.at(float(row0 + r), float(col0 + c)), b = g.at(float(row0 + r + 1), float(col0 + c + 1));
      if (b.x - a.x < 6 || b.y - a.y < 6) {
        dl->AddRectFilled(a, b, kDropCol);
        continue;
      }
      dl->AddRectFilled(a, b, IM_COL32(18, 18, 22, 235));
      const float in = std::min(b.x - a.x, b.y - a.y) * 0.2f;
      dl->AddLine(ImVec2(a.x + in, a.y + in), ImVec2(b.x - in, b.y - in), kDropCol, 2.0f);
      dl->AddLine(ImVec2(a.x + in, b.y - in), ImVec2(b.x - in, a.y + in), kDropCol, 2.0f);
    }
}

// Tooltip for the element under the mouse.
void hover_grid(const AppState& s, const Grid& g) {
  if (!ImGui::IsWindowHovered()) return;
  const ImVec2 mp = ImGui::GetIO().MousePos;
  if (mp.x < g.p0.x || mp.y < g.p0.y || mp.x >= g.p1().x || mp.y >= g.p1().y) return;
  const int r = std::clamp(int((mp.y - g.p0.y) / g.ch), 0, g.rows - 1);
  const int c = std::clamp(int((mp.x - g.p0.x) / g.cw), 0, g.cols - 1);
  const int64_t mr = g.transpose ? c : r, mc = g.transpose ? r : c;
  const Tiling& t = s.run->trace.tiling;
  const bool standard = s.run->schedule() == Schedule::standard;
  const float x = value_at(s, g.id, mr, mc);
  char val[32];
  fmt_value(val, sizeof val, x, 6);
  ImGui::BeginTooltip();
  switch (g.id) {
    case MatId::Q:
      ImGui::Text("Q[%lld, %lld] = %s   (block Q_i, i = %lld)", (long long)mr, (long long)mc, val, (long long)(mr / t.Br));
      break;
    case MatId::K:
    case MatId::V:
      ImGui::Text("%s[%lld, %lld] = %s   (block %s_j, j = %lld)", g.id == MatId::K ? "K" : "V", (long long)mr,
                  (long long)mc, val, g.id == MatId::K ? "K" : "V", (long long)(mr / t.Bc));
      break;
    case MatId::S:
    case MatId::P: {
      const char* name = g.id == MatId::S ? "S" : standard ? "P" : "P~";
      const int64_t ti = mr / t.Br, tj = mc / t.Bc;
      if (std::isnan(x) && s.run->skipped(ti, tj) != 0)
        ImGui::Text("tile (i = %lld, j = %lld) is entirely masked: skipped, never loaded or computed",
                    (long long)ti, (long long)tj);
      else if (std::isnan(x))
        ImGui::Text("%s[%lld, %lld]: %s not computed yet", name, (long long)mr, (long long)mc,
                    standard ? "row block" : "tile");
      else if (std::isinf(x))
        ImGui::Text("%s[%lld, %lld]: masked (score -inf, weight 0)", name, (long long)mr, (long long)mc);
      else if (standard)
        ImGui::Text("%s[%lld, %lld] = %s in HBM   (row block i = %lld)", name, (long long)mr, (long long)mc, val,
                    (long long)ti);
      else
        ImGui::Text("%s[%lld, %lld] = %s   (tile i = %lld, j = %lld; on chip, never in HBM)", name, (long long)mr,
                    (long long)mc, val, (long long)ti, (long long)tj);
      break;
    }
    case MatId::O:
      if (std::isnan(x))
        ImGui::Text("O[%lld, %lld]: not in HBM yet%s", (long long)mr, (long long)mc,
                    s.run->schedule() == Schedule::fa2 ? " (FA2 writes O_i once, at L14; until then it is on chip)" : "");
      else
        ImGui::Text("O[%lld, %lld] = %s in HBM   (block O_i, i = %lld)", (long long)mr, (long long)mc, val,
                    (long long)(mr / t.Br));
      break;
    case MatId::l:
    case MatId::m:
    case MatId::L:
      ImGui::Text("%s[%lld] = %s in HBM   (block i = %lld)", g.id == MatId::l ? "l" : g.id == MatId::m ? "m" : "L = lse",
                  (long long)mr, val, (long long)(mr / t.Br));
      break;
  }
  ImGui::EndTooltip();
}

void colorbar(ImDrawList* dl, Heatmap& h, ImVec2 p, float w, float hgt, const char* lo, const char* hi, const char* name) {
  const ImVec2 ts = ImGui::CalcTextSize(name);
  dl->AddText(p, ImGui::GetColorU32(ImGuiCol_Text), name);
  const ImVec2 a(p.x + ts.x + 6, p.y + 2), b(a.x + w, a.y + hgt);
  if (h.valid()) dl->AddImage(h.texture(), a, b);
  dl->AddText(ImVec2(a.x, b.y + 1), ImGui::GetColorU32(ImGuiCol_Text), lo);
  const ImVec2 hs = ImGui::CalcTextSize(hi);
  dl->AddText(ImVec2(b.x - hs.x, b.y + 1), ImGui::GetColorU32(ImGuiCol_Text), hi);
}

// Whether the score panel shows P~ (else S) when it follows the step.
bool follow_shows_p(Schedule sched, Line line) {
  switch (sched) {
    case Schedule::fa1:
      return line == Line::A1_L10 || line == Line::A1_L11 || line == Line::A1_L12 || line == Line::A1_L13;
    case Schedule::fa2: return line == Line::A2_L9 || line == Line::A2_L10;
    case Schedule::standard: return line == Line::A0_L2 || line == Line::A0_L3;
  }
  return false;
}

const char* schedule_note(Schedule sched) {
  switch (sched) {
    case Schedule::fa1:
      return "Algorithm 1: j outer, i inner. O_i, l_i, m_i are read from HBM and written back at every (i, j).";
    case Schedule::fa2:
      return "FlashAttention-2: i outer, j inner. O_i, l_i, m_i stay on chip (white outline) for the whole j "
             "loop; HBM gets O_i once (L14) and the logsumexp L_i (L15).";
    case Schedule::standard:
      return "Algorithm 0: S and P are whole Nq x Nk matrices, written to HBM and read back.";
  }
  return "";
}

void DrawTilesView(AppState& s, GpuState& gs) {
  const RunView& v = *s.run;
  const Problem& p = v.trace.problem;
  const Tiling& t = v.trace.tiling;
  const Schedule sched = v.schedule();
  const bool standard = sched == Schedule::standard;
  const Step* cur = current_step(s);
  const float k = float(s.index());

  // S or P~: follow the step (P~ once it exists for the current tile), or fixed.
  bool show_p = s.sp_mode == SpMode::P;
  if (s.sp_mode == SpMode::follow && cur) show_p = follow_shows_p(sched, cur->line);
  ImGui::TextUnformatted("Score tile:");
  ImGui::SameLine();
  int mode = int(s.sp_mode);
  ImGui::RadioButton("follow the step", &mode, 0);
  ImGui::SameLine();
  ImGui::RadioButton(standard ? "S" : "S_ij", &mode, 1);
  ImGui::SameLine();
  ImGui::RadioButton(standard ? "P" : "P~_ij", &mode, 2);
  s.sp_mode = SpMode(mode);
  DimText(schedule_note(sched));

  char Tr_label[32];  // the widest block label, "i=15" for Tr = 16
  std::snprintf(Tr_label, sizeof Tr_label, "i=%lld", (long long)(t.Tr - 1));
  // Statistics columns beside O as they stand in HBM: l and m (fa1), L (fa2), none (standard).
  const int n_stats = sched == Schedule::fa1 ? 2 : sched == Schedule::fa2 ? 1 : 0;
  const float ns = float(n_stats);
  // Geometry: the sequence axes share one cell size cs; the d axis gets cd >= cs so that Q, O,
  // K^T and V^T stay readable when N >> d (N = 1024, d = 64).
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float lab = ImGui::GetTextLineHeight() + 4, gap = 12, margin = ImGui::CalcTextSize(Tr_label).x + 12;
  // The legend: colour bars, then the keys (Swatch below), wrapped into as many rows as they need.
  const char* keys[11] = {"read from HBM", "written to HBM", "computed on chip", "in SRAM", "loaded before",
                          "not there yet", p.mask.any() ? "masked (-inf)" : "-inf", nullptr, nullptr, nullptr, nullptr};
  int n_keys = 7;
  if (v.skipped_tiles) {
    keys[n_keys++] = "skipped tile";
    keys[n_keys++] = "skipped by this step";
  }
  if (p.dropout > 0) keys[n_keys++] = "dropped (dropout)";
  float key_rows = 1, row_w = 0;
  for (int e = 0; e < n_keys; ++e) {
    const float kw = ImGui::GetTextLineHeight() + 4 + ImGui::CalcTextSize(keys[e]).x + 12;
    if (row_w > 0 && row_w + kw > avail.x) {
      ++key_rows;
      row_w = 0;
    }
    row_w += kw;
  }
  const float legend_h = ImGui::GetTextLineHeightWithSpacing() * (2.2f + key_rows);
  const float W = avail.x - margin - (2 + ns) * gap, H = avail.y - 4 * lab - gap - legend_h;
  const float nq = float(p.nq), nk = float(p.nk), d = float(p.d);
  float cs = std::min(W / (2 * d + nk + ns), H / (2 * d + nq));
  float cd = cs, cv = cs;  // cv: width of the l, m, L columns
  if (cs < 14) {
    cv = 14;
    cs = std::min((W - ns * cv) / (2 * d + nk), H / (2 * d + nq));
    cd = cs;
  }
  const float dmin = 0.12f * std::min(W, H);
  if (d * cs < dmin) {
    cd = dmin / d;
    cs = std::min((W - ns * cv - 2 * dmin) / nk, (H - 2 * dmin) / nq);
  }
  cs = std::clamp(cs, 0.05f, 64.0f);
  cd = std::clamp(cd, cs, 64.0f);
  if (cv < 14) cv = std::max(cs, 14.0f);
  cv = std::min(cv, 64.0f);

  const float x_q = origin.x + margin, x_s = x_q + d * cd + gap, x_o = x_s + nk * cs + gap;
  const float x_l = x_o + d * cd + gap, x_m = x_l + cv + gap * 0.5f;
  const float y_k = origin.y + lab, y_s = y_k + d * cd + 2 * lab, y_v = y_s + nq * cs + gap + lab;

  const Mat* skipped = v.skipped_tiles ? &v.skipped : nullptr;
  Grid gq{MatId::Q, "Q", &gs.Q, ImVec2(x_q, y_s), cd, cs, int(p.nq), int(p.d), false, int(t.Br), 0};
  Grid gk{MatId::K, "K^T", &gs.K, ImVec2(x_s, y_k), cs, cd, int(p.d), int(p.nk), true, 0, int(t.Bc)};
  Grid gv{MatId::V, "V^T", &gs.V, ImVec2(x_s, y_v), cs, cd, int(p.d), int(p.nk), true, 0, int(t.Bc)};
  Grid gsp{show_p ? MatId::P : MatId::S, "", show_p ? &gs.P : &gs.S, ImVec2(x_s, y_s), cs, cs,
           int(p.nq), int(p.nk), false, int(t.Br), standard ? 0 : int(t.Bc), show_p ? &v.p_ready : &v.s_ready,
           skipped};
  if (standard) gsp.col_block = int(t.Bc);  // readiness is per row block; lines still at Bc
  Grid go{MatId::O, "O", &gs.O, ImVec2(x_o, y_s), cd, cs, int(p.nq), int(p.d), false, int(t.Br), 0};
  Grid gl{MatId::l, "l", &gs.l, ImVec2(x_l, y_s), cv, cs, int(p.nq), 1, false, int(t.Br), 0};
  Grid gm{MatId::m, "m", &gs.m, ImVec2(x_m, y_s), cv, cs, int(p.nq), 1, false, int(t.Br), 0};
  Grid gL{MatId::L, "L", &gs.L, ImVec2(x_l, y_s), cv, cs, int(p.nq), 1, false, int(t.Br), 0};

  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text), dim = ImGui::GetColorU32(kDimText);
  char buf[96];
  std::snprintf(buf, sizeof buf, "K^T (d x Nk = %lld x %lld), HBM", (long long)p.d, (long long)p.nk);
  dl->AddText(ImVec2(x_s, y_k - lab), text, buf);
  std::snprintf(buf, sizeof buf, "Q (%lld x %lld), HBM", (long long)p.nq, (long long)p.d);
  dl->AddText(ImVec2(x_q, y_s - lab), text, p.d * cd > ImGui::CalcTextSize(buf).x ? buf : "Q");
  // The score label in the longest form that fits above S.
  if (standard)
    std::snprintf(buf, sizeof buf, "%s (%lld x %lld), in HBM", show_p ? "P = softmax(S)" : "S = tau Q K^T",
                  (long long)p.nq, (long long)p.nk);
  else
    std::snprintf(buf, sizeof buf, "%s tiles (%lld x %lld), on chip only",
                  !show_p ? "S_ij = tau Q_i K_j^T" : sched == Schedule::fa2 ? "P~_ij = exp(S_ij - m_i)" : "P~_ij = exp(S_ij - m~_ij)",
                  (long long)p.nq, (long long)p.nk);
  if (ImGui::CalcTextSize(buf).x > nk * cs + gap * 0.5f) {
    if (standard) std::snprintf(buf, sizeof buf, "%s, HBM", show_p ? "P" : "S");
    else std::snprintf(buf, sizeof buf, "%s tiles, on chip", show_p ? "P~_ij" : "S_ij");
  }
  dl->AddText(ImVec2(x_s, y_s - lab), text, buf);
  std::snprintf(buf, sizeof buf, "O (%lld x %lld), HBM", (long long)p.nq, (long long)p.d);
  dl->AddText(ImVec2(x_o, y_s - lab), text, p.d * cd > ImGui::CalcTextSize(buf).x ? buf : "O");
  if (sched == Schedule::fa1) {
    dl->AddText(ImVec2(x_l, y_s - lab), text, "l");
    dl->AddText(ImVec2(x_m, y_s - lab), text, "m");
  } else if (sched == Schedule::fa2) {
    dl->AddText(ImVec2(x_l, y_s - lab), text, "L");
  }
  std::snprintf(buf, sizeof buf, "V^T (d x Nk = %lld x %lld), HBM", (long long)p.d, (long long)p.nk);
  dl->AddText(ImVec2(x_s, y_v - lab), text, buf);

  ImFont* cell_font = gs.mono;
  const Grid* grids[8] = {&gq, &gk, &gv, &gsp, &go, nullptr, nullptr, nullptr};
  if (sched == Schedule::fa1) {
    grids[5] = &gl;
    grids[6] = &gm;
  } else if (sched == Schedule::fa2) {
    grids[5] = &gL;
  }
  for (const Grid* g : grids)
    if (g) draw_grid(dl, s, *g, cell_font);
  if (!v.S.size()) {
    dl->AddText(ImVec2(x_s + 8, y_s + 8), text, "(too large to display)");
  }

  // Block labels and visited marks: a green dot beside a block already loaded once.
  const float dot = 3.5f;
  for (int64_t i = 0; i < t.Tr; ++i) {
    const float y0 = y_s + float(i * t.Br) * cs, hgt = float(t.rows_in_q_block(i, p.nq)) * cs;
    if (hgt >= ImGui::GetTextLineHeight()) {
      std::snprintf(buf, sizeof buf, "i=%lld", (long long)i);
      dl->AddText(ImVec2(origin.x, y0 + hgt * 0.5f - ImGui::GetTextLineHeight() * 0.5f), dim, buf);
    }
    const int64_t first = v.q_first_load[size_t(i)];
    if (first >= 0 && float(first) < k && hgt >= 2 * dot)
      dl->AddCircleFilled(ImVec2(x_q - 5, y0 + std::min(hgt * 0.5f, 8.0f)), dot, kVisitedCol);
  }
  for (int64_t j = 0; j < t.Tc; ++j) {
    const float x0 = x_s + float(j * t.Bc) * cs, wid = float(t.rows_in_kv_block(j, p.nk)) * cs;
    std::snprintf(buf, sizeof buf, "j=%lld", (long long)j);
    if (wid >= ImGui::CalcTextSize(buf).x + 4)
      dl->AddText(ImVec2(x0 + wid * 0.5f - ImGui::CalcTextSize(buf).x * 0.5f, y_k + d * cd + 1), dim, buf);
    const int64_t first = v.kv_first_load[size_t(j)];
    if (first >= 0 && float(first) < k && wid >= 2 * dot)
      dl->AddCircleFilled(ImVec2(x0 + std::min(wid * 0.5f, 8.0f), y_k - 5), dot, kVisitedCol);
  }

  // The current step: SRAM-resident blocks (thin white), reads (blue), writes (orange), the
  // tile computed on chip (yellow), a skipped tile (red).
  const bool dropout_now = [&] {
    if (!cur || cur->i < 0 || p.dropout <= 0 || !show_p) return false;
    const int64_t j = standard ? 0 : cur->j;
    if (j < 0) return false;
    const int64_t ks = v.keep_step[size_t(cur->i * t.Tc + j)];
    return ks >= 0 && float(ks) < k;
  }();
  if (cur) {
    const auto& se = cur->sram_elems;
    const int64_t r0 = cur->i >= 0 ? cur->i * t.Br : 0, rows = cur->i >= 0 ? t.rows_in_q_block(cur->i, p.nq) : 0;
    // K and V blocks: block j, or all of K / V in Algorithm 0 (loaded whole at its first row block).
    const int64_t c0 = cur->j >= 0 ? cur->j * t.Bc : 0;
    const int64_t cols = cur->j >= 0 ? t.rows_in_kv_block(cur->j, p.nk) : p.nk;
    if (cur->i >= 0 && se[int(Slot::Qi)] > 0) outline_rows(dl, gq, r0, rows, kResidentCol, 1.5f);
    if (cur->i >= 0 && se[int(Slot::Oi)] > 0) outline_rows(dl, go, r0, rows, kResidentCol, 1.5f);
    if (se[int(Slot::Kj)] > 0) outline_rows(dl, gk, c0, cols, kResidentCol, 1.5f);
    if (se[int(Slot::Vj)] > 0) outline_rows(dl, gv, c0, cols, kResidentCol, 1.5f);
    if (cur->i >= 0) {
      if (tensor_read_now(s, Tensor::Q)) outline_rows(dl, gq, r0, rows, kReadCol, 3.0f);
      if (tensor_read_now(s, Tensor::O)) outline_rows(dl, go, r0, rows, kReadCol, 3.0f);
      if (tensor_read_now(s, Tensor::l)) outline_rows(dl, gl, r0, rows, kReadCol, 3.0f);
      if (tensor_read_now(s, Tensor::m)) outline_rows(dl, gm, r0, rows, kReadCol, 3.0f);
      if (tensor_read_now(s, Tensor::S) || tensor_read_now(s, Tensor::P)) outline_rows(dl, gsp, r0, rows, kReadCol, 3.0f);
    }
    if (tensor_read_now(s, Tensor::K)) outline_rows(dl, gk, c0, cols, kReadCol, 3.0f);
    if (tensor_read_now(s, Tensor::V)) outline_rows(dl, gv, c0, cols, kReadCol, 3.0f);
    const bool skip = cur->line == Line::A1_SKIP || cur->line == Line::A2_SKIP;
    if (skip && cur->j >= 0) {  // the skipped tile, or (fa1, i out of scope) the whole column j
      const float a0 = cur->i >= 0 ? float(r0) : 0, a1 = cur->i >= 0 ? float(r0 + rows) : nq;
      outline(dl, gsp, a0, a1, float(c0), float(c0 + cols), kSkipNowCol, 3.0f);
    } else if (!standard && cur->i >= 0 && cur->j >= 0) {
      const bool computing = cur->line == Line::A1_L9 || cur->line == Line::A1_L10 || cur->line == Line::A2_L8 ||
                             cur->line == Line::A2_L9 || cur->line == Line::A2_L10;
      outline(dl, gsp, float(r0), float(r0 + rows), float(c0), float(c0 + cols),
              computing ? kComputeCol : kResidentCol, computing ? 3.0f : 1.5f);
    }
    if (dropout_now) {
      const int64_t j = standard ? 0 : cur->j;
      const Mat& keep = v.trace.steps[size_t(v.keep_step[size_t(cur->i * t.Tc + j)])].dropout_keep;
      draw_dropped(dl, gsp, keep, r0, standard ? 0 : c0);
    }
    for (const HbmWrite& w : cur->writes) {
      const Grid* g = w.tensor == Tensor::O ? &go : w.tensor == Tensor::l ? &gl : w.tensor == Tensor::m ? &gm
                    : w.tensor == Tensor::L ? &gL : (w.tensor == Tensor::S || w.tensor == Tensor::P) ? &gsp : nullptr;
      if (g) outline_rows(dl, *g, w.row0, w.data.rows(), kWriteCol, 3.0f);
    }
  }
  for (const Grid* g : grids)
    if (g) hover_grid(s, *g);

  // Legend.
  const float ly = y_v + d * cd + gap;
  const float bar_w = std::min(140.0f, avail.x * 0.16f), bar_h = 10;
  char lo[32], hi[32];
  std::snprintf(lo, sizeof lo, "%.2g", -double(v.range_qkv));
  std::snprintf(hi, sizeof hi, "%.2g", double(v.range_qkv));
  colorbar(dl, gs.legend_div, ImVec2(origin.x, ly), bar_w, bar_h, lo, hi, "Q K V");
  std::snprintf(lo, sizeof lo, "%.2g", show_p ? 0.0 : -double(v.range_s));
  std::snprintf(hi, sizeof hi, "%.2g", show_p ? 1.0 : double(v.range_s));
  const float x2 = origin.x + bar_w + ImGui::CalcTextSize("Q K V").x + 24;
  colorbar(dl, show_p ? gs.legend_seq : gs.legend_div, ImVec2(x2, ly), bar_w, bar_h, lo, hi,
           show_p ? (standard ? "P" : "P~") : "S");
  std::snprintf(lo, sizeof lo, "%.2g", -double(v.range_o));
  std::snprintf(hi, sizeof hi, "%.2g", double(v.range_o));
  const float x3 = x2 + bar_w + ImGui::CalcTextSize("P~").x + 24;
  colorbar(dl, gs.legend_div, ImVec2(x3, ly), bar_w, bar_h, lo, hi, "O");
  ImGui::SetCursorScreenPos(ImVec2(origin.x, ly + ImGui::GetTextLineHeightWithSpacing() * 1.6f));
  const ImU32 key_cols[11] = {kReadCol, kWriteCol, kComputeCol, kResidentCol, kVisitedCol, kEmptyEdgeCol, kNegInfCol,
                              v.skipped_tiles ? kSkipHatch : kDropCol, kSkipNowCol, kDropCol, kDropCol};
  const bool key_outline[11] = {true, true, true, true, false, true, false, false, true, false, false};
  for (int e = 0; e < n_keys; ++e) Swatch(key_cols[e], key_outline[e], keys[e], e > 0);
}

// =============================================================================================
// [SECTION] Lesson view
// =============================================================================================

void DrawLessonView(AppState& s) {
  LessonState& ls = s.lesson;
  DimText("Softmax of a vector computed block by block: each block contributes its own max m~ and "
          "sum l~, and the running (m, l) is rescaled onto the new max when blocks merge. This is "
          "what lines 10 and 11 of Algorithm 1 do for every row of S.");
  bool changed = false;
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 18);
  changed |= ImGui::InputText("values", ls.values, sizeof ls.values);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6);
  changed |= ImGui::InputInt("block size", &ls.block);
  if (changed) ls.recompute();
  if (!ls.error.empty()) ErrorText(ls.error + "  (showing the last valid lesson)");
  const Lesson& L = ls.lesson;
  const int nb = int(L.blocks.size());
  if (ImGui::Button("Reset##lesson")) ls.shown = 0;
  ImGui::SameLine();
  if (ImGui::Button("< Previous block")) ls.shown = std::max(0, ls.shown - 1);
  ImGui::SameLine();
  if (ImGui::Button("Next block >")) ls.shown = std::min(nb, ls.shown + 1);
  ImGui::SameLine();
  if (ImGui::Button("All blocks")) ls.shown = nb;
  ImGui::SameLine();
  ImGui::Text("merged %d of %d blocks", ls.shown, nb);

  if (ls.shown > 0 && ls.shown <= nb) {
    const LessonBlock& b = L.blocks[size_t(ls.shown - 1)];
    char text[512];
    std::snprintf(text, sizeof text,
                  "Block %d (x[%zu..%zu]): local max m~ = %.4g, local sum l~ = sum e^(x - m~) = %.4g. "
                  "Merge: m = max(%.4g, %.4g) = %.4g;  l = e^(%.4g - %.4g) * %.4g + e^(%.4g - %.4g) * %.4g = %.4g.",
                  ls.shown, b.begin, b.end - 1, b.local_max, b.local_sum, b.m_old, b.local_max, b.m_new,
                  b.m_old, b.m_new, b.l_old, b.local_max, b.m_new, b.local_sum, b.l_new);
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextUnformatted(text);
    ImGui::PopTextWrapPos();
  } else {
    ImGui::TextUnformatted("Start: m = -inf, l = 0 (nothing seen yet).");
  }

  const ImGuiTableFlags tf = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit;
  if (ImGui::BeginTable("blocks", 8, tf | ImGuiTableFlags_ScrollX,
                        ImVec2(0, ImGui::GetFrameHeightWithSpacing() * float(std::min(ls.shown, nb) + 1) + 20))) {
    ImGui::TableSetupColumn("block");
    ImGui::TableSetupColumn("x");
    ImGui::TableSetupColumn("m~ (local max)");
    ImGui::TableSetupColumn("l~ (local sum)");
    ImGui::TableSetupColumn("m: old -> new");
    ImGui::TableSetupColumn("l: old -> new");
    ImGui::TableSetupColumn("e^(m_old - m_new)");
    ImGui::TableSetupColumn("e^(m~ - m_new)");
    ImGui::TableHeadersRow();
    char a[32], b2[32];
    for (int k = 0; k < std::min(ls.shown, nb); ++k) {
      const LessonBlock& b = L.blocks[size_t(k)];
      ImGui::TableNextRow();
      if (k == ls.shown - 1) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, IM_COL32(70, 90, 160, 255));
      ImGui::TableNextColumn();
      ImGui::Text("%d", k + 1);
      ImGui::TableNextColumn();
      for (size_t e = b.begin; e < b.end && e < b.begin + 6; ++e) {
        if (e > b.begin) ImGui::SameLine(0, 4);
        ImGui::Text("%.3g", L.values[e]);
      }
      if (b.end > b.begin + 6) {
        ImGui::SameLine(0, 4);
        ImGui::TextUnformatted("...");
      }
      ImGui::TableNextColumn();
      ImGui::Text("%.4g", b.local_max);
      ImGui::TableNextColumn();
      ImGui::Text("%.4g", b.local_sum);
      ImGui::TableNextColumn();
      ImGui::Text("%s -> %.4g", fmt_g(a, sizeof a, b.m_old), b.m_new);
      ImGui::TableNextColumn();
      ImGui::Text("%s -> %.4g", fmt_g(b2, sizeof b2, b.l_old), b.l_new);
      ImGui::TableNextColumn();
      ImGui::Text("%.4g", b.alpha);
      ImGui::TableNextColumn();
      ImGui::Text("%.4g", b.beta);
    }
    ImGui::EndTable();
  }

  // Softmax so far (online, with the running m and l) beside the direct softmax.
  ImGui::Spacing();
  ImGui::TextUnformatted("softmax(x): online with the running (m, l) so far, and direct in one pass");
  const size_t seen = ls.shown > 0 && ls.shown <= nb ? L.blocks[size_t(ls.shown - 1)].end : 0;
  const double m_run = ls.shown > 0 && ls.shown <= nb ? L.blocks[size_t(ls.shown - 1)].m_new : 0;
  const double l_run = ls.shown > 0 && ls.shown <= nb ? L.blocks[size_t(ls.shown - 1)].l_new : 1;
  const float row_h = ImGui::GetFrameHeightWithSpacing();
  const float fit = row_h * float(L.values.size() + 1) + 8;
  const float room = std::max(ImGui::GetContentRegionAvail().y - ImGui::GetTextLineHeightWithSpacing() * 2, 120.0f);
  if (ImGui::BeginTable("softmax", 4, tf | ImGuiTableFlags_ScrollY, ImVec2(0, std::min(fit, room)))) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("k");
    ImGui::TableSetupColumn("x_k");
    ImGui::TableSetupColumn("online e^(x_k - m) / l", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableSetupColumn("direct softmax", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableHeadersRow();
    char ov[48], dv[48];
    for (size_t e = 0; e < L.values.size(); ++e) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::Text("%zu", e);
      ImGui::TableNextColumn();
      ImGui::Text("%.4g", L.values[e]);
      ImGui::TableNextColumn();
      if (e < seen) {
        const double o = std::exp(L.values[e] - m_run) / l_run;
        std::snprintf(ov, sizeof ov, "%.6f", o);
        ImGui::ProgressBar(float(o), ImVec2(-1, 0), ov);
      } else {
        ImGui::TextDisabled("not seen yet");
      }
      ImGui::TableNextColumn();
      std::snprintf(dv, sizeof dv, "%.6f", L.direct[e]);
      ImGui::ProgressBar(float(L.direct[e]), ImVec2(-1, 0), dv);
    }
    ImGui::EndTable();
  }
  if (ls.shown == nb && nb > 0)
    ImGui::TextColored(kPassText, "All blocks merged: max |online - direct| = %.3g", L.max_diff);
  else
    DimText("Until every block is merged, the online values are relative to the max seen so far.");
}

// =============================================================================================
// [SECTION] Compare view
// =============================================================================================

void DrawCompareView(AppState& s, GpuState& gs) {
  CompareState& c = s.compare;
  DimText("Load a result computed elsewhere (for instance the CUDA backend's O and lse as .npy) "
          "and compare it with this CPU trace's output. Relative error is normwise: "
          "max |x - ref| / max |ref|.");
  ImGui::PushItemWidth(-ImGui::GetFontSize() * 9);
  ImGui::InputText("O (.npy, Nq x d)", c.o_path, sizeof c.o_path);
  ImGui::InputText("lse (.npy, Nq)", c.lse_path, sizeof c.lse_path);
  ImGui::PopItemWidth();
  if (ImGui::Button("Load and compare")) s.load_compare();
  ImGui::SameLine();
  if (ImGui::Button("Save this trace's O and lse to these paths")) {
    try {
      if (!c.o_path[0]) std::snprintf(c.o_path, sizeof c.o_path, "flashstep-O.npy");
      if (!c.lse_path[0]) std::snprintf(c.lse_path, sizeof c.lse_path, "flashstep-lse.npy");
      write_npy(c.o_path, s.run->trace.O);
      write_npy(c.lse_path, s.run->trace.lse);
      c.message = std::string("wrote ") + c.o_path + " and " + c.lse_path;
      c.error.clear();
    } catch (const InputError& e) {
      c.error = e.what();
    }
  }
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 7);
  ImGui::InputDouble("relative tolerance", &c.tolerance, 0, 0, "%.1e");
  if (!c.error.empty()) ErrorText(c.error);
  if (!c.message.empty()) DimText(c.message.c_str());
  if (!c.loaded) {
    DimText("Nothing loaded yet.");
    return;
  }
  ImGui::Text("O:   max abs %.3g   max rel %.3g", c.o_stats.max_abs, c.o_stats.max_rel);
  if (c.lse.size()) ImGui::Text("lse: max abs %.3g   max rel %.3g", c.lse_stats.max_abs, c.lse_stats.max_rel);
  if (c.passed()) ImGui::TextColored(kPassText, "PASS (max rel <= %.1e)", c.tolerance);
  else ImGui::TextColored(kErrorText, "FAIL (max rel > %.1e)", c.tolerance);

  // Error heatmap |O - O_trace|, log scale.
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float legend_h = ImGui::GetTextLineHeightWithSpacing() * 2.5f;
  const int rows = int(c.err.rows()), cols = int(c.err.cols());
  if (rows == 0 || cols == 0) return;
  const float cell = std::min({(avail.x - 10) / float(cols), (avail.y - legend_h) / float(rows), 40.0f});
  const float ch = cell, cw = std::min(std::max(cell, (avail.x * 0.5f) / float(cols)), 40.0f);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 p0 = origin, p1(origin.x + cw * float(cols), origin.y + ch * float(rows));
  if (gs.err.valid()) dl->AddImage(gs.err.texture(), p0, p1);
  dl->AddRect(ImVec2(p0.x - 1, p0.y - 1), ImVec2(p1.x + 1, p1.y + 1), IM_COL32(110, 110, 120, 255));
  if (ImGui::IsWindowHovered()) {
    const ImVec2 mp = ImGui::GetIO().MousePos;
    if (mp.x >= p0.x && mp.y >= p0.y && mp.x < p1.x && mp.y < p1.y) {
      const int r = std::clamp(int((mp.y - p0.y) / ch), 0, rows - 1), q = std::clamp(int((mp.x - p0.x) / cw), 0, cols - 1);
      ImGui::SetTooltip("O[%d, %d]: loaded %.8g, trace %.8g, |error| %.3g", r, q, double(c.O(r, q)),
                        double(s.run->trace.O(r, q)), double(c.err(r, q)));
    }
  }
  char lo[32], hi[32];
  std::snprintf(lo, sizeof lo, "1e%.0f", double(c.log_lo));
  std::snprintf(hi, sizeof hi, "1e%.0f", double(c.log_hi));
  colorbar(dl, gs.legend_log, ImVec2(origin.x, p1.y + 6), 200, 10, lo, hi, "|O - O_trace|");
  ImGui::Dummy(ImVec2(p1.x - p0.x, p1.y - p0.y + legend_h));
}

}  // namespace

void DrawCenterPanel(AppState& s, GpuState& g, const Layout& l) {
  if (!BeginPanel("FlashAttention, tile by tile", l.center_pos, l.center_size, s)) return;
  if (ImGui::BeginTabBar("views")) {
    const bool force = s.view_changed;
    s.view_changed = false;
    auto tab = [&](const char* name, View v) {
      const ImGuiTabItemFlags f = force && s.view == v ? ImGuiTabItemFlags_SetSelected : 0;
      const bool open = ImGui::BeginTabItem(name, nullptr, f);
      if (open && !force) s.view = v;
      return open;
    };
    if (tab("Tiles", View::tiles)) {
      DrawTilesView(s, g);
      ImGui::EndTabItem();
    }
    if (tab("Online-softmax lesson", View::lesson)) {
      DrawLessonView(s);
      ImGui::EndTabItem();
    }
    if (tab("Compare", View::compare)) {
      DrawCompareView(s, g);
      ImGui::EndTabItem();
    }
    ImGui::EndTabBar();
  }
  ImGui::End();
}

// =============================================================================================
// [SECTION] Memory panel
// =============================================================================================

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

// =============================================================================================
// [SECTION] Online-softmax panel
// =============================================================================================

void DrawSoftmaxPanel(AppState& s, const Layout& l) {
  if (!BeginPanel("Online softmax state", l.softmax_pos, l.softmax_size, s)) return;
  const RunView& v = *s.run;
  const Problem& p = v.trace.problem;
  const Tiling& t = v.trace.tiling;
  const Step* cur = current_step(s);
  const int64_t k = int64_t(s.index());
  char b1[48], b2[32], b3[48];
  const Schedule sched = v.schedule();
  const bool fa2 = sched == Schedule::fa2;

  if (sched == Schedule::standard) {
    DimText("Algorithm 0 takes the softmax of whole rows of S at line 2 (max, exp, sum, divide): "
            "there are no running statistics to merge. Switch the schedule to fa1 or fa2 to see them.");
    ImGui::End();
    return;
  }
  if (!cur || cur->i < 0) {
    ImGui::TextUnformatted("No block i in scope at this line.");
  } else if (cur->j < 0) {
    ImGui::Text("Block i = %d: j not in scope.", cur->i);
    DimText(fa2 ? "After the j loop: O_i is divided by l_i once and L_i = m_i + log l_i; the plot below "
                  "shows how m_i and l_i got there."
                : "No block j in scope at this line.");
  } else {
    const int64_t i = cur->i, j = cur->j, r0 = i * t.Br;
    const int64_t s10 = v.tilde_step[size_t(i * t.Tc + j)], s11 = v.merge_step[size_t(i * t.Tc + j)];
    const Step* st10 = s10 >= 0 && s10 < k ? &v.trace.steps[size_t(s10)] : nullptr;
    const Step* st11 = s11 >= 0 && s11 < k ? &v.trace.steps[size_t(s11)] : nullptr;
    ImGui::Text("Block i = %lld (rows %lld-%lld), j = %lld", (long long)i, (long long)r0,
                (long long)(r0 + t.rows_in_q_block(i, p.nq) - 1), (long long)j);
    if (fa2) {
      DimText("a = e^(m_i^(j-1) - m_i^(j)); O_i and l_i stay unnormalised until L12");
      if (!st11) DimText(cur->line == Line::A2_SKIP ? "This tile is skipped: m_i and l_i are unchanged."
                                                    : "Line 9 of this (i, j) has not run yet.");
    } else {
      DimText("rescale factors: a = e^(m_i - m_i^new), b = e^(m~_ij - m_i^new)");
      if (!st10) DimText(cur->line == Line::A1_SKIP ? "This tile is skipped: m_i and l_i are unchanged."
                                                    : "Line 10 of this (i, j) has not run yet.");
      else if (!st11) DimText("Line 10 done: m~_ij, l~_ij known; line 11 merges them next.");
    }
    const ImGuiTableFlags tf = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY |
                               ImGuiTableFlags_ScrollX | ImGuiTableFlags_SizingFixedFit;
    const float table_h = std::min(ImGui::GetTextLineHeightWithSpacing() * float(t.rows_in_q_block(i, p.nq) + 2),
                                   ImGui::GetContentRegionAvail().y * 0.45f);
    if (ImGui::BeginTable("stats", fa2 ? 7 : 9, tf, ImVec2(0, table_h))) {
      ImGui::TableSetupScrollFreeze(1, 1);
      if (fa2)
        for (const char* h : {"row", "m_i^(j-1)", "rowmax S", "m_i^(j)", "l_i^(j-1)", "l_i^(j)", "a"})
          ImGui::TableSetupColumn(h);
      else
        for (const char* h : {"row", "m_i", "m~_ij", "m_i^new", "l_i", "l~_ij", "l_i^new", "a", "b"})
          ImGui::TableSetupColumn(h);
      ImGui::TableHeadersRow();
      const int64_t rows = t.rows_in_q_block(i, p.nq);
      for (int64_t r = 0; r < rows; ++r) {
        ImGui::TableNextRow();
        if (r0 + r == s.plot_row) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0, IM_COL32(70, 90, 160, 255));
        ImGui::TableNextColumn();
        ImGui::Text("%lld", (long long)(r0 + r));
        auto cell = [&](const Step* st, Vec Step::*field) {
          ImGui::TableNextColumn();
          if (st && r < (st->*field).size()) {
            const float x = (st->*field)(r);
            if (std::isfinite(x)) ImGui::Text("%.4g", double(x));
            else ImGui::TextUnformatted(fmt_value(b1, sizeof b1, x));
          }
          else ImGui::TextDisabled("-");
        };
        cell(st11, &Step::m_old);
        cell(st10, &Step::m_tilde);
        cell(st11, &Step::m_new);
        cell(st11, &Step::l_old);
        if (!fa2) cell(st10, &Step::l_tilde);
        cell(st11, &Step::l_new);
        cell(st11, &Step::alpha);
        if (!fa2) cell(st11, &Step::beta);
      }
      ImGui::EndTable();
    }
  }

  // m_i and l_i of one row after each merge (Alg1 L11, FA2 L9) over j.
  ImGui::Checkbox("follow block", &s.plot_follow);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8);
  if (ImGui::SliderInt("row", &s.plot_row, 0, int(p.nq) - 1)) s.plot_follow = false;
  s.plot_row = std::clamp(s.plot_row, 0, int(p.nq) - 1);
  const int64_t row = s.plot_row, bi = row / t.Br;
  int done = 0;
  for (int64_t j = 0; j < t.Tc; ++j) {
    const int64_t st = v.merge_step[size_t(bi * t.Tc + j)];
    if (st >= 0 && st < k) done = int(j + 1);
  }
  // Blocks j before the row's first kept key (skipped, or all masked for this row) leave m at
  // -inf, which a plot cannot scale: the curves start at the first finite m.
  int first = 0;
  while (first < done && !std::isfinite(v.m_series(row, first))) ++first;
  if (done == 0) {
    ImGui::TextDisabled("Row %lld has not been merged yet (%s).", (long long)row, fa2 ? "FA2fwd L9" : "Alg1 L11");
  } else if (first == done) {
    ImGui::TextDisabled("Row %lld has kept no key so far: m = -inf, l = 0.", (long long)row);
  } else {
    const float* ms = &v.m_series(row, first);
    const float* lsr = &v.l_series(row, first);
    const float w = ImGui::GetContentRegionAvail().x;
    const float h = std::max((ImGui::GetContentRegionAvail().y - ImGui::GetTextLineHeightWithSpacing() * 2) * 0.5f, 30.0f);
    std::snprintf(b1, sizeof b1, "m_%lld = %s", (long long)row, fmt_value(b2, sizeof b2, ms[done - 1 - first], 4));
    ImGui::PlotLines("##m", ms, done - first, 0, b1, FLT_MAX, FLT_MAX, ImVec2(w, h));
    std::snprintf(b3, sizeof b3, "l_%lld = %s", (long long)row, fmt_value(b2, sizeof b2, lsr[done - 1 - first], 4));
    ImGui::PlotLines("##l", lsr, done - first, 0, b3, FLT_MAX, FLT_MAX, ImVec2(w, h));
    ImGui::TextDisabled("after each merge, j = %d .. %d of %lld", first, done - 1, (long long)t.Tc);
  }
  ImGui::End();
}

}  // namespace flashstep::gui
