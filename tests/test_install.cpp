// What an installed flashstep relies on (docs/packaging.md). Where it finds its data
// (core/data_dir.h): <exe dir>/../share/flashstep when that folder exists (an installed program),
// else the source tree compiled in (a build tree); tested on made-up trees, on the test program's
// own root, and with a copy of the flashstep program "installed" into a temporary prefix, which
// must read the prefix's files and not the source's. And its version, from the project() line.
#include "cli_helpers.h"
#include "core/data_dir.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace {

void write_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

}  // namespace

TEST_CASE("data root: <prefix>/share/flashstep beside <prefix>/bin when it is a folder, else the source tree", "[install]") {
  const fstest::TempDir tmp;
  const fs::path prefix = tmp.path / "prefix";
  const std::string exe = (prefix / "bin" / "flashstep").string();
  const std::string source = (tmp.path / "source").string();
  write_file(exe, "");
  const std::string layout = GENERATE("none", "folder", "file", "deeper");
  CAPTURE(layout);
  if (layout == "none") {  // a build tree: build/app/flashstep has no build/share/flashstep
    REQUIRE(flashstep::data_root_for(exe, source) == source);
  } else if (layout == "folder") {  // installed: the folder wins over the source tree
    fs::create_directories(prefix / "share" / "flashstep");
    REQUIRE(flashstep::data_root_for(exe, source) == (prefix / "share" / "flashstep").string());
  } else if (layout == "file") {  // a file of that name is not a data root
    write_file(prefix / "share" / "flashstep", "not a folder");
    REQUIRE(flashstep::data_root_for(exe, source) == source);
  } else {  // only the executable's own folder counts: <prefix>/share/flashstep for <prefix>/bin/x/flashstep is not it
    fs::create_directories(prefix / "share" / "flashstep");
    REQUIRE(flashstep::data_root_for((prefix / "bin" / "x" / "flashstep").string(), source) == source);
  }
  REQUIRE(flashstep::data_root_for("", source) == source);  // no /proc/self/exe (the web build)
}

TEST_CASE("data root: the test program, run from its build tree, reads the source tree", "[install]") {
  REQUIRE(fs::equivalent(flashstep::data_path("assets/bench/h200.json"), FLASHSTEP_BENCH_FILE));
  REQUIRE(fs::is_regular_file(flashstep::data_path("assets/presets/tiny.json")));
  REQUIRE(fs::is_regular_file(flashstep::data_path("shaders/heatmap.frag")));
}

TEST_CASE("data root: a copy of flashstep installed into a prefix reads <prefix>/share/flashstep", "[install]") {
  // `learn memory-bound` reads the bench file (assets/bench/h200.json) for its measured points.
  const fstest::TempDir tmp;
  const fs::path bin = tmp.path / "bin" / "flashstep";
  const fs::path bench = tmp.path / "share" / "flashstep" / "assets" / "bench" / "h200.json";
  fs::create_directories(bin.parent_path());
  fs::copy_file(fstest::kBin, bin);
  fs::create_directories(bench.parent_path());
  const std::string args = " learn memory-bound --answers";
  const fstest::Outcome from_build = fstest::run_flashstep(args);
  REQUIRE(from_build.rc == 0);

  SECTION("a broken bench file in the prefix is the one read: its error names the prefix's path") {
    write_file(bench, "{\"flashstep_bench\": ");
    const fstest::Outcome o = fstest::run_limited(bin.string() + args);
    REQUIRE(o.rc == 2);
    REQUIRE(fstest::one_error_line(o.out));
    REQUIRE(o.out.find(bench.string()) != std::string::npos);
  }
  SECTION("the same files in the prefix give the build tree's output") {
    fs::copy_file(FLASHSTEP_BENCH_FILE, bench);
    const fstest::Outcome o = fstest::run_limited(bin.string() + args);
    REQUIRE(o.rc == 0);
    REQUIRE(o.out == from_build.out);
  }
}

TEST_CASE("flashstep --version prints the project's version and what the build has, and exits 0", "[install]") {
  const fstest::Outcome o = fstest::run_flashstep("--version");
  REQUIRE(o.rc == 0);
  const std::string expected = std::string("flashstep ") + FLASHSTEP_PROJECT_VERSION + " (desktop app: ";
  REQUIRE(o.out.rfind(expected, 0) == 0);
  REQUIRE(o.out.find(FLASHSTEP_BIN_HAS_CUDA ? "GPU backend: yes)" : "GPU backend: no)") != std::string::npos);
  REQUIRE(o.out.find('\n') == o.out.size() - 1);  // one line
}
