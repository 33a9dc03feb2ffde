// What a user sees in the window, measured through --dump-state: the Bench figure and the
// Pipeline chart in the chosen theme, a number kept on the line of its unit, the colour bars and
// the compare view's map clear of the panel's edge and of the text above, the IO explorer's values
// beside their sliders, decode's one query row drawn as a band, the lesson's block table and
// lines within their panel, the softmax panel's, course column's and tiles' header lines within
// theirs, the view tabs whole, the fp8 chapter's pages in a narrow course column, the step's whole
// sentence in the algorithm panel, the memory panel within its width, the decoding pages' HBM table
// without scrolling, the lesson named a view, the panels' titles and the speed slider at font
// scale 2.5, and the compare, Bench and Pipeline views' controls, the Bench figure's y labels and
// the backward view's rows, the preset's name and a long word in the problem panel at font scale
// 2, the memory panel's sideways scrollbars in view and the Pipeline view's options and chart
// labels whole, the course's lines and chapter name within the column, the pseudocode listing's
// lines whole and several of them at font scale 2.5, the softmax panel's notes and plots and the
// bytes bar's share, the softmax table as tall as its rows with one format per column. Each case is one a visual audit found wrong at 1280x720 or 1024x768 (the
// last at 1600x1000).
#include "gui_window_helpers.h"

#include <algorithm>
#include <initializer_list>
#include <regex>
#include <string>
#include <utility>

using namespace fstest;
namespace fs = std::filesystem;

namespace {

// A colour's channels from the dump ([r, g, b]): the darkest and the lightest.
std::pair<int, int> channel_range(const nlohmann::json& rgb) {
  int lo = 255, hi = 0;
  for (const auto& c : rgb) {
    lo = std::min(lo, c.get<int>());
    hi = std::max(hi, c.get<int>());
  }
  return {lo, hi};
}

// A fresh settings file for one test (never the user's, and no choice left from another test).
std::string settings_for(const std::string& name) {
  const std::string path = out_path(name + "-settings.json");
  fs::remove(path);
  return "--settings " + path + " ";
}

// Runs `check` on the state dumped for each case's arguments (after `settings`), the arguments
// captured for a failure's report.
template <class Check>
void check_each_dump(const std::string& settings, std::initializer_list<const char*> cases, const std::string& name,
                     Check check) {
  for (const std::string args : cases) {
    CAPTURE(args);
    check(dumped_state(settings + args, name));
  }
}

}  // namespace

TEST_CASE("the Bench figure and the Pipeline chart's lanes follow the theme", "[gui][layout]") {
  // Both were drawn in the dark theme's colours whatever the theme: a near-black figure and
  // near-black lanes on the light theme's panels.
  const std::string settings = settings_for("theme-figures");
  for (const std::string theme : {"light", "dark"}) {
    CAPTURE(theme);
    const bool light = theme == "light";
    const std::string args = "--theme " + theme + " --size 1280x720";
    const nlohmann::json bench = dumped_state(settings + "--view bench " + args, "theme-bench");
    REQUIRE(bench["view"] == "bench");
    const auto [blo, bhi] = channel_range(bench["bench"]["figure_background_rgb"]);
    CHECK((light ? blo >= 200 : bhi <= 60));
    const nlohmann::json pipe = dumped_state(settings + "--view pipeline " + args, "theme-pipeline");
    REQUIRE(pipe["view"] == "pipeline");
    for (const auto& lane : pipe["pipeline"]["lane_rgb"]) {
      const auto [lo, hi] = channel_range(lane);
      CHECK((light ? lo >= 180 : hi <= 60));
    }
  }
}

TEST_CASE("a number stays on the line of its unit where the memory panel's header wraps", "[gui][layout]") {
  // In presentation mode the header "HBM: bytes so far (fp32, 4 B/element)" wrapped as "(fp32, 4"
  // and "B/element)". No line of the header, as drawn, may end in a bare number.
  const std::string settings = settings_for("number-unit");
  const std::regex bare_number_at_end("(^|[ (])[-+]?[0-9]+(\\.[0-9]+)?\n");
  for (const std::string args : {"--preset tiny --presentation --size 1280x720",
                                 "--preset fp8 --presentation --size 1024x768",
                                 "--preset dropout-bf16 --presentation --size 1024x768"}) {
    CAPTURE(args);
    const std::string header = dumped_state(settings + args, "number-unit")["memory_panel"]["header"];
    CAPTURE(header);
    REQUIRE(header.find('\n') != std::string::npos);  // it wraps here, so the case tests something
    CHECK_FALSE(std::regex_search(header, bare_number_at_end));
  }
}

