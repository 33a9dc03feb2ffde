// The centre panel: the tiles, lesson, compare, bench and pipeline views as tabs.
#include "app/gui/panels.h"
#include "app/gui/widgets.h"

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
      if (PagedStripHeight(s) > 0) DrawPagedStrip(s);  // decode --page-size: the pages above the tiles
      DrawTilesView(s, g);
      ImGui::EndTabItem();
    }
    // The lesson's tab is named in full where all five labels fit the panel; otherwise "Lesson"
    // (ImGui would cut it to "Online-so..."). The ### part keeps the tab the same tab.
    const ImGuiStyle& st = ImGui::GetStyle();
    float labels = 0;
    for (const char* name : {"Tiles", "Online-softmax lesson", "Compare", "Bench", "Pipeline"})
      labels += ImGui::CalcTextSize(name).x + 2 * st.FramePadding.x + st.ItemInnerSpacing.x;
    const bool full = labels <= ImGui::GetContentRegionAvail().x;
    if (tab(full ? "Online-softmax lesson###lesson" : "Lesson###lesson", View::lesson)) {
      DrawLessonView(s);
      ImGui::EndTabItem();
    }
    if (tab("Compare", View::compare)) {
      DrawCompareView(s, g);
      ImGui::EndTabItem();
    }
    if (tab("Bench", View::bench)) {
      DrawBenchView(s);
      ImGui::EndTabItem();
    }
    if (tab("Pipeline", View::pipeline)) {
      DrawPipelineView(s);
      ImGui::EndTabItem();
    }
    ImGui::EndTabBar();
  }
  ImGui::End();
}

}  // namespace flashstep::gui
