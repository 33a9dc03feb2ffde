// The app's display settings for the classroom: theme (dark, or light for a projector), a font
// scale for the whole UI (the fonts are rebuilt at that size, not stretched), and the panels a
// lecture hides. The Display menu's choices are remembered in a small JSON file:
//   --settings PATH, else $FLASHSTEP_SETTINGS, else $XDG_CONFIG_HOME/flashstep/settings.json,
//   else $HOME/.config/flashstep/settings.json (none of these: nothing is remembered).
// Flags (--theme, --font-scale, --hide, --presentation) apply to one run and are not saved.
// No ImGui here: the window applies the settings (theme.cpp); the tests use them in-process.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace flashstep::gui {

enum class Theme { dark, light };

// The panels that can be hidden (the centre panel, with the tiles, always stays), and the tiles
// view's legend (its height goes to the matrices: on a 720p projector with large text, the
// colour keys take more lines than the tiles).
enum PanelBit : unsigned {
  kPanelControls = 1u << 0,
  kPanelAlgorithm = 1u << 1,
  kPanelProblem = 1u << 2,
  kPanelMemory = 1u << 3,
  kPanelSoftmax = 1u << 4,
  kPanelLegend = 1u << 5,
};
inline constexpr unsigned kAllPanels = 0x3f;
inline constexpr float kMinFontScale = 0.75f, kMaxFontScale = 2.5f;
inline constexpr float kPresentationFontScale = 1.5f;

struct DisplaySettings {
  Theme theme = Theme::dark;
  float font_scale = 1.0f;
  unsigned hidden = 0;  // PanelBit set
  bool shows(PanelBit p) const { return (hidden & p) == 0; }
  bool operator==(const DisplaySettings& o) const {
    return theme == o.theme && font_scale == o.font_scale && hidden == o.hidden;
  }
  bool operator!=(const DisplaySettings& o) const { return !(*this == o); }
};

// --presentation: light theme, text 1.5x, the problem editor hidden.
DisplaySettings presentation_settings();

// Each throws InputError with one line naming the flag.
Theme parse_theme(const std::string& name);          // "dark" | "light"
float parse_font_scale(const std::string& text);     // a number in [0.75, 2.5]
unsigned parse_panels(const std::string& list);      // "memory,softmax" -> PanelBit set ("none" -> 0)
const char* theme_name(Theme t);
std::string panel_list(unsigned panels);             // "algorithm,memory" in a fixed order
const char* panel_name(PanelBit p);
inline constexpr PanelBit kPanels[6] = {kPanelControls, kPanelAlgorithm, kPanelProblem, kPanelMemory, kPanelSoftmax,
                                        kPanelLegend};

// The file the Display menu writes: `flag` when given, else the environment's (see above).
std::string settings_path(const std::string& flag);
// A missing file gives the defaults; a file that is not this format, not a regular file (a FIFO)
// or over kMaxSettingsBytes throws InputError naming it.
constexpr int64_t kMaxSettingsBytes = 64 << 10;
DisplaySettings load_settings(const std::string& path);
// The same from the file's text (the fuzz target feeds this); `path` is for messages.
DisplaySettings parse_settings(const std::string& text, const std::string& path);
void save_settings(const DisplaySettings& d, const std::string& path);  // throws InputError
// The course's progress per chapter (course_state.h), kept in the same file under "course". A
// missing file or key gives an empty object; the known fields of each chapter's entry are
// checked (InputError naming the file and the field).
//
// Every save merges into the file as it stands: keys this version does not know, chapters it
// does not know and unknown keys inside a chapter's entry are kept. The file is written
// compactly, all at once (write_file_atomic), and only when the result is within
// kMaxSettingsBytes; a read-only file is left as it is. Each failure is an InputError, which the
// app shows as a message (the Display menu, the course panel).
nlohmann::json load_course_progress(const std::string& path);  // throws InputError as load_settings
void save_course_progress(const nlohmann::json& progress, const std::string& path);  // throws InputError

// While a hold exists (`gui` checking its flags, preset, script and outputs), saves wait: a run
// that is refused writes nothing, and the outputs are checked against the settings file as it
// is (a --screenshot that is a hard link of it) before anything is written. release() writes
// what waited, in one save (InputError on failure); a hold destroyed without release() drops it.
class SettingsWriteHold {
 public:
  SettingsWriteHold();
  ~SettingsWriteHold();
  SettingsWriteHold(const SettingsWriteHold&) = delete;
  SettingsWriteHold& operator=(const SettingsWriteHold&) = delete;
  void release();

 private:
  bool held_ = true;
};

// What the app holds: the settings in force, where they are remembered, and what the window
// measured with them (for --dump-state and the tests).
struct DisplayState {
  DisplaySettings now;
  std::string path;          // the settings file ("" when there is nowhere to remember)
  uint64_t version = 1;      // bumps on every change: the window re-themes and rebuilds fonts
  bool menu_open = false;    // the Display popup (its button is in the controls panel, or F2)
  float scale_edit = 1.0f;   // the menu's text-size slider while it is dragged
  std::string message;       // the last save's outcome, shown in the menu
  float font_px = 0;         // the sans font's pixel size as built, measured by the window
  float sample_w = 0, sample_h = 0;  // CalcTextSize("Step >") with that font
  std::string font_file;     // the TTF used, or "" for ImGui's built-in font
  // Device pixels per ImGui pixel: the web page's devicePixelRatio (web/main_web.cpp sets it and
  // bumps `version`), so the fonts are rasterised for the screen's pixels while the layout stays
  // in CSS pixels. 1 on the desktop, where nothing depends on it.
  float pixel_ratio = 1.0f;
  // The Display menu (and --script "display ..."): applies `next` and remembers it.
  void change(const DisplaySettings& next);
  // "theme light" | "font-scale 1.5" | "hide memory,softmax" | "show memory" | "presentation" |
  // "default" | "menu" (opens it): the script's `display` verb. Throws InputError.
  void run_command(const std::string& command);
};

}  // namespace flashstep::gui
