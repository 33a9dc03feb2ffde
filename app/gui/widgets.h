// What the panels share: the colours of the legend (read, written, computed, resident), text
// helpers that format into a caller's buffer (an idle frame allocates nothing), panel placement,
// and the current step's reads.
#pragma once
#include "app/gui/app_state.h"
#include "app/gui/heatmap.h"
#include "app/plot/draw_figure.h"

#include <imgui.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

namespace flashstep::gui {

// The colours depend on the theme (dark, or light for a projector): ApplyDisplay (display.cpp)
// sets them between frames when the theme changes; within a frame they are constants.
inline ImU32 kReadCol = IM_COL32(60, 200, 255, 255);
inline ImU32 kWriteCol = IM_COL32(255, 140, 30, 255);
inline ImU32 kComputeCol = IM_COL32(250, 225, 60, 255);
inline ImU32 kResidentCol = IM_COL32(240, 240, 240, 200);
inline ImU32 kGridCol = IM_COL32(15, 15, 20, 230);
inline ImU32 kEmptyEdgeCol = IM_COL32(62, 65, 74, 255);  // outline of a tile that is not there yet
inline ImU32 kVisitedCol = IM_COL32(120, 225, 120, 255);
inline ImU32 kReferenceCols[2] = {IM_COL32(240, 120, 120, 255), IM_COL32(120, 200, 200, 255)};  // set_palette
inline ImU32 kHighlightCol = IM_COL32(70, 90, 160, 255);  // the current pseudocode line, table row
inline ImU32 kShownCol = IM_COL32(45, 60, 105, 255);      // the shown schedule's column
inline ImU32 kSkipFill = IM_COL32(38, 36, 34, 255);       // a tile the mask hides entirely
inline ImU32 kSkipHatch = IM_COL32(110, 100, 88, 255);
inline ImU32 kLaneCols[2] = {IM_COL32(38, 40, 47, 255), IM_COL32(32, 34, 40, 255)};  // the Pipeline chart's lanes
inline ImVec4 kErrorText(1.0f, 0.42f, 0.38f, 1.0f);
inline ImVec4 kDimText(0.65f, 0.67f, 0.72f, 1.0f);
inline ImVec4 kPassText(0.35f, 0.9f, 0.45f, 1.0f);
inline ImVec4 kBoundText(0.95f, 0.75f, 0.3f, 1.0f);  // a closed form that is an upper bound

inline constexpr ImGuiWindowFlags kPanelFlags =
    ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoCollapse |
    ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoBringToFrontOnFocus;

// The size to draw a heatmap cell's number at: the cell font's own size when the cell is wide
// enough, else smaller, down to the 13 px it has at font scale 1; a cell of `cw` pixels holds
// `min_w` pixels of text at 13 px. Returns 0 when not even 13 px fits (no numbers).
inline float cell_text_px(const ImFont* f, float cw, float ch, float min_w) {
  const float px = std::min(f->FontSize, 13.0f * cw / min_w);
  return px >= 13.0f && ch >= px + 2.0f ? px : 0.0f;
}

// The figures' colours (app/plot/draw_figure.h) in the app's theme: the Bench view, the course's
// roofline and IO explorer.
plot::FigureStyle ThemeFigureStyle(const AppState& s);

const char* fmt_bytes(char* buf, size_t n, int64_t b);
// fmt_bytes in at most four digits, for a narrow table: "16.0 KiB", "256 KiB", "1023 KiB".
const char* fmt_bytes_short(char* buf, size_t n, int64_t b);
// fmt_bytes_short without the space before the unit, and an exact multiple of its unit without
// decimals ("2KiB", "512KiB", "16B", "1.06KiB"): the narrowest table's cells.
const char* fmt_bytes_tight(char* buf, size_t n, int64_t b);
const char* fmt_value(char* buf, size_t n, float x, int decimals = 4);  // "-" for NaN (not there)
const char* fmt_g(char* buf, size_t n, double x);
void ErrorText(const std::string& msg);
// A full-width progress bar with `text` on it, or above it when the text is wider (large fonts).
void LabelledBar(float fraction, const char* text);
void DimText(const char* text);
// The first of the labels (a long form, then shorter ones) that fits in `w` pixels; "" if none.
const char* LongestFitting(float w, std::initializer_list<const char*> labels);
// Text wrapped to the available width at spaces only: ImGui's own wrapping also breaks after '.',
// which splits a number such as 51.04 across two lines; nor does it break between a number and
// its unit ("4 B/element"). Returns the lines as drawn, joined by newlines (valid until the next call).
const std::string& TextWrappedAtSpaces(const char* text);
// Where to break a word wider than `w` pixels, [word, end): after its last '/', ')' or '-' between
// words up to which it fits, else after the last whole UTF-8 character that fits (at least one).
const char* WordBreak(const char* word, const char* end, float w);
// printf-style TextWrappedAtSpaces: the app's wrapped text with numbers in it (ImGui::TextWrapped
// would print "written 264." and "00 KiB" on two lines).
const std::string& TextWrappedF(const char* fmt, ...) IM_FMTARGS(1);
// In a table cell: the text (in `colour` where given), and how far it runs past what the cell
// shows (pixels; 0 or less: all of it shows), for the tables' measures in --dump-state.
float TableCellText(const char* text, const ImVec4* colour = nullptr);
// The width a collapsing header's title has before ImGui 1.86 clips it (no mark) at the panel's
// edge: the content width less the arrow and the frame's padding.
float HeaderLabelRoom();
// In a window, before its End(): how far the widest item drawn so far reaches past the content
// width (pixels; 0 or less when every item fits; a horizontal scrollbar's content counts too).
float PanelOverflowPx();
// In a window, the height of its visible part below the cursor when the window is scrolled to its
// top, and how far a screen y lies below that visible part (0 or less: in view): what a first look
// at a panel shows, whatever its scroll now.
float VisibleBelowAtTop();
float HiddenBelowAtTop(float y);
// Before a radio button or checkbox (after the first of a row): on the same line, `spacing` after
// the last item, where it fits before the content region's right edge; else it starts a new line.
void SameLineIfFits(const char* label, float spacing = -1.0f);
// The same for a group of radio buttons or checkboxes that belong together (d = 64, d = 128): the
// first continues the line only if the whole group fits there; each next one as SameLineIfFits.
void SameLineIfGroupFits(std::initializer_list<const char*> labels, float spacing = -1.0f);
// The same for a button.
void SameLineIfButtonFits(const char* label, float spacing = -1.0f);
// The first of a checkbox's (or a button's) labels, a long form then shorter ones, each written
// "text###id" with the same id, that fits the rest of the line; the last where none does.
const char* FitToggle(std::initializer_list<const char*> labels);
const char* FitButton(std::initializer_list<const char*> labels);
// A radio button's or checkbox's width with its label; the line break rule both take, for `w` pixels.
float ToggleWidth(const char* label);
// A radio button whose label, where wider than the rest of the line, is written beside it on
// more lines (TextWrappedAtSpaces: after a '-' or '/' in a long word, "softmax-under-" and
// "product"), where ImGui would cut it at the panel's edge; a click on the label picks it too.
bool WrappedRadioButton(const char* label, bool active);
float ButtonWidth(const char* label);  // a button's width with its label
bool SameLineIfWidthFits(float w, float spacing = -1.0f);  // true: on the same line
// The width left on the last item's line after it and `spacing` (the style's item spacing where
// below 0). Ask this before SameLine(), not after: SameLine() then NewLine() leaves the cursor's
// position, a spacing past the last item, in the window's content width, which then reaches up to
// that spacing (9 px at 1.5x) past the right edge where the item ended near it.
float LineRoomAfterItem(float spacing = -1.0f);
// A field and its label in a column that may be narrow (presentation mode, large text): the
// field keeps `preferred` pixels where the label fits beside it and shrinks to no less than
// `least` to make room; below that the label is drawn on a line of its own and the field, up to
// `preferred` wide, goes under it. Gives the label to pass to the widget ("##" + label once it
// has been drawn above; valid until the next call) and the field's width.
struct FittedLabel {
  const char* label;
  float width;
};
FittedLabel FitLabel(const char* label, float preferred, float least);
void Swatch(ImU32 col, bool outline, const char* label, bool same_line = false);
void PlaceWindow(ImVec2 pos, ImVec2 size);
// A panel's title bar text fitted to the panel's width. ImGui 1.86 clips a title that is too long
// without a mark, which can leave another word ("FlashAttention, tile by til" at font scale 2.5,
// 1024x768); a title that does not fit is cut at the last whole word that does, with "..." after
// it (a first word too long on its own between UTF-8 characters: title_fit.h). Returns
// "shown###id" in `buf` (id: the part after a "###" in `title`, else the whole title, so the
// window stays the same one whether or not its title is cut) and remembers the pair in
// s.panel_titles for --dump-state.
const char* FitTitle(AppState& s, const char* title, float width, char* buf, size_t n);
// ImGui::Begin with the title fitted to the placed width (FitTitle).
void BeginFitted(AppState& s, const char* title, ImVec2 pos, ImVec2 size, ImGuiWindowFlags flags);
bool BeginPanel(const char* title, ImVec2 pos, ImVec2 size, AppState& s, ImGuiWindowFlags extra = 0);
const Step* current_step(const AppState& s);
const Step* previous_step(const AppState& s);
bool tensor_read_now(const AppState& s, Tensor t);  // the current step read some of t from HBM
// A colour bar with its name before it and its range under it; returns where the range's labels end (y).
float colorbar(ImDrawList* dl, Heatmap& h, ImVec2 p, float w, float hgt, const char* lo, const char* hi, const char* name);

}  // namespace flashstep::gui