TEST_CASE("the colour bars are not cut by the panel's bottom edge, nor the compare map drawn over the text above it",
          "[gui][layout]") {
  // dropout-bf16 at 1280x720 in presentation mode: the tiles keep half their width in height, the
  // view scrolls, and the bars' labels fell on the panel's bottom edge. Where the view must scroll
  // the bars now go above the tiles; the dump says how much of them the edge cuts.
  const std::string settings = settings_for("colour-bars");
  for (const std::string args : {"--preset dropout-bf16 --step 6 --presentation --size 1280x720",
                                 "--preset tiny --step 6 --presentation --size 1024x768",
                                 "--preset decode-paged --step 6 --presentation --size 1280x720",
                                 "--preset fa1-vs-fa2 --step 6 --size 1280x720",
                                 "--preset decode --step 6 --theme light --size 1024x768"}) {
    CAPTURE(args);
    const nlohmann::json j = dumped_state(settings + args, "colour-bars");
    REQUIRE(j["view"] == "tiles");
    CHECK(j["tiles"]["bar_cut_px"].get<double>() <= 0.5);
  }
  // The compare view in presentation mode at 1280x720 left |O - O_trace| a negative height: the
  // map and its colour bar were drawn upwards over the results. It keeps six lines of text.
  const std::string o = out_path("layout-O.npy"), lse = out_path("layout-lse.npy");
  const Result made =
      sh(std::string(FLASHSTEP_BIN) + " run --nq 8 --nk 8 --d 4 --M 64 --out-o " + o + " --out-lse " + lse, "layout-npy");
  REQUIRE(made.code == 0);
  const nlohmann::json j = dumped_state(settings + "--view compare --compare-o " + o + " --compare-lse " + lse +
                                            " --presentation --size 1280x720", "compare-map");
  REQUIRE(j["compare"]["loaded"] == true);
  CHECK(j["compare"]["map_px"][1].get<double>() >= 6 * j["display"]["font_px"].get<double>() - 1);
}

TEST_CASE("the IO explorer writes each value beside its slider, not under the grab", "[gui][layout][course]") {
  // ImGui centres a slider's text in its frame, where the grab covered "N = 16384".
  const std::string settings = settings_for("io-sliders");
  for (const std::string args : {"--size 1280x720", "--presentation --size 1280x720", "--theme light --size 1024x768"}) {
    CAPTURE(args);
    const nlohmann::json j = dumped_state(settings + "--course io-complexity --page 3 " + args, "io-sliders");
    CHECK(j["course"]["io_label_gap_px"].get<double>() >= 4.0);
  }
}

TEST_CASE("decode's one query row is a band, not a line, and stays clear of V^T's title", "[gui][layout]") {
  // Nq = 1 against 4096 keys gave Q, S, O and L 0.08 px of height: 1-px lines at 1280x720.
  const std::string settings = settings_for("decode-rows");
  for (const std::string args : {"--presentation --size 1280x720", "--size 1280x720", "--theme light --size 1024x768"}) {
    CAPTURE(args);
    const nlohmann::json j = dumped_state(settings + "--preset decode --step 6 " + args, "decode-rows");
    CHECK(j["tiles"]["rows_px"].get<double>() >= 0.7 * j["display"]["font_px"].get<double>());
    CHECK(j["tiles"]["rows_label_gap_px"].get<double>() >= 4.0);
    CHECK(j["tiles"]["decode_lse_gap_px"].get<double>() > 0.0);
  }
}

TEST_CASE("the lesson's block table fits its panel where a narrower form can", "[gui][layout]") {
  // At 1280x720 in presentation mode the rescale columns were scrolled out of view: there the table
  // takes its narrow form (a, b titles, three digits, old -> new on two lines) and nothing is cut;
  // with room it keeps its long titles.
  const std::string settings = settings_for("lesson-table");
  const std::string lesson = "--preset lesson --view lesson --lesson-blocks 2 ";
  const nlohmann::json narrow = dumped_state(settings + lesson + "--presentation --size 1280x720", "lesson-table");
  CHECK(narrow["lesson_table"]["form"] == 2);
  CHECK(narrow["lesson_table"]["clip_px"].get<double>() <= 0.5);
  const nlohmann::json course =
      dumped_state(settings + "--course online-softmax --page 1 --presentation --size 1280x720", "lesson-table");
  REQUIRE(course["view"] == "lesson");
  CHECK(course["lesson_table"]["clip_px"].get<double>() <= 0.5);
  const nlohmann::json wide = dumped_state(settings + lesson + "--size 1600x1000 --hide algorithm,problem", "lesson-table");
  CHECK(wide["lesson_table"]["form"] == 0);
  CHECK(wide["lesson_table"]["clip_px"].get<double>() <= 0.5);
}

TEST_CASE("K^T's block labels run to the last block, every stride-th where one label is wider than a block", "[gui][layout]") {
  // gpt2-medium (Tc = 16) labelled j=0 .. j=9 and stopped: "j=10" did not fit its block where
  // "j=9" did. Now the widest label sets a stride and the labels reach the last stride.
  const std::string settings = out_path("j-labels-settings.json");
  fs::remove(settings);
  for (const std::string args : {"--preset gpt2-medium --step 40 --size 1600x1000", "--preset gpt2-medium --size 1280x720",
                                 "--preset tiny --size 1600x1000"}) {
    CAPTURE(args);
    const nlohmann::json all = dumped_state("--settings " + settings + " " + args, "j-labels"), j = all["tiles"];
    const int64_t Tc = all["tiling"]["Tc"].get<int64_t>();
    const int64_t stride = j["j_stride"].get<int64_t>();
    CHECK(j["j_labels"].get<int64_t>() == (Tc + stride - 1) / stride);
    CHECK(j["j_last_label"].get<int64_t>() + stride >= Tc);
  }
}

