#include "app/gui/resources.h"

#include "core/data_dir.h"
#include "core/input_files.h"
#include "core/types.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace flashstep::gui {

namespace fs = std::filesystem;

std::string shader_dir() { return data_path("shaders"); }
std::string asset_dir() { return data_path("assets"); }

std::string system_font(bool mono) {
  const char* path = mono ? "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
                          : "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
  std::error_code ec;
  return fs::exists(path, ec) ? path : "";
}

std::string read_text_file(const std::string& path) {
  return read_input_file(path, "the app's file", int64_t(1) << 20);  // a shader: a few KiB
}

}  // namespace flashstep::gui
