// The compare view's snapshot part: a snapshot folder (or the GPU run) against the CPU trace at
// the cursor's (i, j): the folder's O_i, l_i, m_i, the trace's, and their difference in units of
// the tolerance (app/gui/snapshot_compare.h), then the largest difference of every j with the
// tolerance line, the first j over it one click away. Tiles are small (Br x d), so they are
// drawn as rectangles per element rather than as textures.
#include "app/gui/decode_view.h"
#include "app/gui/gpu_snapshots.h"
#include "app/gui/panels.h"
#include "app/gui/widgets.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace flashstep::gui {

namespace {

const ImU32 kNoValueCol = IM_COL32(92, 77, 117, 255);  // -inf (m of a row no key reached yet)
const ImU32 kOverCol = IM_COL32(235, 60, 60, 255);     // over tolerance
const ImU32 kFrameCol = IM_COL32(110, 110, 120, 255);
// The difference's log scale: 1e-4 of the tolerance (dark) to the tolerance (yellow).
constexpr float kDiffLogLo = -4.0f;

ImU32 lerp_col(ImVec4 a, ImVec4 b, float t) {
  return ImGui::ColorConvertFloat4ToU32(ImVec4(a.x + (b.x - a.x) * t, a.y + (b.y - a.y) * t, a.z + (b.z - a.z) * t, 1));
}

// shaders/heatmap.frag's diverging map over [-hi, hi].
ImU32 value_col(float x, float hi) {
  if (!std::isfinite(x)) return kNoValueCol;
  const float t = std::clamp(0.5f + 0.5f * x / std::max(hi, 1e-30f), 0.0f, 1.0f);
  const ImVec4 blue(0.13f, 0.35f, 0.78f, 1), white(0.97f, 0.97f, 0.97f, 1), red(0.80f, 0.15f, 0.15f, 1);
  return t < 0.5f ? lerp_col(blue, white, t * 2) : lerp_col(white, red, t * 2 - 1);
}

// Dark blue at 1e-4 tolerance units and below (0 included), yellow at 1, red above.
ImU32 diff_col(float x) {
  if (!(x <= 1)) return kOverCol;
  const float t = x > 0 ? std::clamp((std::log10(x) - kDiffLogLo) / -kDiffLogLo, 0.0f, 1.0f) : 0.0f;
  const ImVec4 c0(0.06f, 0.05f, 0.22f, 1), c1(0.16f, 0.36f, 0.62f, 1), c2(0.95f, 0.85f, 0.25f, 1);
  return t < 0.5f ? lerp_col(c0, c1, t * 2) : lerp_col(c1, c2, t * 2 - 1);
}

enum class TileKind { other, cpu, diff };

// The difference's colours: the log ramp from 1e-4 of the tolerance to 1, then over.
void diff_legend(ImVec2 p) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float h = ImGui::GetFontSize() * 0.8f, w = ImGui::GetFontSize() * 6;
  const ImU32 dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  dl->AddText(p, dim, "1e-4");
  p.x += ImGui::CalcTextSize("1e-4 ").x;
  for (int k = 0; k < 32; ++k)
    dl->AddRectFilled(ImVec2(p.x + w * float(k) / 32, p.y + 2), ImVec2(p.x + w * float(k + 1) / 32, p.y + 2 + h),
                      diff_col(std::pow(10.0f, kDiffLogLo * (1 - float(k) / 31))));
  p.x += w + 4;
  dl->AddText(p, dim, "1");
  p.x += ImGui::CalcTextSize("1 ").x;
  dl->AddRectFilled(ImVec2(p.x, p.y + 2), ImVec2(p.x + h * 1.5f, p.y + 2 + h), kOverCol);
  dl->AddText(ImVec2(p.x + h * 1.5f + 4, p.y), dim, "over");
}

