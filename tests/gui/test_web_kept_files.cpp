// The web page's files from the computer across visits (web/kept_files.h), natively: the page's
// /upload folder is a plain folder here, and a "visit" is a fresh AppState with a fresh KeptFiles
// over the same folder. The browser's part (IndexedDB through emscripten's IDBFS, a browser that
// refuses it) is checked in headless Chromium by .ci/web-check.sh.
#include "app/gui/app_state.h"
#include "app/gui/options.h"
#include "gui_test_helpers.h"
#include "web/kept_files.h"

#include <filesystem>
#include <fstream>

using namespace flashstep;
using Catch::Matchers::Contains;

namespace {

void put_text(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// A visit's app as a plain link opens it: the default problem, the shipped bench results.
gui::AppState visit() {
  gui::AppState s;
  gui::prepare_state(s, gui::GuiOptions{});
  return s;
}

std::string shipped_bench() { return std::string(FLASHSTEP_ASSET_DIR) + "/bench/h200.json"; }

}  // namespace

TEST_CASE("web kept files: a bench file opened in one visit opens in the next and is gone once forgotten", "[gui][web]") {
  const std::string root = fresh_dir("web-kept") + "/upload";
  const std::string mine = root + "/bench/mine.json", refused = root + "/bench/2/broken.json";
  {
    gui::AppState s = visit();
    web::KeptFiles kept(root);
    bool changed = true;
    CHECK(kept.restore(s, &changed).empty());  // a first visit: nothing kept, nothing to say
    CHECK_FALSE(changed);
    put_text(mine, file_text(shipped_bench()));
    s.load_local_file(gui::LocalFile::bench, mine);
    CHECK(kept.note_loaded(s, gui::LocalFile::bench, mine));
    put_text(refused, "{\"runs\": [");
    s.load_local_file(gui::LocalFile::bench, refused);
    CHECK(kept.note_loaded(s, gui::LocalFile::bench, refused));
    CHECK_FALSE(std::filesystem::exists(refused));  // refused: not kept
    CHECK(kept.count() == 1);
    // A saved trace makes the run, which the link names: not kept.
    put_text(root + "/trace/t.json", "{}");
    CHECK_FALSE(kept.note_loaded(s, gui::LocalFile::trace, root + "/trace/t.json"));
  }
  {
    gui::AppState s = visit();
    web::KeptFiles kept(root);
    bool changed = false;
    CHECK(kept.restore(s, &changed).empty());
    CHECK(changed);  // the visit's trace was removed
    CHECK_FALSE(std::filesystem::exists(root + "/trace/t.json"));
    CHECK(std::string(s.bench.path) == mine);
    CHECK(s.bench.loaded);
    CHECK(s.bench.error.empty());
    CHECK(s.view == gui::View::tiles);  // the view stays the link's
    kept.forget(s);
    CHECK(std::filesystem::is_empty(root));
    CHECK(std::string(s.bench.path) == shipped_bench());
    CHECK(s.bench.error.empty());
    CHECK(kept.count() == 0);
  }
  gui::AppState s = visit();
  web::KeptFiles kept(root);
  bool changed = true;
  CHECK(kept.restore(s, &changed).empty());
  CHECK(std::string(s.bench.path) == shipped_bench());
}

TEST_CASE("web kept files: a kept file that went bad gets the view's error and one that is gone gets none", "[gui][web]") {
  const std::string root = fresh_dir("web-kept-bad") + "/upload";
  const std::string bench = root + "/bench/mine.json", dram = root + "/dram/ncu.json";
  put_text(bench, "{\"runs\": [");
  put_text(root + "/kept.json", "{\"bench\": \"" + bench + "\", \"dram\": \"" + dram + "\"}");
  gui::AppState fresh = visit();
  fresh.load_local_file(gui::LocalFile::bench, bench);
  const std::string upload_error = fresh.bench.error;  // what a fresh upload of the file says
  REQUIRE_THAT(upload_error, Contains("mine.json"));

  gui::AppState s = visit();
  web::KeptFiles kept(root);
  bool changed = false;
  const std::vector<std::string> log = kept.restore(s, &changed);
  CHECK(s.bench.error == upload_error);
  CHECK(std::string(s.bench.path) == shipped_bench());  // the shipped results stay shown
  CHECK(s.bench.loaded);
  CHECK(s.dram.error.empty());  // gone: the panel as with no file, a line for the console only
  CHECK_FALSE(s.dram.loaded);
  REQUIRE(log.size() == 2);
  CHECK_THAT(log[0], Contains("ncu.json is gone"));
  CHECK(changed);  // kept.json rewritten without the file that is gone
  CHECK_THAT(file_text(root + "/kept.json"), !Contains("ncu.json"));
  CHECK(std::filesystem::exists(bench));  // a bad file stays kept until another or a forget

  put_text(root + "/kept.json", "[1, 2");  // not the page's: dropped, nothing opened
  gui::AppState t = visit();
  web::KeptFiles again(root);
  const std::vector<std::string> log2 = again.restore(t, &changed);
  REQUIRE(log2.size() == 1);
  CHECK_THAT(log2[0], Contains("kept.json is not readable"));
  CHECK(t.bench.error.empty());
  CHECK(std::string(t.bench.path) == shipped_bench());
}