TEST_CASE("the lesson view's lines stay within the centre panel, and its block table scrolls only where it must",
          "[gui][layout]") {
  // At 1024x768 in presentation mode "Start: m = -inf, l = 0, O = 0 (nothing seen yet)." ran past the
  // panel's edge; at 1280x720 the empty block table, which fits, showed a sideways scrollbar.
  const std::string settings = settings_for("lesson-lines");
  for (const std::string args : {"--course online-softmax --page 3 --presentation --size 1024x768",
                                 "--course online-softmax --page 3 --presentation --size 1280x720",
                                 "--course online-softmax --page 1 --presentation --size 1024x768",
                                 "--preset lesson --view lesson --presentation --size 1024x768",
                                 "--preset lesson --view lesson --theme light --size 1024x768"}) {
    CAPTURE(args);
    const nlohmann::json j = dumped_state(settings + args, "lesson-lines");
    REQUIRE(j["view"] == "lesson");
    CHECK(j["center_overflow_px"].get<double>() <= 0.5);
    CHECK(j["lesson_table"]["scroll_px"].get<double>() <= 0.5);
    CHECK(j["lesson_table"]["clip_px"].get<double>() <= 0.5);
  }
}

TEST_CASE("the softmax panel's lines, the course's buttons, the score tile's choices and M's line stay within their panels",
          "[gui][layout]") {
  // At 1024x768 in presentation mode: "Block i = 6 (rows 384-447), j = 0" and "after each merge,
  // j = 0 .. 0 of 2" ran past the softmax panel's edge, "New problem" past the course column's,
  // "P~_ij" past the tiles panel's, and "M = 64: Br = 4, Bc = 4, tau = 0.5" past the algorithm's.
  const std::string settings = settings_for("panel-edges");
  for (const std::string args : {"--preset gpt2-medium --step 40 --presentation --size 1024x768",
                                 "--course safe-softmax --page 2 --presentation --size 1024x768",
                                 "--course memory-bound --page 1 --presentation --size 1024x768",
                                 "--preset tiny --step 12 --presentation --size 1024x768",
                                 "--preset tiny --step 12 --presentation --size 1280x720"}) {
    CAPTURE(args);
    const nlohmann::json j = dumped_state(settings + args, "panel-edges");
    CHECK(j["softmax_panel"]["overflow_px"].get<double>() <= 0.5);
    CHECK(j["course"]["overflow_px"].get<double>() <= 0.5);
    CHECK(j["tiles"]["header_overflow_px"].get<double>() <= 0.5);
    CHECK(j["algorithm_panel"]["overflow_px"].get<double>() <= 0.5);
  }
}

TEST_CASE("no view tab is cut to a few letters: where the labels do not fit, a combo picks the view", "[gui][layout]") {
  // At 1024x768 in presentation mode ImGui shrank the tabs to "Less...", "Com...", "Benc...".
  const std::string settings = settings_for("view-tabs");
  const std::pair<std::string, std::string> cases[] = {
      {"--preset tiny --presentation --size 1024x768", "tiles"},
      {"--preset lesson --presentation --size 1024x768", "lesson"},
      {"--preset tiny --view compare --presentation --size 1024x768", "compare"},
      {"--preset tiny --presentation --size 1280x720", "tiles"},
      {"--preset tiny --size 1024x768", "tiles"},
      {"--course online-softmax --page 1 --presentation --size 1024x768", "lesson"}};
  for (const auto& [args, view] : cases) {
    CAPTURE(args);
    const nlohmann::json j = dumped_state(settings + args, "view-tabs");
    CHECK(j["view_tabs_cut"].get<int>() == 0);
    CHECK(j["view"] == view);  // the view asked for is the one shown, by a tab or by the combo
  }
}

TEST_CASE("decode's split labels keep clear of K^T's j labels, and the keys under the tiles stay within the panel",
          "[gui][layout]") {
  // The fp8 chapter's decoding page at 1024x768 in presentation mode drew "s=1" .. "s=4" over
  // "j=3" .. "j=63"; a key that moved to the next line left the line's end past the panel's edge.
  const std::string settings = settings_for("split-labels");
  for (const std::string args : {"--course fp8 --page 2 --presentation --size 1024x768",
                                 "--preset decode --step 300 --presentation --size 1024x768",
                                 "--preset tiny --step 6 --size 1024x768", "--course decode --page 1 --presentation --size 1280x720"}) {
    CAPTURE(args);
    const nlohmann::json j = dumped_state(settings + args, "split-labels");
    CHECK(j["tiles"]["split_label_overlaps"].get<int>() == 0);
    CHECK(j["center_overflow_px"].get<double>() <= 0.5);
  }
}