// One of the three tiles: O_i (rows x d), then the l_i and m_i columns. Returns its width.
float draw_tile(const SnapshotTile& t, TileKind kind, ImVec2 p0, float cell, const float (&range)[kSnapTensors],
                const char* title) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const int rows = int(t.rows), d = int(t.cpu[0].cols());
  const float gap = cell * 0.6f;
  dl->AddText(p0, ImGui::GetColorU32(ImGuiCol_Text), title);
  p0.y += ImGui::GetTextLineHeightWithSpacing();
  const std::array<Mat, kSnapTensors>& m = kind == TileKind::other ? t.other : kind == TileKind::cpu ? t.cpu : t.diff;
  // l_i and m_i as columns at least a label wide, so that they stay visible beside a large O_i.
  const float vec_w = std::max(cell, ImGui::CalcTextSize("m").x + 2);
  const float cw[kSnapTensors] = {cell, vec_w, vec_w};
  const float x_of[kSnapTensors] = {p0.x, p0.x + cell * float(d) + gap, p0.x + cell * float(d) + vec_w + 2 * gap};
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  for (int k = 0; k < kSnapTensors; ++k) {
    const Mat& x = m[size_t(k)];
    const ImVec2 q0(x_of[k], p0.y), q1(x_of[k] + cw[k] * float(x.cols()), p0.y + cell * float(rows));
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < int(x.cols()); ++c) {
        const float v = x(r, c);
        const ImVec2 a(q0.x + cw[k] * float(c), q0.y + cell * float(r));
        dl->AddRectFilled(a, ImVec2(a.x + cw[k], a.y + cell), kind == TileKind::diff ? diff_col(v) : value_col(v, range[k]));
      }
    dl->AddRect(ImVec2(q0.x - 1, q0.y - 1), ImVec2(q1.x + 1, q1.y + 1), kFrameCol);
    if (ImGui::IsWindowHovered() && mouse.x >= q0.x && mouse.y >= q0.y && mouse.x < q1.x && mouse.y < q1.y) {
      const int r = std::clamp(int((mouse.y - q0.y) / cell), 0, rows - 1);
      const int c = std::clamp(int((mouse.x - q0.x) / cw[k]), 0, int(x.cols()) - 1);
      const size_t u = size_t(k);
      ImGui::SetTooltip("%s[%lld, %d] (row %lld of block i = %lld, j = %lld)\nfolder %.9g\ntrace  %.9g\n"
                        "|difference| = %.3g of the tolerance",
                        kSnapTensorNames[k], (long long)(t.row0 + r), c, (long long)r, (long long)t.i, (long long)t.j,
                        double(t.other[u](r, c)), double(t.cpu[u](r, c)), double(t.diff[u](r, c)));
    }
    dl->AddText(ImVec2(q0.x, q1.y + 2), ImGui::GetColorU32(ImGuiCol_TextDisabled), kSnapTensorNames[k]);
  }
  return x_of[2] + vec_w - p0.x;
}

