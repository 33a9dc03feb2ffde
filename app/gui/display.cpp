// The display settings in the window: the theme's ImGui style and panel colours, the fonts built
// at the font scale (a TTF rasterised at the scaled size is sharp; FontGlobalScale would stretch
// the 15 px atlas and blur it), and the Display menu that changes and remembers them.
#include "app/gui/panels.h"
#include "app/gui/resources.h"
#include "app/gui/widgets.h"

#include <backends/imgui_impl_opengl3.h>

#include <cmath>

namespace flashstep::gui {

namespace {

constexpr float kSansPx = 15.0f, kMonoPx = 13.0f;  // the sizes at font scale 1

void set_palette(Theme t) {
  const bool light = t == Theme::light;
  // On a light background the dark theme's pale outlines (white SRAM frame, yellow compute,
  // cyan reads) vanish: the light palette uses deeper shades of the same hues.
  kReadCol = light ? IM_COL32(0, 105, 215, 255) : IM_COL32(60, 200, 255, 255);
  kWriteCol = light ? IM_COL32(230, 105, 0, 255) : IM_COL32(255, 140, 30, 255);
  kComputeCol = light ? IM_COL32(205, 150, 0, 255) : IM_COL32(250, 225, 60, 255);
  kResidentCol = light ? IM_COL32(25, 25, 30, 230) : IM_COL32(240, 240, 240, 200);
  kEmptyEdgeCol = light ? IM_COL32(160, 163, 173, 255) : IM_COL32(62, 65, 74, 255);
  kVisitedCol = light ? IM_COL32(20, 145, 40, 255) : IM_COL32(120, 225, 120, 255);
  kHighlightCol = light ? IM_COL32(165, 195, 250, 255) : IM_COL32(70, 90, 160, 255);
  kShownCol = light ? IM_COL32(205, 216, 242, 255) : IM_COL32(45, 60, 105, 255);
  kSkipFill = light ? IM_COL32(214, 210, 202, 255) : IM_COL32(38, 36, 34, 255);
  kSkipHatch = light ? IM_COL32(140, 130, 115, 255) : IM_COL32(110, 100, 88, 255);
  // The Pipeline chart's alternating lanes: a shade off the panel's background either way (the
  // dark theme's near-black lanes stayed on the light panel).
  kLaneCols[0] = light ? IM_COL32(224, 227, 234, 255) : IM_COL32(38, 40, 47, 255);
  kLaneCols[1] = light ? IM_COL32(212, 216, 225, 255) : IM_COL32(32, 34, 40, 255);
  kErrorText = light ? ImVec4(0.75f, 0.08f, 0.08f, 1.0f) : ImVec4(1.0f, 0.42f, 0.38f, 1.0f);
  kDimText = light ? ImVec4(0.36f, 0.38f, 0.43f, 1.0f) : ImVec4(0.65f, 0.67f, 0.72f, 1.0f);
  kPassText = light ? ImVec4(0.05f, 0.5f, 0.15f, 1.0f) : ImVec4(0.35f, 0.9f, 0.45f, 1.0f);
  // The Pipeline view's PyTorch lines (the dark theme's teal gave 1.9:1 on the light panel).
  kReferenceCols[0] = light ? IM_COL32(190, 40, 40, 255) : IM_COL32(240, 120, 120, 255);
  kReferenceCols[1] = light ? IM_COL32(0, 120, 120, 255) : IM_COL32(120, 200, 200, 255);
  kBoundText = light ? ImVec4(0.62f, 0.38f, 0.0f, 1.0f) : ImVec4(0.95f, 0.75f, 0.3f, 1.0f);
}

// A font rasterised at `ratio` times its size, measured in layout pixels: its glyphs keep the
// atlas's device pixels, drawn 1:1 where the framebuffer has `ratio` pixels per layout pixel
// (the web page on a HiDPI screen), while FontSize, the advances and CalcTextSize are those of
// the font at its own size. (ImGui 1.86 has one size per font; io.FontGlobalScale would leave
// font->FontSize, which the heatmap's cell text reads, at the rasterised size.)
void to_layout_pixels(ImFont* f, float ratio) {
  for (ImFontGlyph& gl : f->Glyphs) {
    gl.X0 /= ratio;
    gl.Y0 /= ratio;
    gl.X1 /= ratio;
    gl.Y1 /= ratio;
    gl.AdvanceX /= ratio;
  }
  f->FontSize /= ratio;
  f->Ascent /= ratio;
  f->Descent /= ratio;
  f->BuildLookupTable();  // the advances' index and the fallback's, from the glyphs
}

void build_fonts(AppState& s, GpuState& g, float scale) {
  ImFontAtlas* atlas = ImGui::GetIO().Fonts;
  atlas->Clear();
  const std::string sans = system_font(false), mono = system_font(true);
  const float sans_px = std::round(kSansPx * scale), mono_px = std::round(kMonoPx * scale);
  const float ratio = s.display.pixel_ratio;  // 1 on the desktop
  auto built_in = [&](float px) {  // ProggyClean rebuilt at this size (blocky, but not blurred)
    ImFontConfig cfg;
    cfg.SizePixels = px;
    return atlas->AddFontDefault(&cfg);
  };
  if (!sans.empty()) atlas->AddFontFromFileTTF(sans.c_str(), sans_px * ratio);
  else built_in(sans_px * ratio);
  g.mono = !mono.empty() ? atlas->AddFontFromFileTTF(mono.c_str(), mono_px * ratio) : built_in(mono_px * ratio);
  if (ratio != 1.0f) {
    atlas->Build();
    for (ImFont* f : atlas->Fonts) to_layout_pixels(f, ratio);
  }
  s.display.font_file = sans;
  s.display.font_px = sans_px;
}

}  // namespace

ImVec4 ApplyDisplay(AppState& s, GpuState& g, bool backend_ready) {
  const DisplaySettings& d = s.display.now;
  ImGuiStyle& st = ImGui::GetStyle();
  st = ImGuiStyle();
  if (d.theme == Theme::light) {
    ImGui::StyleColorsLight();
    // Disabled text ("on chip", "0 B", the softmax panel's notes): grey 107 on the panels' 240,
    // 4.7:1, where ImGui's 153 gave 2.5:1 (hard to read on a projector).
    st.Colors[ImGuiCol_TextDisabled] = ImVec4(107 / 255.0f, 107 / 255.0f, 107 / 255.0f, 1.0f);
  } else {
    ImGui::StyleColorsDark();
    // The bars' fill (the memory panel's "so far" and "tiles"), under their white labels: a deep
    // amber, 5.7:1 against white, where ImGui's yellow gave 1.9:1.
    st.Colors[ImGuiCol_PlotHistogram] = ImVec4(140 / 255.0f, 94 / 255.0f, 0.0f, 1.0f);
  }
  st.WindowRounding = 0;
  st.FrameRounding = 3;
  st.WindowPadding = ImVec2(8, 6);
  st.ItemSpacing = ImVec2(7, 5);
  st.ScaleAllSizes(d.font_scale);
  // The panels tile the whole window, so their background is the glClear colour: a fully
  // transparent WindowBg is skipped by ImGui, which saves a full-screen blended pass (the
  // largest cost of a frame under Mesa's software rasteriser).
  const ImVec4 bg = st.Colors[ImGuiCol_WindowBg];
  st.Colors[ImGuiCol_WindowBg].w = 0.0f;
  set_palette(d.theme);
  g.shader.set_empty_colour(bg.x, bg.y, bg.z);
  build_fonts(s, g, d.font_scale);
  if (backend_ready) {  // the first frame builds the texture itself; later changes rebuild it
    ImGui_ImplOpenGL3_DestroyFontsTexture();
    ImGui_ImplOpenGL3_CreateFontsTexture();
  }
  return ImVec4(bg.x, bg.y, bg.z, 1.0f);
}

void DrawDisplayMenu(AppState& s) {
  DisplayState& ds = s.display;
  if (ds.menu_open) {
    ds.scale_edit = ds.now.font_scale;
    ImGui::OpenPopup("Display");
    ds.menu_open = false;
  }
  // Centred: F2 opens it wherever the pointer is (or is not, in a screenshot).
  const ImVec2 screen = ImGui::GetIO().DisplaySize;
  ImGui::SetNextWindowPos(ImVec2(screen.x * 0.5f, screen.y * 0.4f), ImGuiCond_Always, ImVec2(0.5f, 0.5f));
  if (!ImGui::BeginPopup("Display")) return;
  DisplaySettings next = ds.now;
  int theme = next.theme == Theme::light ? 1 : 0;
  ImGui::TextUnformatted("Theme");
  ImGui::SameLine();
  ImGui::RadioButton("dark", &theme, 0);
  ImGui::SameLine();
  ImGui::RadioButton("light (projector)", &theme, 1);
  next.theme = theme == 1 ? Theme::light : Theme::dark;
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 10);
  ImGui::SliderFloat("text size", &ds.scale_edit, kMinFontScale, kMaxFontScale, "%.2fx");
  if (ImGui::IsItemDeactivatedAfterEdit()) next.font_scale = ds.scale_edit;  // fonts rebuilt once, on release
  ImGui::TextUnformatted("Panels");
  for (PanelBit p : kPanels) {
    bool shown = next.shows(p);
    if (ImGui::Checkbox(panel_name(p), &shown)) next.hidden ^= p;
  }
  if (ImGui::Button("Presentation")) next = presentation_settings();
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Light theme, text 1.5x, the problem editor hidden");
  ImGui::SameLine();
  if (ImGui::Button("Default")) next = DisplaySettings{};
  ds.change(next);
  if (next.font_scale != ds.scale_edit && !ImGui::IsAnyItemActive()) ds.scale_edit = next.font_scale;
  if (!ds.message.empty()) DimText(ds.message.c_str());
  if (s.forget_local_files) {  // the web page: files opened from the computer, kept in the browser
    ImGui::Separator();
    DimText(s.local_files_note.c_str());
    if (ImGui::Button("Forget opened files")) s.forget_local_files();
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("Removes the files opened from this computer from the browser and from the views");
  }
  DimText("F2 opens this menu when the controls are hidden");
  ImGui::EndPopup();
}

}  // namespace flashstep::gui
