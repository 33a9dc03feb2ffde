// The desktop app in a real window: each test runs the flashstep program under xvfb-run (Mesa's
// software OpenGL) and checks what only a window makes: the PNG, the frame benchmark's idle
// frames, the message without a display. The app's behaviour (stepping, the editor, exports,
// agreement with core's Cursor) is tested in-process in test_gui_state.cpp.
#include "core/npy.h"
#include "core/run.h"
#include "gui_test_helpers.h"
#include "gui_window_helpers.h"
#include "tests/png_helpers.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <regex>
#include <set>
#include <string>

using namespace flashstep;
using namespace fstest;
namespace fs = std::filesystem;

TEST_CASE("screenshot: the PNG exists, has the requested size and is not blank", "[gui]") {
  const auto [size, w, h] = GENERATE(table<std::string, int, int>({{"1600x1000", 1600, 1000}, {"1280x720", 1280, 720}}));
  const std::string png = out_path("size-" + size + ".png");
  fs::remove(png);
  const Result r = run_gui("--step 5 --size " + size + " --screenshot " + png, "size-" + size);
  INFO(r.output);
  REQUIRE(r.code == 0);
  REQUIRE(fs::exists(png));
  const Image im = load_png(png);
  REQUIRE(im.w == w);
  REQUIRE(im.h == h);
  // Not blank: many distinct colours (heatmaps, text), not one background.
  REQUIRE(distinct_colours(im) > 200);
}

TEST_CASE("screenshot: step 0 and step K differ", "[gui]") {
  const std::string a = out_path("step0.png"), b = out_path("step12.png");
  REQUIRE(run_gui("--step 0 --screenshot " + a, "step0").code == 0);
  REQUIRE(run_gui("--step 12 --screenshot " + b, "step12").code == 0);
  const Image ia = load_png(a), ib = load_png(b);
  REQUIRE(ia.w == ib.w);
  REQUIRE(ia.h == ib.h);
  REQUIRE(pixels_differing(ia, ib) > 5000);  // O, l, m written, S tiles computed, counters and highlights moved
}

TEST_CASE("screenshots of the fa2 and masked dropout presets are not blank and differ", "[gui]") {
  const std::string a = out_path("fa2.png"), b = out_path("dropout-bf16.png"), c = out_path("fa2-end.png");
  REQUIRE(run_gui("--preset fa1-vs-fa2 --step 9 --screenshot " + a, "fa2-shot").code == 0);
  REQUIRE(run_gui("--preset dropout-bf16 --step 22 --screenshot " + b, "dropout-shot").code == 0);
  REQUIRE(run_gui("--preset fa1-vs-fa2 --step 28 --screenshot " + c, "fa2-end-shot").code == 0);
  const Image ia = load_png(a), ib = load_png(b), ic = load_png(c);
  for (const Image* im : {&ia, &ib, &ic}) {
    REQUIRE(im->w == 1600);
    REQUIRE(im->h == 1000);
    REQUIRE(distinct_colours(*im) > 200);
  }
  REQUIRE(pixels_differing(ia, ib) > 5000);
  REQUIRE(pixels_differing(ia, ic) > 5000);  // O and L written by the end, every tile computed
  // The dropped entries of the current P~ tile are drawn in their own colour (magenta).
  auto magenta = [](const Image& im) {
    size_t n = 0;
    for (size_t p = 0; p < im.rgb.size(); p += 3) n += im.rgb[p] == 255 && im.rgb[p + 1] == 70 && im.rgb[p + 2] == 200;
    return n;
  };
  // Step 21 is FA2 L9 of the same tile (P~ shown, dropout not applied yet): same legend, no crosses.
  const std::string before = out_path("dropout-before.png");
  REQUIRE(run_gui("--preset dropout-bf16 --step 21 --screenshot " + before, "dropout-before").code == 0);
  const Image id = load_png(before);
  INFO("magenta pixels: fa2 " << magenta(ia) << ", L9 " << magenta(id) << ", L10 " << magenta(ib));
  REQUIRE(magenta(ia) == 0);  // no dropout: no legend entry either
  REQUIRE(magenta(ib) > magenta(id) + 20);
}