// The largest difference per j (log scale, in tolerance units) with the tolerance line at 1;
// the cursor's j outlined, the first j over tolerance red. A click on a bar moves the cursor
// to that j (the tile's Q block, or 0).
void draw_per_j(AppState& s, ImVec2 p0, float w, float h) {
  SnapshotCompare& c = s.snapshots;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const int n = int(c.worst.size());
  if (n == 0) return;
  const float label_w = ImGui::CalcTextSize("1e-10").x + 6;
  const ImVec2 a(p0.x + label_w, p0.y), b(p0.x + w, p0.y + h);
  dl->AddRectFilled(a, b, IM_COL32(20, 22, 28, 255));
  // log10 range: the smallest nonzero value (at most 1e-4) to the largest (at least 10).
  float lo = -4, hi = 1;
  for (double x : c.worst)
    if (x > 0 && std::isfinite(x)) lo = std::min(lo, std::floor(float(std::log10(x))));
    else if (!std::isfinite(x)) hi = std::max(hi, 3.0f);
  for (double x : c.worst)
    if (std::isfinite(x) && x > 0) hi = std::max(hi, std::ceil(float(std::log10(x))));
  auto y_of = [&](double x) {
    const float l = x > 0 ? (std::isfinite(x) ? float(std::log10(x)) : hi) : lo;
    return b.y - (b.y - a.y) * std::clamp((l - lo) / (hi - lo), 0.0f, 1.0f);
  };
  char buf[32];
  for (float e = lo; e <= hi; e += std::max(1.0f, std::ceil((hi - lo) / 4))) {
    std::snprintf(buf, sizeof buf, "1e%.0f", double(e));
    const float fs = ImGui::GetFontSize();  // centred on its line, but inside the plot's height
    dl->AddText(ImVec2(p0.x, std::clamp(y_of(std::pow(10.0, double(e))) - fs * 0.5f, a.y, b.y - fs)),
                ImGui::GetColorU32(ImGuiCol_TextDisabled), buf);
  }
  const float bw = (b.x - a.x) / float(n);
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  for (int j = 0; j < n; ++j) {
    const float x0 = a.x + bw * float(j), x1 = x0 + std::max(1.0f, bw - 1);
    const bool over = !(c.worst[size_t(j)] <= 1);
    const ImU32 col = j == c.first_over_j ? kOverCol : over ? IM_COL32(170, 70, 70, 255) : IM_COL32(80, 150, 220, 255);
    // An exact match (0) still gets a sliver, so that every j shows.
    dl->AddRectFilled(ImVec2(x0, std::min(y_of(c.worst[size_t(j)]), b.y - 2)), ImVec2(x1, b.y), col);
    if (bw > ImGui::CalcTextSize("j = 00").x + 4 || (j % std::max(1, int(60 / bw)) == 0)) {
      std::snprintf(buf, sizeof buf, bw > ImGui::CalcTextSize("j = 00").x + 4 ? "j = %d" : "%d", j);
      dl->AddText(ImVec2(x0 + 2, b.y + 1), ImGui::GetColorU32(ImGuiCol_TextDisabled), buf);
    }
    if (j == c.tile.j) dl->AddRect(ImVec2(x0 - 1, a.y), ImVec2(x1 + 1, b.y), IM_COL32(250, 225, 60, 255), 0, 0, 2);
    if (ImGui::IsWindowHovered() && mouse.x >= x0 && mouse.x < x0 + bw && mouse.y >= a.y && mouse.y < b.y) {
      const std::array<double, kSnapTensors>& r = c.ratio[size_t(j)];
      ImGui::SetTooltip("j = %d: max |difference| / tolerance\nO %.3g   l %.3g   m %.3g\nclick: move the cursor here", j,
                        r[0], r[1], r[2]);
      if (ImGui::IsMouseClicked(0)) s.seek(SnapshotCompare::step_after(*s.run, std::max<int64_t>(c.tile.i, 0), j));
    }
  }
  if (std::all_of(c.worst.begin(), c.worst.end(), [](double x) { return x == 0; })) {
    const char* same = "every j: difference 0 (the folder and the trace agree exactly)";
    const ImVec2 ts = ImGui::CalcTextSize(same);
    dl->AddText(ImVec2(a.x + (b.x - a.x - ts.x) * 0.5f, a.y + (b.y - a.y) * 0.6f), IM_COL32(220, 220, 220, 255), same);
  }
  const float ty = y_of(1.0);
  dl->AddLine(ImVec2(a.x, ty), ImVec2(b.x, ty), kOverCol, 1.5f);
  dl->AddText(ImVec2(b.x - ImGui::CalcTextSize("tolerance").x - 4, ty - ImGui::GetFontSize() - 1), kOverCol, "tolerance");
  dl->AddRect(a, b, kFrameCol);
  ImGui::Dummy(ImVec2(w, h + ImGui::GetTextLineHeightWithSpacing()));
}

