// What the web page keeps of the app's settings file between visits: its display settings (the
// Display menu's theme, font_scale and hidden panels) and its "course" object (the guided
// course's progress). The file lives in the page's memory and goes with the visit; the page
// copies these two parts to the browser's localStorage (web/local_storage.cpp) and writes them
// back into the file before the app starts, where the link's display parameters then override
// the stored ones as the desktop's flags override the file. Plain C++ (no emscripten), so that
// the tests run it natively.
#pragma once
#include <string>

namespace flashstep::web {

// Each part as JSON text, "" where there is none.
struct StoredParts {
  std::string display;  // {"theme": ..., "font_scale": ..., "hidden": [...]}: the keys the file has
  std::string course;   // the "course" object
};

// The two parts of a settings file's text ("" for a part it lacks, both "" when it is not JSON).
StoredParts stored_parts(const std::string& file_text);

// Writes the settings file at `path` from stored parts, each checked as the app reads the file
// (app/gui/settings.h); a part the app would refuse is left out, with the reason in `refused`'s
// same part. Returns the parts written. Nothing stored: the file is not touched.
StoredParts restore_settings_file(const std::string& path, const StoredParts& stored, StoredParts* refused);

}  // namespace flashstep::web