TEST_CASE("the HBM table narrows its cells' padding, then its byte counts, then scrolls sideways, rather than cut a number",
          "[gui][layout]") {
  // At 1024x768 in presentation mode decode's table cut "2.00 MiB" to "2.00 Mi" and "lse^(s)" to
  // "lse^(s", io-complexity's "tensor" to "tens..."; the dump measures each cell's text against
  // its whole column. Then the decoding pages' tables scrolled sideways by 7 to 15 px, the
  // written column partly hidden: their byte counts now take the tight form ("2KiB") and fit.
  const std::string settings = settings_for("hbm-scroll");
  struct Case {
    std::string args;
    bool tight_text, scrolls;
  };
  const Case cases[] = {
      {"--course paged-kv --page 2 --presentation --size 1024x768", true, false},
      {"--course fp8 --page 2 --presentation --size 1024x768", true, false},
      {"--course decode --page 1 --presentation --size 1024x768", true, false},
      {"--course io-complexity --page 2 --presentation --size 1024x768", false, false},  // 2 px cells are enough
      {"--preset decode --step 157 --presentation --font-scale 2.5 --size 1024x768", false, true}};
  for (const Case& c : cases) {
    CAPTURE(c.args);
    const nlohmann::json m = dumped_state(settings + c.args, "hbm-scroll")["memory_panel"];
    CHECK(m["table_clip_px"].get<double>() <= 0.5);
    CHECK(m["table_tight_text"] == c.tight_text);
    CHECK(m["table_scroll"] == c.scrolls);
  }
  // With room it does not scroll.
  const nlohmann::json m = dumped_state(settings + "--preset decode --step 157 --size 1600x1000", "hbm-scroll")["memory_panel"];
  CHECK(m["table_scroll"] == false);
}

TEST_CASE("the course's buttons keep one line where Back can be written short, so the page keeps its room",
          "[gui][layout][course]") {
  // "New problem" was cut at 1024x768 in presentation mode; putting it on a second line took a line
  // from the page, and the last parts of these chapters' pages (their questions) scrolled.
  const std::string settings = settings_for("course-nav");
  for (const std::string chapter : {"memory-bound", "masks-dropout-fusion", "decode"}) {
    CAPTURE(chapter);
    const Result r = run_gui(settings + "--course " + chapter + " --check-layout --presentation --size 1024x768", "course-nav");
    INFO(r.output);
    CHECK(r.code == 0);
  }
}

TEST_CASE("the fp8 chapter's pages fit a narrow course column: no part scrolls, no question's line is cut at its edge",
          "[gui][layout][course]") {
  // At 1024x768 in presentation mode the column is about 320 px wide: the decoding page's last
  // question scrolled by 68 px (the status took three lines, each choice kept the width of its
  // "a)" label), and "try 1; the answer shows after 2" and "within 0.1%" ran past the column's
  // right edge. --check-layout walks every part of every page and reports both.
  const std::string settings = settings_for("fp8-column");
  const Result r = run_gui(settings + "--course fp8 --check-layout --presentation --size 1024x768", "fp8-column");
  INFO(r.output);
  CHECK(r.code == 0);
  CHECK(r.output.find("4 of 4 pages fit") != std::string::npos);
  // A part of a page past its first, as --part shows it: the page's lines within the column.
  const nlohmann::json c =
      dumped_state(settings + "--course fp8 --page 1 --part 3 --presentation --size 1024x768", "fp8-column")["course"];
  CHECK(c["part"] == 3);
  CHECK(c["page_overflow"].get<double>() <= 0.5);
  CHECK(c["page_overflow_x_px"].get<double>() <= 0.5);
}

TEST_CASE("the algorithm panel shows the step's whole sentence in the course's right column", "[gui][layout][course]") {
  // At 1024x768 in presentation mode the sentence's box kept the listing five lines and hid the
  // sentence's last one to three lines (fp8's "... S_ij = tau Q_i K_j^T on chip.", the backward's
  // "D_i = rowsum(dO_i o O_i): ..."): the panel now grows to the sentence, and the loop variables
  // are written short where the long form takes two lines.
  const std::string settings = settings_for("algo-sentence");
  for (const std::string args : {"--course fp8 --page 1", "--course backward --page 2", "--course paged-kv --page 1",
                                 "--course masks-dropout-fusion --page 2", "--course online-softmax --page 4"}) {
    CAPTURE(args);
    const nlohmann::json j = dumped_state(settings + args + " --presentation --size 1024x768", "algo-sentence");
    CHECK(j["algorithm_panel"]["sentence_hidden_px"].get<double>() <= 0.5);
    CHECK(j["algorithm_panel"]["listing_lines"].get<double>() >= 4.0);  // and the listing keeps four lines
  }
}

TEST_CASE("the memory panel's SRAM lines stay within its width where a line ends near the edge", "[gui][layout]") {
  // The resident tiles ("Q_i 32.00 KiB  K_j ...") went to the next line by SameLine() then NewLine(),
  // which left the cursor, an item spacing past the last tile, in the panel's content width: 1 to
  // 9 px past the edge (9 px is the item spacing at 1.5x) wherever a tile ended near it.
  const std::string settings = settings_for("memory-width");
  for (const std::string args : {"--preset decode --step 12", "--preset gpt2-medium --step 40", "--preset l2-fa1-vs-fa2 --step 12",
                                 "--course io-complexity --page 2", "--course fp8 --page 2", "--course paged-kv --page 2"}) {
    CAPTURE(args);
    const nlohmann::json j = dumped_state(settings + args + " --presentation --size 1024x768", "memory-width");
    CHECK(j["memory_panel"]["overflow_px"].get<double>() <= 0.5);
  }
}

