#include "app/gui/widgets.h"

#include "app/gui/title_fit.h"

#include <imgui_internal.h>  // ImGuiWindow: the extent of what a panel drew (PanelOverflowPx)

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>

namespace flashstep::gui {

// "123 B", "1.50 KiB", "3.20 MiB" into buf.
const char* fmt_bytes(char* buf, size_t n, int64_t b) {
  if (b >= (int64_t(1) << 20)) std::snprintf(buf, n, "%.2f MiB", double(b) / 1048576.0);
  else if (b >= 1024) std::snprintf(buf, n, "%.2f KiB", double(b) / 1024.0);
  else std::snprintf(buf, n, "%lld B", (long long)b);
  return buf;
}

const char* fmt_bytes_short(char* buf, size_t n, int64_t b) {
  if (b < 1024) {
    std::snprintf(buf, n, "%lld B", (long long)b);
    return buf;
  }
  const bool mib = b >= (int64_t(1) << 20);
  const double x = double(b) / (mib ? 1048576.0 : 1024.0);
  // Decimals by size, cut (not rounded up) so that 1023.99 stays within the unit: 1023, 64.5, 4.00.
  const int decimals = x >= 100 ? 0 : x >= 10 ? 1 : 2;
  const double scale = decimals == 0 ? 1 : decimals == 1 ? 10 : 100;
  std::snprintf(buf, n, "%.*f %s", decimals, std::floor(x * scale) / scale, mib ? "MiB" : "KiB");
  return buf;
}

const char* fmt_bytes_tight(char* buf, size_t n, int64_t b) {
  const int64_t unit = b >= (int64_t(1) << 20) ? int64_t(1) << 20 : b >= 1024 ? 1024 : 1;
  if (b % unit == 0) {  // exact: no decimals to show
    std::snprintf(buf, n, "%lld%s", (long long)(b / unit), unit == 1 ? "B" : unit == 1024 ? "KiB" : "MiB");
    return buf;
  }
  fmt_bytes_short(buf, n, b);
  char* space = std::strchr(buf, ' ');
  if (space) std::memmove(space, space + 1, std::strlen(space + 1) + 1);
  return buf;
}

const char* fmt_value(char* buf, size_t n, float x, int decimals) {
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

void LabelledBar(float fraction, const char* text) {
  if (ImGui::CalcTextSize(text).x + ImGui::GetStyle().FramePadding.x * 2 <= ImGui::GetContentRegionAvail().x) {
    ImGui::ProgressBar(fraction, ImVec2(-1, 0), text);
    return;
  }
  TextWrappedAtSpaces(text);
  ImGui::ProgressBar(fraction, ImVec2(-1, 0), "");
}

float ToggleWidth(const char* label) {
  return ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x + ImGui::CalcTextSize(label, nullptr, true).x;
}

bool WrappedRadioButton(const char* label, bool active) {
  if (ToggleWidth(label) <= ImGui::GetContentRegionAvail().x) return ImGui::RadioButton(label, active);
  ImGui::PushID(label);
  bool pressed = ImGui::RadioButton("##radio", active);
  ImGui::SameLine(0, ImGui::GetStyle().ItemInnerSpacing.x);
  ImGui::BeginGroup();
  TextWrappedAtSpaces(label);
  ImGui::EndGroup();
  pressed |= ImGui::IsItemClicked();
  ImGui::PopID();
  return pressed;
}

float ButtonWidth(const char* label) {
  return ImGui::CalcTextSize(label, nullptr, true).x + 2 * ImGui::GetStyle().FramePadding.x;
}

static const char* FirstFitting(std::initializer_list<const char*> labels, float (*width)(const char*)) {
  const float avail = ImGui::GetContentRegionAvail().x;
  for (const char* l : labels)
    if (width(l) <= avail) return l;
  return *(labels.end() - 1);
}

const char* FitToggle(std::initializer_list<const char*> labels) { return FirstFitting(labels, ToggleWidth); }
const char* FitButton(std::initializer_list<const char*> labels) { return FirstFitting(labels, ButtonWidth); }

float LineRoomAfterItem(float spacing) {
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  const float gap = spacing < 0 ? ImGui::GetStyle().ItemSpacing.x : spacing;
  return right - ImGui::GetItemRectMax().x - gap;
}

bool SameLineIfWidthFits(float w, float spacing) {
  if (w > LineRoomAfterItem(spacing)) return false;
  ImGui::SameLine(0, spacing < 0 ? ImGui::GetStyle().ItemSpacing.x : spacing);
  return true;
}

void SameLineIfFits(const char* label, float spacing) { SameLineIfWidthFits(ToggleWidth(label), spacing); }

void SameLineIfButtonFits(const char* label, float spacing) { SameLineIfWidthFits(ButtonWidth(label), spacing); }

void SameLineIfGroupFits(std::initializer_list<const char*> labels, float spacing) {
  float w = 0;
  for (const char* label : labels) w += (w > 0 ? ImGui::GetStyle().ItemSpacing.x : 0) + ToggleWidth(label);
  SameLineIfWidthFits(w, spacing);
}

namespace {

// Whether the space at `space` joins a number to its unit: the word before it is a bare number
// ("4", "16.0", "(4") and the word after it starts with a letter or '%' ("B/element", "KiB").
// A line must not end in "4" with "B/element" on the next.
bool joins_number_to_unit(const char* word, const char* space, const char* end) {
  while (word < space && (*word == '(' || *word == '-' || *word == '+')) ++word;
  if (word == space || space + 1 >= end || !std::isdigit(static_cast<unsigned char>(space[-1]))) return false;
  for (const char* c = word; c < space; ++c)
    if (!std::isdigit(static_cast<unsigned char>(*c)) && *c != '.') return false;
  return std::isalpha(static_cast<unsigned char>(space[1])) || space[1] == '%';
}

}  // namespace

// "(docs/l2-model.md)" ran 23 px past the problem panel's edge at font scale 2 in a 1024x768
// window, "diag(l_i^new)^-1" past the course column's at font scale 2.5.
const char* WordBreak(const char* word, const char* end, float w) {
  const char* fit = word;
  for (const char* q = word; q < end;) {
    const char* next = Utf8Next(q, end);  // a UTF-8 character whole
    if (fit > word && ImGui::CalcTextSize(word, next).x > w) break;
    fit = q = next;
  }
  // After a '/', a ')' or a '-' between words ("softmax-" and "weighted"), not a minus sign ("^-1").
  for (const char* q = fit; q > word + 1; --q)
    if (q[-1] == '/' || q[-1] == ')' || (q[-1] == '-' && (std::isalnum(static_cast<unsigned char>(q[-2])) || q[-2] == ')')))
      return q;
  return fit;
}

const std::string& TextWrappedAtSpaces(const char* text) {
  const float w = ImGui::GetContentRegionAvail().x;
  const char* end = text + std::strlen(text);
  const char* line = text;
  // The lines joined by newlines: one text item, at ImGui's own line spacing. The buffer keeps its
  // capacity from frame to frame, so that an idle frame allocates nothing (tests/gui's benchmark).
  static std::string out;
  out.clear();
  while (line < end) {
    // The last space (or newline, or the end) up to which the line fits; at least one word. A
    // newline ends the line where it stands; a number keeps its unit on its line.
    const char* cut = nullptr;
    const char* word = line;
    for (const char* q = line; q <= end; ++q) {
      if (q != end && *q != ' ' && *q != '\n') continue;
      const bool joined = q != end && *q == ' ' && joins_number_to_unit(word, q, end);
      word = q + 1;
      if (joined) continue;
      if (cut && ImGui::CalcTextSize(line, q).x > w) break;
      cut = q;
      if (q == end || *q == '\n') break;
    }
    if (!out.empty()) out += '\n';
    if (ImGui::CalcTextSize(line, cut).x > w) {  // one word wider than the whole line
      const char* brk = WordBreak(line, cut, w);
      out.append(line, brk);
      line = brk;
      continue;
    }
    out.append(line, cut);
    line = cut + 1;
  }
  ImGui::TextUnformatted(out.c_str(), out.c_str() + out.size());
  return out;
}

const std::string& TextWrappedF(const char* fmt, ...) {
  char buf[2048];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  return TextWrappedAtSpaces(buf);
}

float TableCellText(const char* text, const ImVec4* colour) {
  const ImGuiTable* table = ImGui::GetCurrentTable();  // the cell's clip rectangle: what shows
  const float right = table->Columns[ImGui::TableGetColumnIndex()].ClipRect.Max.x;
  const float past = ImGui::GetCursorScreenPos().x + ImGui::CalcTextSize(text).x - right;
  if (colour) ImGui::TextColored(*colour, "%s", text);
  else ImGui::TextUnformatted(text);
  return past;
}

float HeaderLabelRoom() {
  // ImGui 1.86's TreeNodeBehavior puts a framed header's text after the arrow, at FontSize + 3
  // frame paddings; one padding more keeps it clear of the frame's end.
  return ImGui::GetContentRegionAvail().x - ImGui::GetFontSize() - 4 * ImGui::GetStyle().FramePadding.x;
}

float PanelOverflowPx() {
  const ImGuiWindow* w = ImGui::GetCurrentWindow();
  return w->DC.CursorMaxPos.x - w->WorkRect.Max.x;
}

float VisibleBelowAtTop() {
  const ImGuiWindow* w = ImGui::GetCurrentWindow();
  return w->InnerClipRect.Max.y - (ImGui::GetCursorScreenPos().y + w->Scroll.y);
}

float HiddenBelowAtTop(float y) {
  const ImGuiWindow* w = ImGui::GetCurrentWindow();
  return y + w->Scroll.y - w->InnerClipRect.Max.y;
}

const char* LongestFitting(float w, std::initializer_list<const char*> labels) {
  for (const char* l : labels)
    if (ImGui::CalcTextSize(l).x <= w) return l;
  return "";
}

FittedLabel FitLabel(const char* label, float preferred, float least) {
  static std::string hidden;  // one buffer: a frame's idle redraw allocates nothing once it is big enough
  const float avail = ImGui::GetContentRegionAvail().x;
  const float text = ImGui::CalcTextSize(label, nullptr, true).x;
  const float beside = avail - text - ImGui::GetStyle().ItemInnerSpacing.x;
  if (text == 0.0f || beside >= least) return {label, std::min(preferred, beside)};
  const char* end = std::strstr(label, "##");
  hidden.assign(label, end ? size_t(end - label) : std::strlen(label));
  TextWrappedAtSpaces(hidden.c_str());  // the label above, wrapped where it is wider than the column
  hidden.assign("##");
  hidden.append(label);
  return {hidden.c_str(), std::min(preferred, avail)};
}

void DimText(const char* text) {
  ImGui::PushStyleColor(ImGuiCol_Text, kDimText);
  TextWrappedAtSpaces(text);  // at spaces: "once (260." and "00 KiB)" were two lines
  ImGui::PopStyleColor();
}

// A colour key; `same_line` continues the row when it fits, else starts a new one.
void Swatch(ImU32 col, bool outline, const char* label, bool same_line) {
  const float h = ImGui::GetTextLineHeight();
  // Decided before moving: SameLine then NewLine left the line's end (the panel's measured width,
  // PanelOverflowPx) past the edge.
  if (same_line) SameLineIfWidthFits(h + 4 + ImGui::CalcTextSize(label).x, 12);
  const ImVec2 p = ImGui::GetCursorScreenPos();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  if (outline) dl->AddRect(ImVec2(p.x + 1, p.y + 2), ImVec2(p.x + h - 1, p.y + h - 2), col, 0, 0, 2.5f);
  else dl->AddRectFilled(ImVec2(p.x + 1, p.y + 2), ImVec2(p.x + h - 1, p.y + h - 2), col);
  ImGui::Dummy(ImVec2(h, h));
  ImGui::SameLine(0, 4);
  TextWrappedAtSpaces(label);  // beside the swatch, wrapped where the line is too short for it
}

void PlaceWindow(ImVec2 pos, ImVec2 size) {
  ImGui::SetNextWindowPos(pos, ImGuiCond_Always);
  ImGui::SetNextWindowSize(size, ImGuiCond_Always);
}

namespace {

void remember_title(AppState& s, const char* id, const char* full, size_t full_len, const char* shown, size_t shown_len,
                    float room) {
  AppState::PanelTitle* slot = nullptr;
  for (AppState::PanelTitle& t : s.panel_titles) {
    if (std::strcmp(t.id, id) == 0) {
      slot = &t;
      break;
    }
    if (!slot && t.frame < 0) slot = &t;  // the first free one, if the panel is new
  }
  if (!slot) return;  // more panels than slots: not remembered (the dump lists what fits)
  std::snprintf(slot->id, sizeof slot->id, "%s", id);
  std::snprintf(slot->full, sizeof slot->full, "%.*s", int(full_len), full);
  std::snprintf(slot->shown, sizeof slot->shown, "%.*s", int(shown_len), shown);
  slot->shown_px = ImGui::CalcTextSize(shown, shown + shown_len).x;
  slot->room_px = room;
  slot->frame = ImGui::GetFrameCount();
}

}  // namespace

const char* FitTitle(AppState& s, const char* title, float width, char* buf, size_t n) {
  const char* id = std::strstr(title, "###");
  const size_t vis_len = id ? size_t(id - title) : std::strlen(title);
  const char* id_text = id ? id + 3 : title;
  const float room = width - 2 * ImGui::GetStyle().FramePadding.x;
  auto text_w = [](const char* b, const char* e) { return ImGui::CalcTextSize(b, e).x; };
  size_t keep = vis_len;
  bool cut = text_w(title, title + vis_len) > room;
  if (cut) keep = TitleKeep(title, vis_len, room, text_w("...", nullptr), text_w);  // title_fit.h
  std::snprintf(buf, n, "%.*s%s###%s", int(keep), title, cut ? "..." : "", id_text);
  const char* shown_end = std::strstr(buf, "###");
  remember_title(s, id_text, title, vis_len, buf, size_t(shown_end - buf), room);
  return buf;
}

void BeginFitted(AppState& s, const char* title, ImVec2 pos, ImVec2 size, ImGuiWindowFlags flags) {
  PlaceWindow(pos, size);
  char buf[224];
  ImGui::Begin((flags & ImGuiWindowFlags_NoTitleBar) ? title : FitTitle(s, title, size.x, buf, sizeof buf), nullptr, flags);
}

// Places and opens a panel; returns false (the window already ended) when there is no run.
bool BeginPanel(const char* title, ImVec2 pos, ImVec2 size, AppState& s, ImGuiWindowFlags extra) {
  BeginFitted(s, title, pos, size, kPanelFlags | extra);
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

plot::FigureStyle ThemeFigureStyle(const AppState& s) {
  return s.display.now.theme == Theme::light ? plot::light_figure_style() : plot::dark_figure_style();
}

float colorbar(ImDrawList* dl, Heatmap& h, ImVec2 p, float w, float hgt, const char* lo, const char* hi, const char* name) {
  const ImVec2 ts = ImGui::CalcTextSize(name);
  dl->AddText(p, ImGui::GetColorU32(ImGuiCol_Text), name);
  const ImVec2 a(p.x + ts.x + 6, p.y + 2), b(a.x + w, a.y + hgt);
  if (h.valid()) dl->AddImage(h.texture(), a, b);
  dl->AddText(ImVec2(a.x, b.y + 1), ImGui::GetColorU32(ImGuiCol_Text), lo);
  const ImVec2 hs = ImGui::CalcTextSize(hi);
  dl->AddText(ImVec2(b.x - hs.x, b.y + 1), ImGui::GetColorU32(ImGuiCol_Text), hi);
  return b.y + 1 + std::max(hs.y, ImGui::CalcTextSize(lo).y);
}

}  // namespace flashstep::gui