void draw_header(AppState& s) {
  SnapshotCompare& c = s.snapshots;
  // The folder's field with both buttons after it where it keeps 8 lines' height of width, else
  // the field on a line of its own and the buttons under it: at 1024x768 and font scale 2 the
  // field shrank to a sliver and "Run on this GPU" ran past the panel's edge.
  const char* kLoad = "Load snapshot folder";
  const char* kRun = "Run on this GPU";
  const float gap = ImGui::GetStyle().ItemSpacing.x;
  const float buttons_w = ButtonWidth(kLoad) + gap + ButtonWidth(kRun) + gap;
  const float avail = ImGui::GetContentRegionAvail().x;
  const bool beside = avail - buttons_w >= ImGui::GetFontSize() * 8;
  ImGui::SetNextItemWidth(beside ? avail - buttons_w : avail);
  ImGui::InputText("##snapdir", c.dir, sizeof c.dir);
  if (beside) ImGui::SameLine();
  // "Load folder" where the whole label is wider than the panel (font scale 2.5 at 1024x768: 29 px).
  if (ImGui::Button(beside ? kLoad : FitButton({"Load snapshot folder###snapload", "Load folder###snapload"})))
    s.load_snapshots();
  SameLineIfButtonFits(kRun);
  static std::string why;  // asked once: the answer does not change while the app runs
  static const bool gpu_ok = gpu_snapshots_available(&why);
  ImGui::BeginDisabled(!gpu_ok);
  if (ImGui::Button(kRun)) {
    try {
      c.set(gpu_snapshots(s.run->trace), *s.run);
      c.error.clear();
      c.message = "made on the GPU (" + c.other.device + ")";
      s.select_snapshot_tile();
    } catch (const InputError& e) {
      c.error = e.what();
    }
  }
  ImGui::EndDisabled();
  if (!gpu_ok && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) {
    // Wrapped: the page's reason is one 200-character sentence, cut by the window's edge at 1280 px.
    ImGui::BeginTooltip();
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 28.0f);
    ImGui::TextUnformatted(why.c_str());
    ImGui::PopTextWrapPos();
    ImGui::EndTooltip();
  }
  if (!c.error.empty()) ErrorText(c.error);
  if (!c.mismatch.empty()) {
    ErrorText(std::string("this folder holds snapshots of another problem: ") + c.mismatch);
    if (c.can_load_problem) {
      if (ImGui::Button("Load the folder's problem (from its manifest)")) s.load_snapshot_problem();
    } else {
      DimText("Its inputs came from .npy files: load the same files in the problem editor.");
    }
  }
  if (!c.message.empty()) DimText(c.message.c_str());
}

}  // namespace