TEST_CASE("the course names the lesson a view, true where a combo replaces the view tabs", "[gui][layout][course]") {
  // At 1024x768 in presentation mode a combo picks the centre's view, and the page's outline and
  // a question's hint still sent the reader to "the online-softmax Lesson tab", which is not there.
  const std::string settings = settings_for("lesson-view-name");
  for (const std::string args : {"--presentation --size 1024x768", "--size 1600x1000"}) {
    CAPTURE(args);
    const nlohmann::json j = dumped_state(settings + "--course online-softmax --page 1 " + args, "lesson-view-name");
    REQUIRE(j["view"] == "lesson");
    const std::string outline = j["course"]["outline"];
    CHECK(outline.find("Lesson view") != std::string::npos);
    CHECK_FALSE(std::regex_search(outline, std::regex("\\btabs?\\b")));  // "block table" is no tab
    if (args.find("1024x768") != std::string::npos) CHECK(j["view_combo"] == true);  // the case that tests something
  }
}

TEST_CASE("a panel's title too long for its width is cut at a word with \"...\", never mid-word", "[gui][layout]") {
  // At font scale 2.5 in a 1024x768 window ImGui clipped the titles without a mark
  // ("FlashAttention, tile by til", "Online softmax sta") and the speed slider ran past the
  // controls' edge ("4." of "4.0").
  const std::string settings = settings_for("titles");
  for (const std::string args : {"--preset tiny --step 6 --font-scale 2.5 --size 1024x768",
                                 "--preset backward --step 40 --font-scale 2.5 --size 1024x768",
                                 "--preset lesson --view lesson --font-scale 2.5 --size 1024x768",
                                 "--course online-softmax --page 1 --font-scale 2.5 --size 1024x768"}) {
    CAPTURE(args);
    const nlohmann::json j = dumped_state(settings + args, "titles");
    REQUIRE(j["panel_titles"].size() >= 2);  // the course: its column and the centre
    int cut = 0;
    for (const auto& t : j["panel_titles"]) {
      CAPTURE(t.dump());
      const std::string title = t["title"], shown = t["shown"];
      CHECK(t["shown_px"].get<double>() <= t["room_px"].get<double>() + 0.5);
      if (shown == title) continue;
      ++cut;
      REQUIRE(shown.size() > 3);
      REQUIRE(shown.substr(shown.size() - 3) == "...");
      const std::string kept = shown.substr(0, shown.size() - 3);
      CHECK(title.compare(0, kept.size(), kept) == 0);  // a prefix of the title
      const char next = title[kept.size()];
      CHECK((next == ' ' || next == ',' || next == ':'));  // cut where a word ends
    }
    CHECK(cut >= 1);  // the case that tests something: at 2.5 some title does not fit
    CHECK(j["controls"]["overflow_px"].get<double>() <= 0.5);
    if (j["view_combo"] == true) CHECK(j["view_combo_cut_px"].get<double>() <= 0.5);  // the view's name whole
  }
  // With room every title is whole.
  const nlohmann::json j = dumped_state(settings + "--preset tiny --step 6 --size 1600x1000", "titles");
  REQUIRE(j["panel_titles"].size() >= 4);
  for (const auto& t : j["panel_titles"]) CHECK(t["shown"] == t["title"]);
  CHECK(j["controls"]["overflow_px"].get<double>() <= 0.5);
}

TEST_CASE("the compare, Bench and Pipeline views' controls stay within the centre panel at font scale 1.5 and 2",
          "[gui][layout]") {
  // At 1024x768 and font scale 2 "Run on this GPU" ran past the compare view's edge (the folder's
  // field a sliver before it), the .npy section's header showed "Final O and lse from .np", the
  // relative tolerance's label and "Save O, lse" ran past the edge; the Bench view's "Bc sweep
  // (Figure 2, middle)" and the Pipeline view's "wait (clocks)" did the same; and the Bench
  // figure drew "HBM traffic (GB)" and "runtime (ms)" over each other.
  const std::string settings = settings_for("view-controls");
  for (const std::string view : {"compare", "bench", "pipeline"})
    for (const std::string scale : {"1.5", "2.0"})
      for (const std::string size : {"1024x768", "1280x720"}) {
        const std::string args = "--view " + view + " --font-scale " + scale + " --size " + size;
        CAPTURE(args);
        const nlohmann::json j = dumped_state(settings + args, "view-controls");
        REQUIRE(j["view"] == view);
        CHECK(j["center_overflow_px"].get<double>() <= 0.5);
        if (view == "compare") CHECK(j["compare"]["header_cut_px"].get<double>() <= 0.5);
        if (view == "bench") {
          const nlohmann::json& b = j["bench"];
          REQUIRE(b["loaded"] == true);
          CHECK((b["y_labels_stacked"] == true || b["y_labels_gap_px"].get<double>() >= 0));
          if (scale == "2.0" && size == "1024x768") CHECK(b["y_labels_stacked"] == true);  // the case that tests it
        }
      }
}