TEST_CASE("screenshots of the backward: the preset opens on it, later steps and fa2 differ", "[gui][backward]") {
  const std::string a = out_path("bwd-open.png"), b = out_path("bwd-later.png"), c = out_path("bwd-fa2.png");
  const std::string da = out_path("bwd-open.json"), db = out_path("bwd-later.json");
  const std::string fwd = out_path("bwd-forward.png");
  REQUIRE(run_gui("--preset backward --screenshot " + a + " --dump-state " + da, "bwd-open").code == 0);
  REQUIRE(run_gui("--preset backward --step 30 --screenshot " + b + " --dump-state " + db, "bwd-later").code == 0);
  REQUIRE(run_gui("--preset fa1-vs-fa2 --backward --step 12 --screenshot " + c, "bwd-fa2").code == 0);
  REQUIRE(run_gui("--preset backward --script 'seek 20' --screenshot " + fwd, "bwd-forward").code == 0);
  const nlohmann::json ja = load_json(da), jb = load_json(db);
  REQUIRE(ja["backward"]["in_backward"].get<bool>());
  REQUIRE(ja["line"].get<std::string>() == "Alg4 L5");
  REQUIRE(jb["index"].get<size_t>() == ja["index"].get<size_t>() + 30);
  REQUIRE(jb["line"].get<std::string>().rfind("Alg4", 0) == 0);
  const Image ia = load_png(a), ib = load_png(b), ic = load_png(c), iff = load_png(fwd);
  for (const Image* im : {&ia, &ib, &ic}) {
    REQUIRE(im->w == 1600);
    REQUIRE(im->h == 1000);
    REQUIRE(distinct_colours(*im) > 200);
  }
  // The backward view's colour key (its largest positive value's colour) is drawn only there.
  auto key_red = [](const Image& im) {
    size_t n = 0;
    for (size_t p = 0; p < im.rgb.size(); p += 3) n += im.rgb[p] == 240 && im.rgb[p + 1] == 100 && im.rgb[p + 2] == 58;
    return n;
  };
  INFO("key pixels: open " << key_red(ia) << ", later " << key_red(ib) << ", fa2 " << key_red(ic) << ", forward "
                           << key_red(iff));
  REQUIRE(key_red(ia) > 50);
  REQUIRE(key_red(ib) > key_red(ia));  // dQ, dK, dV and the chip's tiles have values by then
  REQUIRE(key_red(ic) > 50);
  REQUIRE(key_red(iff) == 0);
  REQUIRE(pixels_differing(ia, ib) > 5000);
  REQUIRE(pixels_differing(ia, iff) > 5000);
}

TEST_CASE("the L2 preset with a measurement renders, and its memory panel differs from the run without the model", "[gui][l2]") {
  const std::string a = out_path("l2.png"), b = out_path("l2-off.png");
  const std::string dram = std::string(FLASHSTEP_SOURCE_DIR) + "/gpu/results/dram/ncu.json";
  const std::string c = out_path("l2-no-dram.png"), da = out_path("l2-shot.json");
  REQUIRE(run_gui("--preset l2-fa1-vs-fa2 --step 300 --dram " + dram + " --screenshot " + a + " --dump-state " + da,
                  "l2-shot").code == 0);
  REQUIRE(run_gui("--preset l2-fa1-vs-fa2 --script \"set l2 off; apply; seek 300\" --screenshot " + b, "l2-off-shot").code == 0);
  REQUIRE(run_gui("--preset l2-fa1-vs-fa2 --step 300 --screenshot " + c, "l2-no-dram").code == 0);
  const Image ia = load_png(a), ib = load_png(b), ic = load_png(c);
  REQUIRE(distinct_colours(ia) > 200);
  REQUIRE(pixels_differing(ia, ib) > 2000);  // the DRAM lines, the L2 bar and the table's rows
  // The measurement itself: loaded with every point of the file, and drawn (the same preset and
  // step without --dram looks different only by the measured rows).
  const nlohmann::json st = load_json(da), file = load_json(dram);
  REQUIRE(st["dram"]["loaded"].get<bool>());
  REQUIRE(st["dram"]["points"].get<size_t>() == file["points"].size());
  INFO("pixels differing with and without --dram: " << pixels_differing(ia, ic));
  REQUIRE(pixels_differing(ia, ic) > 200);
}

TEST_CASE("bad input fails with one clear line and no window", "[gui]") {
  // The messages of every bad option are tested in-process; here, what the program does with one.
  const auto [args, expect] = GENERATE(table<std::string, std::string>({
      {"--preset nope --screenshot x.png", "flashstep: error: unknown preset 'nope'"},
      {"--size wide --screenshot x.png", "flashstep: error: --size must look like"},
      {"--presentation --font-scale 3 --screenshot x.png", "flashstep: error: --font-scale must be a number from 0.75 to 2.5"},
      {"--frames f --to 3 --screenshot x.png", "flashstep: error: --frames, --gif and --video cannot be combined"},
      {"--dram no-such.json --screenshot x.png", "flashstep: error: --dram: measurement file no-such.json: cannot read: No such file"},
  }));
  const Result r = run_gui(args, "bad");
  INFO(r.output);
  REQUIRE(r.code == 2);
  REQUIRE(r.output.find(expect) != std::string::npos);
  REQUIRE(std::count(r.output.begin(), r.output.end(), '\n') == 1);
}

TEST_CASE("the lesson and compare views render, and the Export tab's PNG is written from the window", "[gui]") {
  const Trace tr = [] {
    ProblemSpec spec;  // the tiny preset's sizes (the view draws whatever the comparison finds)
    spec.nq = spec.nk = 8;
    spec.d = 4;
    spec.M = 64;
    const Problem p = make_problem(spec);
    RunOptions opt;
    opt.record = false;
    return run_problem(p, make_tiling(p.nq, p.nk, p.d, p.M), opt);
  }();
  const std::string o = out_path("O.npy"), lse = out_path("lse.npy");
  write_npy(o, tr.O);
  write_npy(lse, tr.lse);
  const std::string lesson = out_path("lesson.png"), compare = out_path("compare.png"), base = out_path("export");
  fs::remove(base + ".png");
  REQUIRE(run_gui("--preset lesson --lesson-blocks 2 --screenshot " + lesson, "lesson").code == 0);
  const Result r = run_gui("--view compare --compare-o " + o + " --compare-lse " + lse + " --script 'export " + base +
                           "' --screenshot " + compare, "compare");
  INFO(r.output);
  REQUIRE(r.code == 0);
  const Image il = load_png(lesson), ic = load_png(compare), ie = load_png(base + ".png");
  REQUIRE(distinct_colours(il) > 200);
  REQUIRE(distinct_colours(ic) > 200);
  REQUIRE(ie.w == 1600);
  REQUIRE(ie.h == 1000);
  REQUIRE(pixels_differing(ie, ic) == 0);  // the same settled frame
}

