// Where flashstep finds the files it reads at run time: the presets and bench files under
// assets/, the heatmap shaders under shaders/. One rule, in one place, for every reader:
//
//   installed (the Debian package, or `cmake --install` to any prefix): the executable is
//     <prefix>/bin/flashstep and the files are in <prefix>/share/flashstep/ (/usr/share/flashstep);
//   run from a build tree (build/app/flashstep): <exe dir>/../share/flashstep does not exist, and
//     the files are read from the source tree the program was built from (compiled in).
//
// The installed tree mirrors the source tree (share/flashstep/assets/presets, .../shaders), so a
// reader asks for one relative path, data_path("assets/presets"), whichever root it gets. The
// installed copy wins over the source tree: a package built on a machine that still has the
// source must read what it installed.
#pragma once
#include <string>

namespace flashstep {

// The rule itself, for any executable path and source tree (the tests give both):
// <dir of exe>/../share/flashstep when that is a folder, else source_dir.
std::string data_root_for(const std::string& exe, const std::string& source_dir);

// data_root_for(this program's /proc/self/exe, the source tree compiled in). Without
// /proc/self/exe (the WebAssembly build) the compiled-in root is used.
std::string data_root();

// data_root() joined with a path relative to it, e.g. data_path("assets/bench/h200.json").
std::string data_path(const std::string& relative);

}  // namespace flashstep