TEST_CASE("the backward view's rows stay within the centre panel at font scale 2, the chip's boxes on two rows where they must",
          "[gui][layout]") {
  // At 1024x768 and font scale 2 the names on the chip's row ("P_ij dP_ij dS_ij D_i dV~_j dK~_j")
  // were wider than the view: "dK~_j" ran past its edge and every box shrank to a 1 px column.
  check_each_dump(settings_for("backward-rows"),
                  {"--preset backward --step 40 --font-scale 2.0 --size 1024x768",
                   "--course backward --page 1 --font-scale 2.0 --size 1024x768",
                   "--preset backward --step 40 --font-scale 1.5 --size 1024x768",
                   "--preset backward --step 40 --presentation --size 1024x768",
                   "--preset backward --step 40 --font-scale 2.0 --size 1280x720"},
                  "backward-rows", [](const nlohmann::json& j) {
                    REQUIRE(j["view"] == "tiles");
                    CHECK(j["tiles"]["backward_overflow_px"].get<double>() <= 0.5);
                    CHECK(j["tiles"]["backward_col_px"].get<double>() >= 4);
                  });
}

TEST_CASE("the problem panel shows the preset's whole name and breaks a word wider than its column", "[gui][layout]") {
  // At 1024x768 and font scale 2 the preset combo showed "backwa", "l2-fa1-v" and (wider than
  // the column with its arrow) "decode-pag", and the L2
  // preset's description ran "(docs/l2-model.md)" 23 px past the panel's edge: a word wider than
  // the column was never broken.
  check_each_dump(settings_for("problem-column"),
                  {"--preset l2-fa1-vs-fa2 --font-scale 2.0 --size 1024x768", "--preset backward --font-scale 2.0 --size 1024x768",
                   "--preset dropout-bf16 --font-scale 1.5 --size 1024x768", "--preset gpt2-medium --presentation --size 1024x768",
                   "--preset decode-paged --font-scale 2.0 --size 1024x768"},
                  "problem-column", [](const nlohmann::json& j) {
                    CHECK(j["problem_panel"]["overflow_px"].get<double>() <= 0.5);
                    CHECK(j["problem_panel"]["preset_combo_cut_px"].get<double>() <= 0.5);
                  });
}

TEST_CASE("the memory panel's tables keep their sideways scrollbars within the panel's view at font scale 2 and 2.5",
          "[gui][layout]") {
  // At font scale 2.5 in a 1024x768 window the HBM table, scrolling sideways, was as tall as its
  // rows: its scrollbar lay under the panel's bottom edge (fp8's header alone filled the view),
  // and the whole-run table's under the panel's view wherever it was scrolled to; "Load
  // measured" and gpt2-medium's "S_ij 64.00 KiB" ran past the panel's edge.
  check_each_dump(settings_for("memory-scrollbars"),
                  {"--preset tiny --step 6 --font-scale 2.5 --size 1024x768",
                   "--preset tiny --step 6 --font-scale 2.0 --size 1024x768",
                   "--preset tiny --step 6 --font-scale 2.5 --size 1280x720",
                   "--preset decode --step 12 --view pipeline --font-scale 2.5 --size 1024x768",
                   "--preset backward --step 40 --view lesson --font-scale 2.0 --size 1024x768",
                   "--preset fp8 --step 12 --font-scale 2.5 --size 1024x768",
                   "--preset gpt2-medium --step 12 --font-scale 2.5 --size 1024x768"},
                  "memory-scrollbars", [](const nlohmann::json& j) {
                    const nlohmann::json& m = j["memory_panel"];
                    REQUIRE(m["table_scroll"] == true);  // the cases that test something
                    REQUIRE(m["whole_run_scroll"] == true);
                    CHECK(m["table_hidden_px"].get<double>() <= 0.5);
                    CHECK(m["whole_run_hidden_px"].get<double>() <= 0.5);
                    CHECK(m["overflow_px"].get<double>() <= 0.5);
                  });
}

TEST_CASE("the Pipeline view's options and chart labels are whole at font scale 2 and 2.5", "[gui][layout]") {
  // At font scale 2.5 in a 1024x768 window the option "softmax-under-product" ran 105 px past the
  // view's edge, and the chart's lane names, column of technique names, figures and the PyTorch
  // lines' names were wider than the view or ran over the bars: each now goes on a line of its own
  // (the lanes' names above their bars), wrapped after a '-' where wider than the view.
  check_each_dump(settings_for("pipeline-labels"),
                  {"--view pipeline --font-scale 2.5 --size 1024x768", "--view pipeline --font-scale 2.5 --size 1280x720",
                   "--view pipeline --script 'pipeline backward' --font-scale 2.5 --size 1024x768",
                   "--view pipeline --font-scale 2.0 --size 1024x768", "--view pipeline --presentation --size 1024x768"},
                  "pipeline-labels", [](const nlohmann::json& j) {
                    REQUIRE(j["view"] == "pipeline");
                    CHECK(j["center_overflow_px"].get<double>() <= 0.5);
                    CHECK(j["pipeline"]["chart_clip_px"].get<double>() <= 0.5);
                    // and the bars keep room to run in: four characters' width at least
                    CHECK(j["pipeline"]["chart_bar_room_px"].get<double>() >= 4 * j["display"]["font_px"].get<double>());
                  });
}