TEST_CASE("without a display: one line pointing to the headless subcommands", "[gui]") {
  const Result plain = sh(std::string("env -u DISPLAY -u WAYLAND_DISPLAY ") + FLASHSTEP_BIN, "nodisplay");
  REQUIRE(plain.code == 0);
  REQUIRE(plain.output.find("no display") != std::string::npos);
  REQUIRE(plain.output.find("flashstep run") != std::string::npos);
  REQUIRE(plain.output.find("--screenshot") != std::string::npos);
  REQUIRE(std::count(plain.output.begin(), plain.output.end(), '\n') == 1);
  const Result g = sh(std::string("env -u DISPLAY -u WAYLAND_DISPLAY ") + FLASHSTEP_BIN + " gui --screenshot x.png", "nodisplay-gui");
  REQUIRE(g.code == 2);
  REQUIRE(g.output.find("no display") != std::string::npos);
}

TEST_CASE("benchmark at N = 1024, d = 64: frame time printed, idle frames allocate nothing", "[gui][bench]") {
  const Result r = run_gui("--preset gpt2-medium --bench-frames 30", "bench");
  INFO(r.output);
  REQUIRE(r.code == 0);
  REQUIRE(r.output.find("Nq = 1024, Nk = 1024, d = 64") != std::string::npos);
  REQUIRE(r.output.find("mean frame time") != std::string::npos);
  REQUIRE(r.output.find("30 frames; 0 allocations, 0 texture uploads") != std::string::npos);
}

TEST_CASE("idle frames of the fa2, standard, backward and L2 views with masks and dropout allocate nothing", "[gui]") {
  const std::string args = GENERATE(std::string("--preset dropout-bf16"), std::string("--preset fa1-vs-fa2"),
                                    std::string("--preset backward --step 18"), std::string("--preset fa1-vs-fa2 --backward"),
                                    std::string("--preset fa1-vs-fa2 --presentation --font-scale 2"),
                                    std::string("--preset causal --script 'set schedule standard; set dropout 0.2; apply'"),
                                    std::string("--view bench --bench-figure tflops"),
                                    std::string("--preset l2-fa1-vs-fa2 --step 100 --dram " FLASHSTEP_SOURCE_DIR
                                                "/gpu/results/dram/ncu.json"));

  const Result r = run_gui(args + " --bench-frames 10", "bench-views");
  INFO(r.output);
  REQUIRE(r.code == 0);
  REQUIRE(r.output.find("10 frames; 0 allocations, 0 texture uploads") != std::string::npos);
}

TEST_CASE("the bench view: not blank, changes with the figure and the file, and shows the file's values", "[gui][plot]") {
  const std::string src = FLASHSTEP_SOURCE_DIR;
  const std::string single = src + "/gpu/results/forward-fp32/fa1-standard_bench.json";
  struct Shot {
    std::string args, tag;
  };
  const Shot shots[] = {{"", "bench-bc"}, {"--bench-figure tflops", "bench-tflops"},
                        {"--bench-figure memory", "bench-memory"}, {"--bench-figure tflops --bench " + single, "bench-single"}};
  std::vector<Image> images;
  for (const Shot& s : shots) {
    const Result r = run_gui("--view bench " + s.args + " --screenshot " + out_path(s.tag + ".png") + " --dump-state " +
                             out_path(s.tag + ".json"), s.tag);
    INFO(r.output);
    REQUIRE(r.code == 0);
    images.push_back(load_png(out_path(s.tag + ".png")));
    REQUIRE(distinct_colours(images.back()) > 200);
  }
  // The figure area is about a third of the window: a changed figure changes a good part of it.
  const size_t area = size_t(images[0].w) * size_t(images[0].h);
  REQUIRE(pixels_differing(images[0], images[1]) > area / 50);
  REQUIRE(pixels_differing(images[1], images[2]) > area / 50);
  REQUIRE(pixels_differing(images[1], images[3]) > area / 50);

  // The state behind the pictures: the shipped file opened by default, its Bc sweep point for point.
  const nlohmann::json bc = load_json(out_path("bench-bc.json"))["bench"];
  REQUIRE(bc["loaded"] == true);
  REQUIRE(bc["figure"] == "bc");
  REQUIRE(bc["path"].get<std::string>().find("assets/bench/h200.json") != std::string::npos);
  const nlohmann::json file = load_json(src + "/assets/bench/h200.json");
  std::vector<double> bcs, gb;
  for (const auto& p : file["runs"][0]["sweep"])
    if (!p.contains("schedule")) {
      bcs.push_back(p["Bc"].get<double>());
      gb.push_back(p["hbm_bytes_predicted"].get<double>() / 1e9);
    }
  REQUIRE(bc["series"][0]["x"].get<std::vector<double>>() == bcs);
  REQUIRE(bc["series"][0]["y"].get<std::vector<double>>() == gb);
  const nlohmann::json one = load_json(out_path("bench-single.json"))["bench"];
  REQUIRE(one["series"].size() == 2);  // fa1 and standard, fp32
  std::vector<double> fa1;
  const nlohmann::json single_file = load_json(single);
  for (const auto& row : single_file["rows"])
    if (row["d"] == 64) fa1.push_back(row["fa1"]["tflops"].get<double>());
  REQUIRE(one["series"][0]["label"] == "fa1 fp32");
  REQUIRE(one["series"][0]["y"].get<std::vector<double>>() == fa1);
}

