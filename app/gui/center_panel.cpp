// The centre panel: the tiles, lesson, compare, bench and pipeline views as tabs (a combo where
// their labels do not fit).
#include "app/gui/panels.h"
#include "app/gui/widgets.h"

#include <imgui_internal.h>  // ImGuiTabBar: the tabs' widths as drawn (for --dump-state)

#include <algorithm>

namespace flashstep::gui {

void DrawCenterPanel(AppState& s, GpuState& g, const Layout& l) {
  if (s.row) return DrawRowCenter(s, g, l);
  if (!BeginPanel("FlashAttention, tile by tile", l.center_pos, l.center_size, s)) return;
  if (s.course.active && s.course.centre() == course::CentreView::roofline) {
    DrawCourseRoofline(s);
    ImGui::End();
    return;
  }
  if (s.course.active && s.course.centre() == course::CentreView::io_explorer) {
    DrawCourseIoExplorer(s);
    ImGui::End();
    return;
  }
  // The views as tabs where their labels fit the panel: the lesson's in full ("Online-softmax
  // lesson") or as "Lesson"; where not even the short labels fit (1024x768 in presentation mode
  // cut them to "Less...", "Com...") a combo picks the view instead.
  auto draw_view = [&](View v) {
    switch (v) {
      case View::tiles:
        if (PagedStripHeight(s) > 0) DrawPagedStrip(s);  // decode --page-size: the pages above the tiles
        DrawTilesView(s, g);
        break;
      case View::lesson: DrawLessonView(s); break;
      case View::compare: DrawCompareView(s, g); break;
      case View::bench: DrawBenchView(s); break;
      case View::pipeline: DrawPipelineView(s); break;
    }
  };
  const ImGuiStyle& st = ImGui::GetStyle();
  auto labels_w = [&](std::initializer_list<const char*> names) {
    float w = 0;
    for (const char* name : names) w += ImGui::CalcTextSize(name).x + 2 * st.FramePadding.x + st.ItemInnerSpacing.x;
    return w;
  };
  const float avail = ImGui::GetContentRegionAvail().x;
  const bool full = labels_w({"Tiles", "Online-softmax lesson", "Compare", "Bench", "Pipeline"}) <= avail;
  const bool tabs = full || labels_w({"Tiles", "Lesson", "Compare", "Bench", "Pipeline"}) <= avail;
  static bool picked_by_combo = false;  // the tab bar selects s.view again when it comes back
  s.view_tabs_cut = 0;
  s.view_combo = !tabs;
  if (!tabs) {
    // The lesson's long name where the combo has room for it, else "Lesson" (font scale 2.5 at
    // 1024x768 cut the preview to "Online-softr").
    static const char* const long_names[] = {"Tiles", "Online-softmax lesson", "Compare", "Bench", "Pipeline"};
    static const char* const short_names[] = {"Tiles", "Lesson", "Compare", "Bench", "Pipeline"};
    const float room = avail - ImGui::CalcTextSize("view").x - st.ItemInnerSpacing.x;
    const float chrome = ImGui::GetFrameHeight() + 2 * st.FramePadding.x;  // the arrow and the padding
    const bool long_fits = ImGui::CalcTextSize(long_names[1]).x + chrome <= room;
    const char* const* names = long_fits ? long_names : short_names;
    float widest = 0;
    for (int v = 0; v < 5; ++v) widest = std::max(widest, ImGui::CalcTextSize(names[v]).x);
    const float combo_w = std::min(room, widest + chrome);
    s.view_combo_cut_px = widest + chrome - combo_w;
    int view = int(s.view);
    ImGui::SetNextItemWidth(combo_w);
    if (ImGui::Combo("view", &view, names, 5)) s.view = View(view);
    s.view_changed = false;
    picked_by_combo = true;
    ImGui::Separator();
    draw_view(s.view);
  } else if (ImGui::BeginTabBar("views")) {
    const bool force = s.view_changed || picked_by_combo;
    s.view_changed = picked_by_combo = false;
    auto tab = [&](const char* name, View v) {
      const ImGuiTabItemFlags f = force && s.view == v ? ImGuiTabItemFlags_SetSelected : 0;
      const bool open = ImGui::BeginTabItem(name, nullptr, f);
      if (open && !force) s.view = v;
      if (open) {
        draw_view(v);
        ImGui::EndTabItem();
      }
    };
    tab("Tiles", View::tiles);
    // The ### part keeps the lesson's tab the same tab under either label.
    tab(full ? "Online-softmax lesson###lesson" : "Lesson###lesson", View::lesson);
    tab("Compare", View::compare);
    tab("Bench", View::bench);
    tab("Pipeline", View::pipeline);
    // For --dump-state: the tabs ImGui drew narrower than their labels (cut to "Com...").
    for (const ImGuiTabItem& t : ImGui::GetCurrentContext()->CurrentTabBar->Tabs)
      if (t.Width + 0.5f < t.ContentWidth) ++s.view_tabs_cut;
    ImGui::EndTabBar();
  }
  s.center_overflow_px = PanelOverflowPx();
  ImGui::End();
}

}  // namespace flashstep::gui
