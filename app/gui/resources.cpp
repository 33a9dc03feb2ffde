#include "app/gui/resources.h"

#include "core/input_files.h"
#include "core/types.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#ifndef FLASHSTEP_SHADER_DIR
#define FLASHSTEP_SHADER_DIR ""
#endif
#ifndef FLASHSTEP_ASSET_DIR
#define FLASHSTEP_ASSET_DIR ""
#endif

namespace flashstep::gui {

namespace fs = std::filesystem;

namespace {

std::string find_dir(const char* compiled, const char* name) {
  std::error_code ec;
  if (compiled[0] && fs::is_directory(compiled, ec)) return compiled;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path dir = exe.parent_path();
    for (const fs::path& p : {dir / ".." / "share" / "flashstep" / name, dir / name})
      if (fs::is_directory(p, ec)) return p.string();
  }
  return compiled;  // does not exist: the caller's error names it
}

}  // namespace

std::string shader_dir() { return find_dir(FLASHSTEP_SHADER_DIR, "shaders"); }
std::string asset_dir() { return find_dir(FLASHSTEP_ASSET_DIR, "assets"); }

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