TEST_CASE("the bench view: a bad --bench file is one line and no window", "[gui][plot]") {
  fs::remove(out_path("bench-bad.png"));
  const Result r = run_gui("--view bench --bench " + std::string(FLASHSTEP_SOURCE_DIR) +
                           "/assets/presets/tiny.json --screenshot " + out_path("bench-bad.png"), "bench-bad");
  INFO(r.output);
  REQUIRE(r.code == 2);
  REQUIRE(r.output.find("flashstep: error: --bench: ") == 0);
  REQUIRE(r.output.find("is not a bench-gpu JSON file") != std::string::npos);
  REQUIRE(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  REQUIRE_FALSE(fs::exists(out_path("bench-bad.png")));
}

// ---------------------------------------------------------------------------------------------
// The classroom: presentation mode and animation export (their checks are in test_gui_present.cpp).

namespace {

double mean_luminance(const Image& im) {
  double sum = 0;
  for (size_t p = 0; p < im.rgb.size(); p += 3)
    sum += 0.2126 * im.rgb[p] + 0.7152 * im.rgb[p + 1] + 0.0722 * im.rgb[p + 2];
  return sum / 255.0 / double(im.rgb.size() / 3);
}

bool have_program(const std::string& check, const std::string& tag) { return sh(check, tag).code == 0; }

}  // namespace

TEST_CASE("presentation mode: the screenshot is light and its text larger than the default", "[gui][present]") {
  const std::string dark = out_path("present-dark.png"), pres = out_path("present-on.png");
  const std::string jd = out_path("present-dark.json"), jp = out_path("present-on.json");
  REQUIRE(run_gui("--step 19 --screenshot " + dark + " --dump-state " + jd, "present-dark").code == 0);
  REQUIRE(run_gui("--step 19 --presentation --screenshot " + pres + " --dump-state " + jp, "present-on").code == 0);
  const Image id = load_png(dark), ip = load_png(pres);
  REQUIRE(distinct_colours(ip) > 200);
  const double ld = mean_luminance(id), lp = mean_luminance(ip);
  INFO("mean luminance: default " << ld << ", presentation " << lp);
  REQUIRE(lp > 0.7);
  REQUIRE(lp > ld + 0.4);
  // The text as the window measured it with the fonts it built (--dump-state): the sans font
  // rebuilt at 1.5 x 15 px, and a sample string drawn that much larger.
  const nlohmann::json d = load_json(jd)["display"], p = load_json(jp)["display"];
  REQUIRE(p["theme"] == "light");
  REQUIRE(p["hidden"] == "problem");
  REQUIRE(d["font_px"].get<double>() == 15.0);
  REQUIRE(p["font_px"].get<double>() == 23.0);
  const double dh = d["sample_text"]["h"].get<double>(), ph = p["sample_text"]["h"].get<double>();
  const double dw = d["sample_text"]["w"].get<double>(), pw = p["sample_text"]["w"].get<double>();
  INFO("'Step >' measures " << dw << " x " << dh << " by default, " << pw << " x " << ph << " in presentation");
  REQUIRE(ph >= 1.4 * dh);
  REQUIRE(pw >= 1.4 * dw);
}

TEST_CASE("frames: one PNG per step from K to L, each different, and a bad range writes nothing", "[gui][present]") {
  const std::string dir = out_path("frames"), bad = out_path("frames-bad");
  fs::remove_all(dir);
  fs::remove_all(bad);
  const Result r = run_gui("--preset tiny --size 800x500 --frames " + dir + " --from 3 --to 7", "frames");
  INFO(r.output);
  REQUIRE(r.code == 0);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  REQUIRE(names == std::vector<std::string>{"step-00003.png", "step-00004.png", "step-00005.png", "step-00006.png",
                                            "step-00007.png"});
  std::vector<Image> frames;
  for (const std::string& n : names) {
    frames.push_back(load_png(dir + "/" + n));
    REQUIRE(frames.back().w == 800);
    REQUIRE(frames.back().h == 500);
  }
  for (size_t a = 0; a < frames.size(); ++a)
    for (size_t b = a + 1; b < frames.size(); ++b) {
      INFO("frames " << names[a] << " and " << names[b]);
      REQUIRE(pixels_differing(frames[a], frames[b]) > 300);  // the scrubber, the line, the tiles
    }
  // Frame k is step k: pixel for pixel the screenshot `--step k` takes (first, middle, last),
  // with the app playing as the frames show it (Pause on the button, the pseudocode centred on
  // the current line).
  for (int k : {3, 5, 7}) {
    const std::string shot = out_path("frames-step" + std::to_string(k) + ".png");
    REQUIRE(run_gui("--preset tiny --size 800x500 --step " + std::to_string(k) + " --script play --screenshot " + shot,
                    "frames-step" + std::to_string(k)).code == 0);
    INFO("frame of step " << k);
    REQUIRE(pixels_differing(frames[size_t(k - 3)], load_png(shot)) == 0);
  }
  const Result e = run_gui("--preset tiny --frames " + bad + " --from 7 --to 3", "frames-bad");
  REQUIRE(e.code == 2);
  REQUIRE(e.output.find("flashstep: error: --from K --to L needs 0 <= K <= L <= 27") != std::string::npos);
  REQUIRE(std::count(e.output.begin(), e.output.end(), '\n') == 1);
  REQUIRE_FALSE(fs::exists(bad));
  for (const auto& f : fs::directory_iterator(FLASHSTEP_GUI_TEST_OUT))  // no staging folder left
    REQUIRE(f.path().filename().string().find(".partial-") == std::string::npos);
}

TEST_CASE("GIF and video: made by ImageMagick or ffmpeg when installed, else one clear line", "[gui][present]") {
  const std::string gif = out_path("steps.gif"), mp4 = out_path("steps.mp4");
  fs::remove(gif);
  fs::remove(mp4);
  const bool ffmpeg = have_program("command -v ffmpeg", "which-ffmpeg");
  const bool imagemagick = have_program("convert -version | grep -q 'Version: ImageMagick'", "which-im");
  // CI installs ffmpeg and sets FLASHSTEP_REQUIRE_FFMPEG=1: there the success paths must run,
  // not the "needs ffmpeg" refusals.
  const char* require = std::getenv("FLASHSTEP_REQUIRE_FFMPEG");
  if (require && std::string(require) == "1") REQUIRE(ffmpeg);
  const std::string range = "--preset tiny --size 640x400 --from 0 --to 4 --fps 5 ";
  const Result g = run_gui(range + "--gif " + gif, "gif");
  INFO(g.output);
  if (ffmpeg || imagemagick) {
    REQUIRE(g.code == 0);
    std::ifstream in(gif, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    int* delays = nullptr;
    int w = 0, h = 0, frames = 0, comp = 0;
    unsigned char* px = stbi_load_gif_from_memory(reinterpret_cast<const unsigned char*>(bytes.data()),
                                                  int(bytes.size()), &delays, &w, &h, &frames, &comp, 3);
    REQUIRE(px != nullptr);
    stbi_image_free(px);
    stbi_image_free(delays);
    REQUIRE(frames == 5);
    REQUIRE(w == 640);
    REQUIRE(h == 400);
  } else {
    REQUIRE(g.code == 2);
    REQUIRE(g.output.find("flashstep: error: --gif needs ImageMagick (convert) or ffmpeg") != std::string::npos);
    REQUIRE_FALSE(fs::exists(gif));
  }
  const Result v = run_gui(range + "--video " + mp4, "video");
  INFO(v.output);
  if (ffmpeg) {
    REQUIRE(v.code == 0);
    std::ifstream in(mp4, std::ios::binary);
    char head[8] = {};
    in.read(head, 8);
    REQUIRE(std::string(head + 4, 4) == "ftyp");  // an MP4 container
  } else {
    REQUIRE(v.code == 2);
    REQUIRE(v.output.find("flashstep: error: --video needs ffmpeg") != std::string::npos);
    REQUIRE_FALSE(fs::exists(mp4));
  }
}

TEST_CASE("the compare view with a snapshot folder: not blank, and its tiles change with the step", "[gui][snapshots]") {
  // The tiny preset's problem (Tr = Tc = 2, Br = 4) from `flashstep run --snapshots`, with O at
  // j = 1, row 5 (Q block 1) pushed far over tolerance in its file.
  const std::string dir = out_path("snap-tiny");
  const Result w = sh(std::string(FLASHSTEP_BIN) + " run --nq 8 --nk 8 --d 4 --M 64 --seed 1 --snapshots " + dir, "snap-run");
  INFO(w.output);
  REQUIRE(w.code == 0);
  NpyArray o = read_npy(dir + "/forward_j0001_O.npy");
  o.data[5 * 4 + 2] += 0.5f;
  write_npy(dir + "/forward_j0001_O.npy", o.data.data(), o.shape);
  // (i, j) = (0, 0) after 6 steps (inside the first tile), then the perturbed (1, 1).
  const std::string a = out_path("compare-00.png"), b = out_path("compare-11.png");
  const std::string da = out_path("compare-00.json"), db = out_path("compare-11.json");
  const std::string common = "--preset tiny --view compare --snapshots " + dir;
  const Result ra = run_gui(common + " --step 6 --dump-state " + da + " --screenshot " + a, "compare-00");
  INFO(ra.output);
  REQUIRE(ra.code == 0);
  const Result rb = run_gui(common + " --script 'jump 1 1' --dump-state " + db + " --screenshot " + b, "compare-11");
  INFO(rb.output);
  REQUIRE(rb.code == 0);
  const nlohmann::json ja = load_json(da), jb = load_json(db);
  REQUIRE(ja["view"] == "compare");
  REQUIRE(ja["snapshots"]["loaded"] == true);
  REQUIRE(ja["snapshots"]["first_over_j"] == 1);
  REQUIRE(ja["snapshots"]["first_over_i"] == 1);
  REQUIRE(ja["snapshots"]["tile"]["i"] == 0);
  REQUIRE(ja["snapshots"]["tile"]["j"] == 0);
  REQUIRE(jb["snapshots"]["tile"]["i"] == 1);
  REQUIRE(jb["snapshots"]["tile"]["j"] == 1);
  const Image ia = load_png(a), ib = load_png(b);
  REQUIRE(distinct_colours(ia) > 200);
  REQUIRE(distinct_colours(ib) > 200);
  // Over-tolerance red (snapshot_view.cpp's kOverCol): the tolerance line, the first-over bar and,
  // at (1, 1) only, the perturbed element's cell of the difference tile.
  auto red = [](const Image& im) {
    size_t n = 0;
    for (size_t p = 0; p < im.rgb.size(); p += 3) n += im.rgb[p] == 235 && im.rgb[p + 1] == 60 && im.rgb[p + 2] == 60;
    return n;
  };
  INFO("red pixels at (0, 0): " << red(ia) << ", at (1, 1): " << red(ib));
  REQUIRE(red(ia) > 100);
  REQUIRE(red(ib) > red(ia) + 100);  // one cell of at least 10 x 10 pixels
  REQUIRE(pixels_differing(ia, ib) > 5000);
}

TEST_CASE("the course: every chapter's first page renders, in the default display and in presentation mode", "[gui][course]") {
  const std::string settings = out_path("course-shots-settings.json");
  fs::remove(settings);
  const char* ids[] = {"memory-bound", "safe-softmax", "online-softmax", "tiling", "algorithm-1", "io-complexity",
                       "fa2-order", "masks-dropout-fusion", "backward", "gpu", "decode", "paged-kv", "hopper", "fp8"};
  for (const char* id : ids)
    for (const std::string& mode : {std::string(""), std::string(" --presentation")}) {
      const std::string tag = std::string("course-") + id + (mode.empty() ? "" : "-pres");
      const std::string png = out_path(tag + ".png"), js = out_path(tag + ".json");
      const Result r = run_gui(std::string("--settings ") + settings + " --course " + id + mode + " --screenshot " + png +
                                   " --dump-state " + js,
                               tag);
      INFO(id << mode << ": " << r.output);
      REQUIRE(r.code == 0);
      const Image im = load_png(png);
      CHECK(distinct_colours(im) > 60);
      const nlohmann::json j = load_json(js);
      CHECK(j["course"]["active"] == true);
      CHECK(j["course"]["chapter"] == id);
      CHECK(j["course"]["page"] == 1);
      // The centre keeps at least 40% of the window whatever the text size.
      CHECK(j["course"]["centre_w"].get<double>() >= 0.4 * 1600 - 1);
    }
  // 1280x720 in presentation mode, on the lesson's page: the centre still gets its share.
  const nlohmann::json small =
      dumped_state("--settings " + settings + " --course online-softmax --presentation --size 1280x720", "course-720");
  CHECK(small["course"]["centre_w"].get<double>() >= 0.4 * 1280 - 1);
  // A page and an unknown chapter.
  CHECK(run_gui("--settings " + settings + " --course algorithm-1 --page 2 --screenshot " + out_path("course-p2.png"),
                "course-p2").code == 0);
  const Result bad = run_gui("--settings " + settings + " --course nope --screenshot " + out_path("nope.png"), "course-bad");
  CHECK(bad.code == 2);
  CHECK(bad.output.rfind("flashstep: error: unknown chapter 'nope'", 0) == 0);
}

TEST_CASE("the tiles keep a readable size under long notes in a small window", "[gui][course]") {
  // The fp8 chapter's outlier page at 1280x720 in presentation mode: the schedule's note, fp8's
  // line and a legend in three rows leave the tiles little height. They keep half their width in
  // height (S is 128 rows here) rather than shrink to 0.05 px a cell under their labels.
  const std::string settings = out_path("tiles-small-settings.json");
  fs::remove(settings);
  const nlohmann::json j =
      dumped_state("--settings " + settings + " --course fp8 --page 3 --presentation --size 1280x720", "tiles-small");
  REQUIRE(j["view"] == "tiles");
  const double cell = j["tiles"]["cell_px"].get<double>(), d_cell = j["tiles"]["d_cell_px"].get<double>();
  CHECK(cell * 128 >= 80);   // S_ij's 128 rows at least 80 px tall
  CHECK(d_cell * 64 >= 40);  // Q's 64 columns at least 40 px wide
  // At 1600x1000 the same page needs no minimum: the tiles are larger still.
  CHECK(dumped_state("--settings " + settings + " --course fp8 --page 3", "tiles-big")["tiles"]["cell_px"].get<double>() >
        cell);
}

TEST_CASE("the memory panel's lines fit its width in a small window", "[gui]") {
  // The L2 preset's DRAM and hit-rate lines and fp8's scales and SRAM line are the panel's longest:
  // at 1280x720 they wrap inside the panel instead of running past its right edge (where the old
  // single lines reached 79 px past it). The dump reports how far the widest item reached.
  const std::string settings = out_path("memory-fit-settings.json");
  fs::remove(settings);
  for (const std::string args : {"--preset l2-fa1-vs-fa2 --step 30", "--preset fp8 --step 20",
                                 "--preset backward --step 40 --presentation"}) {
    CAPTURE(args);
    const nlohmann::json j = dumped_state("--settings " + settings + " " + args + " --size 1280x720", "memory-fit");
    CHECK(j["memory_panel"]["overflow_px"].get<double>() <= 0.5);
  }
}

TEST_CASE("a course page that names a part of the memory panel opens with that part in view", "[gui][course]") {
  // At 1280x720 in presentation mode the memory panel shows its HBM table and little else: the
  // SRAM bar (tiling page 2), the whole-run table (io-complexity 1, masks-dropout-fusion 1) and
  // its O error row (algorithm-1 3) that the pages' texts name were below the panel's fold. The
  // panel scrolls to them as the page opens; the dump gives how many pixels of their first (or
  // last) four lines are out of view, and whether the panel had to scroll.
  const std::string settings = out_path("anchor-settings.json");
  fs::remove(settings);
  int scrolled = 0;
  for (const std::string page : {"tiling --page 2", "algorithm-1 --page 3", "io-complexity --page 1",
                                 "masks-dropout-fusion --page 1"}) {
    for (const std::string size : {"1280x720", "1600x1000"}) {
      CAPTURE(page, size);
      const nlohmann::json j = dumped_state("--settings " + settings + " --course " + page + " --presentation --size " + size, "anchor");
      CHECK(j["course"]["anchor_outside_px"].get<double>() == 0.0);
      scrolled += j["course"]["anchor_scrolled"].get<bool>();
    }
  }
  CHECK(scrolled >= 3);  // at 1280x720 all but the tiling page's bar need it
  // A page that names no part of a panel says so.
  CHECK(dumped_state("--settings " + settings + " --course tiling --page 1 --size 1280x720", "anchor")["course"]["anchor_outside_px"] == -1.0);
}

TEST_CASE("what is drawn side by side stays apart, and a short algorithm panel keeps its listing", "[gui]") {
  // ImGui centres a slider's text, so with the cursor near the middle of a run the grab covered
  // "step 13 of 27": the label now goes beside the grab. Decode's lse^(s) column was drawn where
  // its label went, pulled left over O^(s) and V^T in a narrow centre panel: it stays under L.
  // In the course's right column at 1280x720 in presentation mode the step's sentence left the
  // pseudocode one clipped line; the panel now keeps its header and at least four lines of it.
  // The dump gives each gap (below 0: they overlap) and the listing's lines.
  const std::string settings = out_path("side-by-side-settings.json");
  fs::remove(settings);
  struct Case {
    std::string args, value;
    double above;
  };
  const std::string scrub = "/controls/scrub_label_gap_px", lse = "/tiles/decode_lse_gap_px",
                    listing = "/algorithm_panel/listing_lines";
  for (const Case& c : {Case{"--preset tiny --step 0", scrub, 0}, Case{"--preset tiny --step 13", scrub, 0},
                        Case{"--preset tiny --step 14", scrub, 0}, Case{"--preset tiny --step 27", scrub, 0},
                        Case{"--preset gpt2-medium --step 776", scrub, 0}, Case{"--course decode --page 1", lse, 0},
                        Case{"--course fp8 --page 2", lse, 0}, Case{"--preset decode-paged --step 40", lse, 0},
                        Case{"--course backward --page 2", listing, 4}, Case{"--course algorithm-1 --page 1", listing, 4},
                        Case{"--course fa2-order --page 1", listing, 4}}) {
    CAPTURE(c.args);
    const nlohmann::json j = dumped_state("--settings " + settings + " " + c.args + " --presentation --size 1280x720", "side-by-side");
    CHECK(j.at(nlohmann::json::json_pointer(c.value)).get<double>() > c.above);
  }
  // The softmax panel's table, too narrow for all its columns at Alg1 L10, keeps the ones known
  // there (m~_ij, l~_ij: safe-softmax asks row 1's l~) rather than a row of "-" that pushed them
  // out of view; once line 11 has merged them, all eight are known and shown.
  const nlohmann::json l10 = dumped_state("--settings " + settings + " --course safe-softmax --page 2 --presentation --size 1280x720", "side-by-side");
  CHECK(l10["softmax_panel"]["table_l_tilde"] == true);
  CHECK(l10["softmax_panel"]["table_columns"] == 2);
  const nlohmann::json l11 = dumped_state("--settings " + settings + " --preset tiny --step 6 --presentation --size 1280x720", "side-by-side");
  CHECK(l11["softmax_panel"]["table_columns"] == 8);
}

TEST_CASE("the HBM table, the problem editor and the backward's tiles stay inside their panels, on a projector's screen too", "[gui]") {
  // Presentation mode at 1280x720 leaves the HBM table about 350 px: "1024 x 64" and "256.00 KiB"
  // were cut to "1024 x 6" and "256.00 Ki", decode's "4096 x 128" and "lse^(s)" too. There the
  // byte counts are written short and, where that is not enough, the shape column goes; the dump
  // measures each cell's text against its cell.
  // The problem editor (hidden in presentation mode, shown by --hide) kept 8 font heights for
  // each field beside labels such as "Nq, Nk (queries, keys)", 114 px past its column at 1280x720:
  // fields now narrow, and a label goes above where even that is not enough. The backward's
  // second row of tiles ended in "dK~." at 1280x720 (its column width was fitted to names measured
  // at a wider width), and at 1024x768 its names alone were 99 px too wide: the chip's tiles take a
  // row of their own there. The dump gives how far each panel's content reaches past its width.
  const std::string settings = out_path("panel-fit-settings.json");
  fs::remove(settings);
  struct Case {
    std::string args, overflow;
  };
  const std::string problem = "/problem_panel/overflow_px", tiles = "/tiles/backward_overflow_px",
                    table = "/memory_panel/table_clip_px";
  for (const Case& c : {Case{"--preset gpt2-medium --step 40 --presentation --size 1280x720", table},
                        Case{"--preset gpt2-medium --step 776 --presentation --size 1280x720", table},
                        Case{"--preset decode --step 157 --presentation --size 1280x720", table},
                        Case{"--course paged-kv --page 1 --presentation --size 1280x720", table},
                        Case{"--course tiling --page 1 --presentation --size 1280x720", table},  // "on chip"
                        Case{"--preset backward --step 40 --presentation --size 1280x720", table},
                        Case{"--preset gpt2-medium --step 40 --size 1600x1000", table},
                        Case{"--preset decode --step 157 --size 1600x1000", table},
                        Case{"--preset tiny --hide memory --presentation --size 1280x720", problem},
                        Case{"--preset fp8 --hide algorithm,memory --presentation --size 1280x720", problem},
                        Case{"--preset gpt2-medium --hide none --font-scale 2.5 --size 1280x720", problem},
                        Case{"--preset tiny --size 1600x1000", problem},
                        Case{"--preset backward --step 68 --size 1280x720 --presentation", tiles},
                        Case{"--preset backward --step 68 --size 1024x768 --presentation", tiles},
                        Case{"--preset backward --step 68 --size 1600x1000 --font-scale 2", tiles},
                        Case{"--preset backward --step 68 --size 1600x1000", tiles}}) {
    CAPTURE(c.args);
    const nlohmann::json j = dumped_state("--settings " + settings + " " + c.args, "panel-fit");
    CHECK(j.at(nlohmann::json::json_pointer(c.overflow)).get<double>() <= 0.5);
  }
  // Where there is room, the HBM table is written in full.
  for (const std::string args : {"--preset gpt2-medium --step 40", "--preset decode --step 157"}) {
    const nlohmann::json m = dumped_state("--settings " + settings + " --size 1600x1000 " + args, "panel-fit")["memory_panel"];
    CHECK((!m["table_compact"].get<bool>() && m["table_shape"].get<bool>()));
  }
}

TEST_CASE("the Bench view draws its figure in a small window, and scrolls for it", "[gui]") {
  // At 1280x720 in presentation mode the controls left the figure about 250 px, which it drew as
  // "(too small: enlarge the window)": it now takes the height a plot of 8 lines of text needs.
  const std::string settings = out_path("bench-small-settings.json");
  fs::remove(settings);
  for (const std::string args : {"--preset tiny --view bench --presentation --size 1280x720",
                                 "--preset tiny --view bench --presentation --size 1280x720 --bench-figure tflops",
                                 "--preset tiny --view bench --size 1280x720"}) {
    CAPTURE(args);
    const nlohmann::json j = dumped_state("--settings " + settings + " " + args, "bench-small");
    REQUIRE(j["view"] == "bench");
    CHECK(j["bench"]["plot_h_px"].get<double>() >= 100);
  }
}

TEST_CASE("the Pipeline view's time axis labels do not overlap", "[gui][pipeline]") {
  // The hopper chapter's second page at 1280x720 puts the chart in the right column, where five-
  // digit labels 2000 clocks apart would run into each other: the tick spacing follows the labels'
  // width, and the dump reports the narrowest gap between two of them.
  const std::string settings = out_path("pipeline-axis-settings.json");
  fs::remove(settings);
  for (const std::string args : {"--course hopper --page 2 --size 1280x720", "--course hopper --page 1 --size 1280x720",
                                 "--preset backward --view pipeline --size 1280x720",
                                 "--course hopper --page 2 --size 1280x720 --presentation"}) {
    CAPTURE(args);
    const nlohmann::json j = dumped_state("--settings " + settings + " " + args, "pipeline-axis");
    REQUIRE(j["view"] == "pipeline");
    CHECK(j["pipeline"]["axis_label_gap_px"].get<double>() >= 4.0);
  }
}

TEST_CASE("gui --course without a value opens the first unfinished chapter, --page 0 is refused and writes nothing",
          "[gui][course]") {
  const std::string settings = out_path("course-novalue-settings.json");
  fs::remove(settings);
  const std::string png = out_path("course-novalue.png"), js = out_path("course-novalue.json");
  const Result r = run_gui("--settings " + settings + " --course --screenshot " + png + " --dump-state " + js, "course-novalue");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(load_json(js)["course"]["chapter"] == "memory-bound");
  const std::string bad_settings = out_path("course-page0-settings.json"), bad_png = out_path("course-page0.png");
  fs::remove(bad_settings);
  fs::remove(bad_png);
  const Result bad = run_gui("--settings " + bad_settings + " --course tiling --page 0 --screenshot " + bad_png, "course-page0");
  CHECK(bad.code == 2);
  CHECK(bad.output.find("--page 0: pages count from 1") != std::string::npos);
  CHECK_FALSE(fs::exists(bad_settings));
  CHECK_FALSE(fs::exists(bad_png));
}

TEST_CASE("presentation mode: every page's text and questions fit the course column at 1600x1000 and 1280x720",
          "[gui][course][present]") {
  // --check-layout walks every page (and every part of a page cut into parts) in the window.
  const std::string settings = out_path("course-layout-settings.json");
  for (const std::string size : {"1600x1000", "1280x720"}) {
    fs::remove(settings);
    const Result r = run_gui("--settings " + settings + " --course --presentation --size " + size + " --check-layout",
                             "course-layout-" + size);
    INFO(r.output);
    std::smatch m;
    REQUIRE(std::regex_search(r.output, m, std::regex("([0-9]+) of ([0-9]+) pages fit the course column at " + size)));
    CHECK(m[1] == m[2]);
    CHECK(std::stoi(m[2]) >= 30);  // every chapter's pages, not one chapter's
    CHECK(r.code == 0);
  }
  // Refused without --course.
  CHECK(run_gui("--check-layout", "course-layout-bad").code == 2);
}