TEST_CASE("at font scale 2.5 no course page's line runs past the column's edge, and the chapter's name shows whole",
          "[gui][layout][course]") {
  // At 1024x768 fourteen parts of pages ran a word wider than the column past its edge, by up to
  // 50 px ("diag(l_i^new)^-1", "softmax-weighted"), and the chapter picker showed "5. algorithm-";
  // the status's three lines left the page two lines, none once the picker's name went above it.
  // Scrolling a page is acceptable at this size; a cut line is not. --check-layout walks every
  // part of every page.
  const std::string settings = settings_for("course-2.5");
  const Result r = run_gui(settings + "--course --check-layout --font-scale 2.5 --size 1024x768", "course-2.5");
  INFO(r.output);
  REQUIRE(r.output.find("41 pages fit") != std::string::npos);  // it walked them all
  CHECK(r.output.find("past the column's edge") == std::string::npos);
  check_each_dump(settings, {"--course algorithm-1 --page 2 --font-scale 2.5 --size 1024x768",
                             "--course masks-dropout-fusion --page 1 --font-scale 2.5 --size 1024x768",
                             "--course io-complexity --page 1 --font-scale 2.0 --size 1024x768"},
                  "course-2.5", [](const nlohmann::json& j) {
                    CHECK(j["course"]["picker_cut_px"].get<double>() <= 0.5);
                    CHECK(j["course"]["page_view_h"].get<double>() >= 3 * j["display"]["font_px"].get<double>());
                  });
}

TEST_CASE("the scrubber's label stays on the slider at font scale 2.5, written short where the long form does not fit",
          "[gui][layout]") {
  // At 1024x768 "step 22 of 43" was wider than the grab's wider side and ran off the slider's
  // left end ("tep 22 of 43").
  check_each_dump(settings_for("scrub-label"),
                  {"--preset causal --step 22 --font-scale 2.5 --size 1024x768",
                   "--course masks-dropout-fusion --page 1 --font-scale 2.5 --size 1024x768",
                   "--preset gpt2-medium --step 905 --font-scale 2.5 --size 1024x768",
                   "--preset tiny --step 6 --font-scale 2.5 --size 1280x720"},
                  "scrub-label", [](const nlohmann::json& j) {
                    CHECK(j["controls"]["scrub_label_cut_px"].get<double>() <= 0.5);
                    CHECK(j["controls"]["scrub_label_gap_px"].get<double>() >= 0);  // and clear of the grab
                  });
}

TEST_CASE("at font scale 2.5 in a 1024x768 window no view's label runs past its panel", "[gui][layout]") {
  // An audit of every view found "block size" and "V (optional)" cut (the lesson, 94 px), the
  // lesson's softmax cells ("32059" of "0.032059", "not see"), "Load snapshot folder" (the
  // compare view, 29 px) and "follow block" (the softmax panel, 14 px).
  check_each_dump(settings_for("audit-2.5"),
                  {"--view tiles --preset tiny --step 12 --font-scale 2.5 --size 1024x768",
                   "--view lesson --preset tiny --step 12 --font-scale 2.5 --size 1024x768",
                   "--view compare --preset tiny --step 12 --font-scale 2.5 --size 1024x768",
                   "--view bench --preset tiny --step 12 --font-scale 2.5 --size 1024x768",
                   "--view pipeline --preset tiny --step 12 --font-scale 2.5 --size 1024x768",
                   "--view lesson --preset tiny --font-scale 2.5 --size 1024x3200 --hide controls"},  // its table in view
                  "audit-2.5", [](const nlohmann::json& j) {
                    CHECK(j["center_overflow_px"].get<double>() <= 0.5);
                    CHECK(j["softmax_panel"]["overflow_px"].get<double>() <= 0.5);
                    CHECK(j["memory_panel"]["overflow_px"].get<double>() <= 0.5);
                    CHECK(j["problem_panel"]["overflow_px"].get<double>() <= 0.5);
                    CHECK(j["algorithm_panel"]["overflow_px"].get<double>() <= 0.5);
                    CHECK(j["controls"]["overflow_px"].get<double>() <= 0.5);
                    if (j["view"] == "lesson") CHECK(j["lesson_table"]["softmax_clip_px"].get<double>() <= 0.5);
                  });
}