void DrawSnapshotCompare(AppState& s) {
  SnapshotCompare& c = s.snapshots;
  draw_header(s);
  if (!c.loaded) {
    if (c.mismatch.empty())
      DimText("Snapshots: the state after every j from `flashstep gpu --snapshots DIR` (or run --snapshots) "
              "against this trace's, step by step.");
    return;
  }
  const SnapshotProblem& p = c.cpu.problem;
  if (c.worst.empty())
    ImGui::Text("%s (%s): %s, %s (max|x - trace| / max|trace|)", c.other.source.c_str(), c.other.device.c_str(),
                schedule_name(p.schedule), c.partial_ratio.empty() ? "final state only" : "partials and final state");
  else
    ImGui::Text("%s (%s): %s, per-j tolerance O %.2g, l %.2g, m %.2g (max|x - trace| / max|trace|)",
                c.other.source.c_str(), c.other.device.c_str(), schedule_name(p.schedule), c.tol[0], c.tol[1], c.tol[2]);
  DrawPartialsCompare(s);  // decode's partials per split (decode_view.cpp)
  bool pass = c.first_over_j < 0 && c.final_o_ratio <= 1 && c.final_lse_ratio <= 1;
  for (const auto& r : c.partial_ratio) pass = pass && r[0] <= 1 && r[1] <= 1;
  ImGui::TextColored(pass ? kPassText : kErrorText, "%s", pass ? "PASS" : "FAIL");
  ImGui::SameLine();
  ImGui::Text("final O %.3g, lse %.3g of the tolerance", c.final_o_ratio, c.final_lse_ratio);
  if (c.first_over_j >= 0) {
    ImGui::SameLine();
    char label[96];
    std::snprintf(label, sizeof label, "Go to the first over tolerance: (i, j) = (%lld, %lld)", (long long)c.first_over_i,
                  (long long)c.first_over_j);
    ImGui::PushStyleColor(ImGuiCol_Button, ImVec4(0.55f, 0.15f, 0.15f, 1));
    if (ImGui::Button(label)) s.seek_first_over();
    ImGui::PopStyleColor();
  }
  if (c.worst.empty()) {
    DimText(c.partial_ratio.empty() ? "No per-j states (standard attention, or a GPU run that kept none): the final state only."
                                    : "No per-j states: the partials of each split (above) and the final state.");
    return;
  }

  const SnapshotTile& t = c.tile;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float plot_h = std::max(80.0f, avail.y * 0.28f);
  if (t.i < 0) {
    DimText("This step has no forward (i, j) (a load of K_j, V_j, the end of a row block, or the backward): "
            "step to one to see its tiles.");
  } else {
    ImGui::Text("At (i, j) = (%lld, %lld): rows %lld..%lld after inner step j; max difference O %.3g, l %.3g, m %.3g "
                "of the tolerance",
                (long long)t.i, (long long)t.j, (long long)t.row0, (long long)(t.row0 + t.rows - 1), t.max_diff[0],
                t.max_diff[1], t.max_diff[2]);
    const ImVec2 p0 = ImGui::GetCursorScreenPos();
    const float label_h = ImGui::GetTextLineHeightWithSpacing();
    // Three tiles of d cells, two gaps of 0.6 cells and the l_i, m_i columns (vec_w, at least
    // a cell), 3 cells apart: 3 (d + 1.2) + 6 cells + 6 vec_w in the width.
    const float d = float(t.cpu[0].cols()), vec_w = ImGui::CalcTextSize("m").x + 2, w = avail.x - 20;
    float fit = (w - 6 * vec_w) / (3 * d + 9.6f);
    if (fit >= vec_w) fit = w / (3 * d + 15.6f);
    const float cell = std::clamp(std::min(fit, (avail.y - plot_h - 5 * label_h) / float(t.rows)), 2.0f, 28.0f);
    // Each tensor on the scale of its own largest finite |value| in the trace's tile.
    float range[kSnapTensors] = {0, 0, 0};
    for (int k = 0; k < kSnapTensors; ++k)
      for (int64_t e = 0; e < t.cpu[size_t(k)].size(); ++e)
        if (std::isfinite(t.cpu[size_t(k)].data()[e])) range[k] = std::max(range[k], std::abs(t.cpu[size_t(k)].data()[e]));
    char title[96];
    std::snprintf(title, sizeof title, "folder (%s): O_i  l_i  m_i", c.other.source.c_str());
    // Each tile at least as wide as its title, so that no title runs into the next tile.
    const char* titles[3] = {title, "CPU trace: O_i  l_i  m_i", "|difference| / tolerance"};
    const TileKind kinds[3] = {TileKind::other, TileKind::cpu, TileKind::diff};
    float x = p0.x;
    for (int k = 0; k < 3; ++k) {
      const float w = draw_tile(t, kinds[k], ImVec2(x, p0.y), cell, range, titles[k]);
      if (k == 2) diff_legend(ImVec2(x, p0.y + label_h * 2 + cell * float(t.rows) + 4));
      x += std::max(w, ImGui::CalcTextSize(titles[k]).x) + 3 * cell;
    }
    ImGui::Dummy(ImVec2(avail.x, label_h * 3 + cell * float(t.rows) + 8));
  }
  ImGui::Text("Largest |difference| / tolerance after every j (over O, l, m); click a bar to go to that j");
  draw_per_j(s, ImGui::GetCursorScreenPos(), ImGui::GetContentRegionAvail().x, plot_h);
}

}  // namespace flashstep::gui
