#include "core/data_dir.h"

#include <filesystem>
#include <system_error>

// The source tree's root, set by core/CMakeLists.txt (the web build sets its preloaded root, /).
#ifndef FLASHSTEP_SOURCE_DIR
#error "FLASHSTEP_SOURCE_DIR must name the source tree (core/CMakeLists.txt sets it)"
#endif

namespace flashstep {

namespace fs = std::filesystem;

std::string data_root_for(const std::string& exe, const std::string& source_dir) {
  std::error_code ec;
  if (!exe.empty()) {
    const fs::path installed = fs::path(exe).parent_path() / ".." / "share" / "flashstep";
    if (fs::is_directory(installed, ec)) return installed.lexically_normal().string();
  }
  return source_dir;
}

std::string data_root() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return data_root_for(ec ? std::string() : exe.string(), FLASHSTEP_SOURCE_DIR);
}

std::string data_path(const std::string& relative) { return (fs::path(data_root()) / relative).string(); }

}  // namespace flashstep