TEST_CASE("at font scale 2.5 in a 1024x768 window the pseudocode listing shows several whole-word lines", "[gui][layout]") {
  // The listing was 1.3 lines tall and its rows, about eight characters wide, wrapped inside words
  // ("t_i n" / "ew ="). Where a row's longest word is wider than its room the rows now scroll
  // sideways instead of wrapping; the listing keeps several lines with the current one in view.
  check_each_dump(settings_for("listing-2.5"),
                  {"--preset tiny --step 6 --font-scale 2.5 --size 1024x768",
                   "--preset backward --step 40 --font-scale 2.5 --size 1024x768",
                   "--preset fa1-vs-fa2 --step 9 --font-scale 2.5 --size 1024x768"},
                  "listing-2.5", [](const nlohmann::json& j) {
                    const nlohmann::json& a = j["algorithm_panel"];
                    CHECK(a["listing_sideways"] == true);
                    CHECK(a["listing_lines"].get<double>() >= 3.5);
                    CHECK(a["current_shown_px"].get<double>() >= 0.8 * j["display"]["font_px"].get<double>());
                    CHECK(a["overflow_px"].get<double>() <= 0.5);
                  });
  // At font scale 1 the rows keep wrapping at spaces, as before, with room for every word.
  check_each_dump(settings_for("listing-1"), {"--preset tiny --step 6 --size 1280x720"}, "listing-1",
                  [](const nlohmann::json& j) {
                    CHECK(j["algorithm_panel"]["listing_sideways"] == false);
                    CHECK(j["algorithm_panel"]["listing_lines"].get<double>() >= 8.0);
                    CHECK(j["algorithm_panel"]["current_shown_px"].get<double>() > 0);
                  });
}

TEST_CASE("the problem panel's pages are named whole: tabs where they fit, else a combo", "[gui][layout]") {
  // At font scale 2.5 in a 1024x768 window ImGui shortened the tabs to "Prob..." and "Exp...".
  check_each_dump(settings_for("problem-pages"),
                  {"--preset tiny --step 6 --font-scale 2.5 --size 1024x768",
                   "--preset backward --step 40 --font-scale 2.5 --size 1280x720",
                   "--preset tiny --step 6 --size 1280x720", "--preset tiny --presentation --size 1024x768"},
                  "problem-pages", [](const nlohmann::json& j) {
                    CHECK(j["problem_panel"]["tabs_cut"] == 0);
                    CHECK(j["problem_panel"]["page"] == "problem");
                    CHECK(j["problem_panel"]["overflow_px"].get<double>() <= 0.5);
                  });
  // At font scale 1 they stay tabs.
  const nlohmann::json j = dumped_state(settings_for("problem-tabs") + "--preset tiny --size 1280x720", "problem-tabs");
  CHECK(j["problem_panel"]["page_combo"] == false);
}

TEST_CASE("the softmax panel names the schedule's own lines and keeps its curves under their labels, and the bytes bar "
          "says 100% only at the end",
          "[gui][layout]") {
  // Decode at FD L7 said "Line 9 of this (i, j) has not run yet." above "Row 0 has not been merged
  // yet (FD L8)": decode merges at L8. Its saw-tooth m_0 ran through the plot's label "m_0 =
  // 3.2007", and at step 300 of 315, with the combine's 8 KiB of 4 MiB still to come, the memory
  // panel's bar read "(100%)".
  const std::string settings = settings_for("softmax-notes");
  const std::pair<std::string, std::string> notes[] = {
      {"--preset decode --step 4", "FD L8 of this (i, j) has not run yet."},
      {"--preset tiny --step 5", "Alg1 L10 done: m~_ij, l~_ij known; Alg1 L11 merges them next."},
      {"--preset causal --step 30", "Alg1 L10 of this (i, j) has not run yet."}};
  for (const auto& [args, note] : notes) {
    CAPTURE(args);
    CHECK(dumped_state(settings + args, "softmax-notes")["softmax_panel"]["note"] == note);
  }
  const std::pair<std::string, int> bars[] = {{"--preset decode --step 300", 99},
                                              {"--preset decode --step 315", 100},
                                              {"--preset tiny --step 19", 76}};
  for (const auto& [args, pct] : bars) {
    CAPTURE(args);
    const nlohmann::json j = dumped_state(settings + args, "softmax-notes");
    CHECK(j["memory_panel"]["so_far_pct"] == pct);
    CHECK(j["softmax_panel"]["plot_label_clear_px"].get<double>() >= -0.5);
  }
}

TEST_CASE("the softmax table is as tall as its rows, and each column's values have one format", "[gui][layout]") {
  // A fixed minimum of three lines left a blank row under a one-row block (decode) and under the
  // course's four-row block; %.4g printed "0.343" over "0.3357" in one column.
  const std::string settings = settings_for("softmax-table");
  check_each_dump(settings, {"--preset decode --step 3", "--preset decode --step 3 --size 1280x720",
                             "--preset decode --step 300",  // every column filled: room made for a scrollbar it did not need
                             "--course safe-softmax --page 2", "--course online-softmax --page 2"},
                  "softmax-table", [](const nlohmann::json& j) {
                    const nlohmann::json& t = j["softmax_panel"];
                    CHECK(t["table_blank_px"].get<double>() >= -1);
                    CHECK(t["table_blank_px"].get<double>() <= 4);  // a border's pixels, not a row
                    REQUIRE(t["table_fixed"].size() == t["table_columns"].get<size_t>());
                    for (const auto& f : t["table_fixed"]) CHECK(f == true);  // m, l and their factors: three decimals
                  });
}
