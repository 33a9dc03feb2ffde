// Where the app finds its shaders/ and assets/ at run time.
#pragma once
#include <string>

namespace flashstep::gui {

// shaders/ and assets/ under the data root: /usr/share/flashstep when installed, the source
// tree when run from a build tree (core/data_dir.h has the rule).
std::string shader_dir();
std::string asset_dir();
// A TrueType font from fonts-dejavu-core, or "" (ImGui's built-in font is used then).
std::string system_font(bool mono);
// Whole file as text; throws InputError naming the path.
std::string read_text_file(const std::string& path);

}  // namespace flashstep::gui
