// The program's outputs, byte for byte, against files written by the program before its code
// was reorganised around the schedule registry (tests/fixtures/cases.txt lists the commands;
// make_fixtures.sh wrote the files): trace JSON of every schedule forward and with the backward,
// masked, ragged, with dropout and with the L2 model; CSV and Chrome traces; snapshot folders;
// what run --steps, the summary and explain print.
#include "test_helpers.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

namespace fsys = std::filesystem;

namespace {

using fstest::kBin;
const fsys::path kFixtures = FLASHSTEP_FIXTURES_DIR;

std::string read_all(const fsys::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

struct FixtureCase {
  std::string name, kind, args;
};

std::vector<FixtureCase> read_cases() {
  std::vector<FixtureCase> cases;
  std::ifstream in(kFixtures / "cases.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream is(line);
    FixtureCase c;
    is >> c.name >> c.kind;
    std::getline(is, c.args);
    cases.push_back(c);
  }
  return cases;
}

// The first byte where two texts differ, with a little context, for the failure message.
std::string first_difference(const std::string& got, const std::string& want) {
  size_t k = 0;
  while (k < got.size() && k < want.size() && got[k] == want[k]) ++k;
  const size_t from = k > 80 ? k - 80 : 0;
  return "at byte " + std::to_string(k) + "\n got: ..." + got.substr(from, 160) + "\nwant: ..." + want.substr(from, 160);
}

}  // namespace

TEST_CASE("traces, snapshots and printed output of every schedule match the stored fixtures byte for byte",
          "[cli][fixtures]") {
  const std::vector<FixtureCase> cases = read_cases();
  REQUIRE(cases.size() >= 20);
  const fstest::TempDir tmp;
  for (const FixtureCase& c : cases) {
    INFO(c.name << ": flashstep" << c.args);
    const fsys::path out = tmp.path / c.name;
    std::string output;
    int rc = 0;
    std::vector<std::pair<fsys::path, fsys::path>> files;  // (written, expected)
    if (c.kind == "stdout") {
      rc = fstest::run_command(kBin + c.args + " 2>/dev/null", output);
      const std::string want = read_all(kFixtures / (c.name + ".txt"));
      CHECK(rc == 0);
      if (output != want) FAIL_CHECK("printed output differs " << first_difference(output, want));
      continue;
    }
    if (c.kind == "json") {
      rc = fstest::run_command(kBin + c.args + " --trace " + out.string() + ".json", output);
      files.push_back({out.string() + ".json", kFixtures / (c.name + ".json")});
    } else if (c.kind == "csv") {
      rc = fstest::run_command(kBin + c.args + " --csv " + out.string() + ".csv", output);
      files.push_back({out.string() + ".csv", kFixtures / (c.name + ".csv")});
    } else if (c.kind == "chrome") {
      rc = fstest::run_command(kBin + c.args + " --chrome " + out.string() + ".chrome.json", output);
      files.push_back({out.string() + ".chrome.json", kFixtures / (c.name + ".chrome.json")});
    } else {
      REQUIRE(c.kind == "snap");
      rc = fstest::run_command(kBin + c.args + " --snapshots " + out.string(), output);
      size_t n = 0;
      for (const auto& e : fsys::directory_iterator(kFixtures / (c.name + ".snap"))) {
        files.push_back({out / e.path().filename(), e.path()});
        ++n;
      }
      CHECK(n >= 2);  // the manifest and at least one .npy file
      if (rc == 0) {
        size_t written = 0;
        for ([[maybe_unused]] const auto& e : fsys::directory_iterator(out)) ++written;
        CHECK(written == n);
      }
    }
    CHECK(rc == 0);
    for (const auto& [got_path, want_path] : files) {
      INFO(want_path.filename().string());
      const std::string got = read_all(got_path), want = read_all(want_path);
      CHECK(!want.empty());
      if (got != want) FAIL_CHECK("file differs " << first_difference(got, want));
    }
  }
}
