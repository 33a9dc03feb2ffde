// `flashstep gui`: the desktop teaching app, and `flashstep` with no arguments.
// Straight-line main loop in the style of imgui's example_glfw_opengl3: set up, then each frame
// poll -> NewFrame -> one DrawXxxPanel(state) per window -> Render -> swap; shut down in reverse.
// The state the options ask for is made first (app/gui/options.h), without a window; the frame
// benchmark is in frame_bench.cpp. Index:
//   [SECTION] Display
//   [SECTION] Window, ImGui and fonts
//   [SECTION] Screenshot
//   [SECTION] The frame loop (interactive, screenshot; frame_bench.cpp runs the benchmark)
//   [SECTION] Subcommand registration
#include "app/commands.h"
#include "app/gui/alloc_counter.h"
#include "app/gui/app_state.h"
#include "app/gui/decode_state.h"
#include "app/gui/frame.h"
#include "app/gui/image_scale.h"
#include "app/gui/options.h"
#include "app/gui/panels.h"
#include "app/gui/resources.h"
#include "app/gui/state_dump.h"
#include "core/checked.h"
#include "core/input_files.h"
#include "core/output_files.h"

#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <stb_image_write.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cfloat>
#include <cstdlib>
#include <string>
#include <vector>

namespace flashstep {

namespace gui {

namespace {

// =============================================================================================
// [SECTION] Display
// =============================================================================================

bool have_display() {
  const char* x = std::getenv("DISPLAY");
  const char* w = std::getenv("WAYLAND_DISPLAY");
  return (x && *x) || (w && *w);
}

const char* kNoDisplay =
    "no display (DISPLAY is not set): use the headless subcommands (flashstep run, "
    "explain, lesson softmax; see flashstep --help) or render the app to a PNG with "
    "xvfb-run flashstep gui --screenshot out.png";

constexpr int kMaxBenchFrames = 100000;  // --bench-frames: a few minutes at most

ImVec4 g_clear(0.06f, 0.06f, 0.06f, 1.0f);  // the panels' background (see ApplyDisplay)
bool g_offline = false;  // screenshot, frames and benchmark: ignore the pointer (Xvfb puts it mid-screen)
uint64_t g_display_seen = 0;  // the DisplayState::version whose style and fonts are built

// =============================================================================================
// [SECTION] Window, ImGui and fonts
// =============================================================================================

// Until the window is open, GLFW's errors are kept for the one error line (a display that
// cannot be reached, no OpenGL 3.3); after that they are printed as they come.
std::string g_glfw_error;
bool g_glfw_quiet = true;
void glfw_error(int code, const char* text) {
  if (g_glfw_quiet) g_glfw_error = "GLFW error " + std::to_string(code) + ": " + excerpt(text ? text : "", 300);
  else std::fprintf(stderr, "flashstep: GLFW error %d: %s\n", code, text);
}

void setup_imgui(GLFWwindow* window, AppState& s, GpuState& gpu) {
  IMGUI_CHECKVERSION();
  ImGui::SetAllocatorFunctions(&counted_malloc, &counted_free, nullptr);
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // the layout is computed; display settings: app/gui/settings.h
  g_clear = ApplyDisplay(s, gpu, false);  // the font texture is made by the first NewFrame
  g_display_seen = s.display.version;
  InstallKeyLatch(window);  // before the backend, which chains to it (panels.h)
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 330 core");
}

// =============================================================================================
// [SECTION] Screenshot
// =============================================================================================

// Reads the back buffer just rendered (before the swap), w x h, and encodes it as PNG of
// out_w x out_h pixels: smaller when the frame has more pixels than the layout (a HiDPI web page),
// each pixel the mean of those it covers (image_scale.h).
std::string screenshot_png(int w, int h, int out_w, int out_h) {
  // RGBA, then packed to RGB: RGBA is the one format OpenGL ES (the web build's WebGL2) must read.
  std::vector<unsigned char> px(size_t(w) * size_t(h) * 4);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, px.data());
  for (size_t k = 0, n = size_t(w) * size_t(h); k < n; ++k)
    for (size_t c = 0; c < 3; ++c) px[k * 3 + c] = px[k * 4 + c];
  px.resize(size_t(w) * size_t(h) * 3);
  if (out_w != w || out_h != h) px = shrink_pixels(px, w, h, 3, out_w, out_h);
  stbi_flip_vertically_on_write(1);  // OpenGL's rows start at the bottom
  std::string png;
  auto append = [](void* to, void* data, int n) { static_cast<std::string*>(to)->append(static_cast<const char*>(data), size_t(n)); };
  if (!stbi_write_png_to_func(append, &png, out_w, out_h, 3, px.data(), out_w * 3))
    throw InputError("cannot encode the screenshot as PNG");
  return png;
}
std::string screenshot_png(int w, int h) { return screenshot_png(w, h, w, h); }

// The backend's sizes and pointer are in the framebuffer's pixels: ImGui gets the window in
// layout pixels (`ratio` device pixels each, rounded to whole layout pixels), the scale from
// those to the framebuffer, and the pointer in layout pixels.
void to_layout_pixels(ImGuiIO& io, float ratio) {
  const ImVec2 fb = io.DisplaySize;  // the backend's window size: the framebuffer's
  io.DisplaySize = ImVec2(std::max(1.0f, std::round(fb.x / ratio)), std::max(1.0f, std::round(fb.y / ratio)));
  io.DisplayFramebufferScale = ImVec2(fb.x / io.DisplaySize.x, fb.y / io.DisplaySize.y);
  if (ImGui::IsMousePosValid(&io.MousePos))
    io.MousePos = ImVec2(io.MousePos.x / io.DisplayFramebufferScale.x, io.MousePos.y / io.DisplayFramebufferScale.y);
}

}  // namespace

// =============================================================================================
// [SECTION] The frame loop
// =============================================================================================

// The least frame time ImGui is given: 0.1 ms, far below any real frame.
constexpr float kMinDeltaTime = 1e-4f;

void frame(GLFWwindow* window, AppState& s, GpuState& gpu, double dt, std::string* capture, FrameSplit* split) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  glfwPollEvents();
  if (s.display.version != g_display_seen) {  // the Display menu changed: restyle, rebuild fonts
    g_clear = ApplyDisplay(s, gpu, true);
    g_display_seen = s.display.version;
  }
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  // The web page on a HiDPI screen: emscripten's GLFW makes the window the framebuffer, in device
  // pixels; ImGui works in CSS pixels over it (web/main_web.cpp). 1 on the desktop.
  if (s.display.pixel_ratio != 1.0f) to_layout_pixels(ImGui::GetIO(), s.display.pixel_ratio);
  // Two frames can share a timestamp (a browser's virtual time, or timers coarsened for
  // privacy to 1-100 ms), and ImGui asserts on a zero DeltaTime: never pass it one.
  ImGuiIO& frame_io = ImGui::GetIO();
  if (!(frame_io.DeltaTime >= kMinDeltaTime)) frame_io.DeltaTime = kMinDeltaTime;
  if (g_offline) ImGui::GetIO().MousePos = ImVec2(-FLT_MAX, -FLT_MAX);  // no stray hover
  ImGui::NewFrame();
  const ImVec2 sample = ImGui::CalcTextSize("Step >");  // for --dump-state: the text's size as drawn
  s.display.sample_w = sample.x;
  s.display.sample_h = sample.y;
  HandleKeys(s);
  s.advance_playback(dt);
  UpdateHeatmaps(s, gpu);

  const ImVec2 display = ImGui::GetIO().DisplaySize;
  const ImGuiStyle& st = ImGui::GetStyle();
  const DisplaySettings shown = CourseDisplay(s);  // the course shows only the page's panels
  const float controls_h =
      shown.shows(kPanelControls) ? ImGui::GetFrameHeightWithSpacing() * float(ControlsRows(display.x)) + st.WindowPadding.y * 2 : 0.0f;
  // Decode's combine: the softmax panel's table has one row per split, with its headings around it.
  const int64_t combine_splits = s.run && s.cursor ? combine_splits_at(s.run->trace, *s.cursor) : 0;
  const float softmax_min_h = combine_splits > 0 ? ImGui::GetTextLineHeightWithSpacing() * float(combine_splits + 14) : 0.0f;
  const Layout layout = s.course.active ? ComputeCourseLayout(display, controls_h, shown, s.course.want_w, s.algo_want_h)
                                        : ComputeLayout(display, controls_h, shown, softmax_min_h);
  if (s.course.active) DrawCoursePanel(s, layout);
  if (shown.shows(kPanelControls)) DrawControlsPanel(s, layout);
  if (shown.shows(kPanelAlgorithm)) DrawAlgorithmPanel(s, gpu, layout);
  if (shown.shows(kPanelProblem)) DrawProblemPanel(s, layout);
  DrawCenterPanel(s, gpu, layout);
  if (shown.shows(kPanelMemory)) DrawMemoryPanel(s, layout);
  if (shown.shows(kPanelSoftmax)) DrawSoftmaxPanel(s, layout);
  DrawCourseOutline(s, layout);
  DrawDisplayMenu(s);

  ImGui::Render();
  const auto t1 = clock::now();
  int fw = 0, fh = 0;
  glfwGetFramebufferSize(window, &fw, &fh);
  glViewport(0, 0, fw, fh);
  glClearColor(g_clear.x, g_clear.y, g_clear.z, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  if (capture) *capture = screenshot_png(fw, fh);  // throws: the mode's result
  // The Export tab's PNG (in the screenshot mode, from the settled last frame only).
  if (!s.screenshot_request.empty() && (!g_offline || capture)) {
    try {
      // At the layout's size (ImGui's DisplaySize: the CSS pixels of a HiDPI web page, what the
      // desktop writes for a window of that size), unless the framebuffer's pixels are asked for.
      const ImVec2 layout = ImGui::GetIO().DisplaySize;
      const int lw = std::clamp(int(std::lround(layout.x)), 1, fw), lh = std::clamp(int(std::lround(layout.y)), 1, fh);
      const bool full = s.export_device_pixels || s.display.pixel_ratio == 1.0f;
      s.write_output(s.screenshot_request, full ? screenshot_png(fw, fh) : screenshot_png(fw, fh, lw, lh), "export");
      s.export_message = "wrote " + s.screenshot_request;
    } catch (const InputError& e) {
      s.export_message = std::string("error: ") + e.what();
    }
    s.screenshot_request.clear();
  }
  if (split) glFinish();
  const auto t2 = clock::now();
  glfwSwapBuffers(window);
  if (split) {
    glFinish();
    const auto t3 = clock::now();
    split->build_ms += std::chrono::duration<double, std::milli>(t1 - t0).count();
    split->render_ms += std::chrono::duration<double, std::milli>(t2 - t1).count();
    split->swap_ms += std::chrono::duration<double, std::milli>(t3 - t2).count();
  }
}

namespace {

// --check-layout: every page of the chapter --course named (of every chapter when it named none),
// a few frames each so that ImGui settles the column, then the page's overflow. Prints the pages
// that scroll, or whose lines run past the column's right edge, and a summary; 1 when any does.
int check_course_layout(GLFWwindow* window, AppState& s, GpuState& gpu, int width, int height, bool all) {
  int pages = 0, scrolling = 0;
  const std::string first = s.course.chapter->id;
  for (const course::ChapterInfo& ci : course::chapter_list()) {
    if (!all && ci.id != first) continue;
    s.course.open(s, ci.id, 0);
    for (size_t p = 0; p < s.course.chapter->pages.size(); ++p) {
      s.course.go(s, int(p));
      for (int f = 0; f < 6; ++f) frame(window, s, gpu, 0.0, nullptr);  // the column settles (course_view.cpp)
      ++pages;
      bool scrolls = false;
      for (;;) {  // each part of a page cut into parts
        if (s.course.page_overflow > 0.5f) {
          scrolls = true;
          std::printf("%s page %zu of %zu, part %d of %d: scrolls by %.0f px\n", ci.id, p + 1,
                      s.course.chapter->pages.size(), s.course.part + 1, s.course.parts, double(s.course.page_overflow));
        }
        if (s.course.page_overflow_x_px > 0.5f) {  // a line the column's right edge cuts
          scrolls = true;
          std::printf("%s page %zu of %zu, part %d of %d: a line runs %.0f px past the column's edge\n", ci.id, p + 1,
                      s.course.chapter->pages.size(), s.course.part + 1, s.course.parts, double(s.course.page_overflow_x_px));
        }
        if (s.course.part + 1 >= s.course.parts) break;
        const int was = s.course.part;
        s.course.next(s);
        // ImGui knows a window's content height one frame late: the part is drawn, planned again
        // with its questions' height, and measured.
        for (int f = 0; f < 4; ++f) frame(window, s, gpu, 0.0, nullptr);
        if (s.course.part <= was) {  // the parts were planned again under it: a layout that does not settle
          scrolls = true;
          std::printf("%s page %zu of %zu: its parts do not settle\n", ci.id, p + 1, s.course.chapter->pages.size());
          break;
        }
      }
      if (s.course.parts > 1) std::printf("%s page %zu: in %d parts\n", ci.id, p + 1, s.course.parts);
      scrolling += scrolls;
    }
  }
  std::printf("%d of %d pages fit the course column at %dx%d without scrolling\n", pages - scrolling, pages, width,
              height);
  return scrolling == 0 ? 0 : 1;
}

// --part K: a page is cut into parts only once it has been drawn (its questions' heights are
// measured), so the parts are reached as Next reaches them, a few frames each.
void go_to_course_part(GLFWwindow* window, AppState& s, GpuState& gpu, int part) {
  for (int f = 0; f < 6; ++f) frame(window, s, gpu, 0.0, nullptr);
  while (s.course.part + 1 < part) {
    if (s.course.part + 1 >= s.course.parts)
      throw InputError("--part " + std::to_string(part) + ": this page has " + std::to_string(s.course.parts) +
                       (s.course.parts == 1 ? " part" : " parts") + " here");
    s.course.next(s);
    for (int f = 0; f < 4; ++f) frame(window, s, gpu, 0.0, nullptr);
  }
}

struct FrameClock {
  using clock = std::chrono::steady_clock;
  clock::time_point last = clock::now();
  double tick() {
    const auto now = clock::now();
    const double dt = std::chrono::duration<double>(now - last).count();
    last = now;
    return dt;
  }
};

// The saves that waited while the run was checked; a failure (a read-only file) is a note on
// stderr, not a failed run: the window or screenshot is made.
void release_settings(SettingsWriteHold& hold) {
  try {
    hold.release();
  } catch (const InputError& e) {
    std::fprintf(stderr, "flashstep: note: %s\n", e.what());
  }
}

int run_app(const GuiOptions& o) {
  int width = 1600, height = 1000;
  parse_size(o.size, &width, &height);
  if (o.bench_frames < 0 || o.bench_frames > kMaxBenchFrames)
    throw InputError("--bench-frames must be in 0.." + std::to_string(kMaxBenchFrames) + " (got " +
                     std::to_string(o.bench_frames) + ")");
  if (!have_display()) throw InputError(kNoDisplay);
  // Saves of the settings file (the display, the course's progress) wait until the run has
  // passed every check: a refused run leaves the file as it was (app/gui/settings.h).
  SettingsWriteHold settings_hold;
  // The state first: a bad preset, script, display flag or frame range fails before a window opens.
  AppState s;
  prepare_state(s, o);
  const bool animating = o.animation.wanted();
  if (animating && (!o.screenshot.empty() || o.bench_frames > 0))
    throw InputError("--frames, --gif and --video cannot be combined with --screenshot or --bench-frames");
  // The outputs: checked now against each other and the app's inputs, written together at the
  // end (the screenshot and the state dump), or by the export (the GIF and the video).
  if (!o.dump_state.empty() && o.screenshot.empty()) throw InputError("--dump-state needs --screenshot FILE");
  const auto inputs = s.input_files();
  OutputFiles outs;
  if (!o.screenshot.empty()) outs.add(o.screenshot, "--screenshot");
  if (!o.screenshot.empty() && !o.dump_state.empty()) outs.add(o.dump_state, "--dump-state");
  if (!o.animation.gif.empty()) outs.add(o.animation.gif, "--gif");
  if (!o.animation.video.empty()) outs.add(o.animation.video, "--video");
  for (const auto& [path, what] : inputs) outs.add_input(path, what);
  outs.check();
  AnimationPlan plan = plan_animation(o.animation, s.steps());
  plan.inputs = inputs;

  glfwSetErrorCallback(glfw_error);
  g_glfw_quiet = true;
  if (!glfwInit()) {
    const char* display = std::getenv("DISPLAY");
    throw InputError("cannot open the display" + (display && *display ? " " + excerpt(display) : std::string()) +
                     (g_glfw_error.empty() ? "" : " (" + g_glfw_error + ")") +
                     ": run under xvfb-run for --screenshot, --frames and --bench-frames");
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
  glfwWindowHint(GLFW_DEPTH_BITS, 0);  // 2-D only: no depth or stencil buffer to clear and store
  glfwWindowHint(GLFW_STENCIL_BITS, 0);
  if (o.check_layout && (!o.course || !o.screenshot.empty() || o.bench_frames > 0 || animating))
    throw InputError("--check-layout needs --course and cannot be combined with --screenshot, --bench-frames or --frames");
  const bool offline = !o.screenshot.empty() || o.bench_frames > 0 || animating || o.check_layout;
  glfwWindowHint(GLFW_RESIZABLE, offline ? GLFW_FALSE : GLFW_TRUE);
  GLFWwindow* window = glfwCreateWindow(width, height, "flashstep: FlashAttention tile by tile", nullptr, nullptr);
  if (!window) {
    glfwTerminate();
    throw InputError("could not open an OpenGL 3.3 window on this display" +
                     (g_glfw_error.empty() ? std::string() : " (" + g_glfw_error + ")"));
  }
  g_glfw_quiet = false;
  glfwMakeContextCurrent(window);
  glfwSwapInterval(offline ? 0 : 1);
  g_offline = offline;

  GpuState gpu;
  setup_imgui(window, s, gpu);
  std::string shader_error;
  int rc = 0;
  std::string failure;  // an error inside the loop: shut down in order first, then report it
  try {
    if (!gpu.shader.init(shader_dir(), &shader_error)) {
      rc = 4;  // the info log is printed already
    } else if (!o.screenshot.empty()) {
      if (o.course_part > 1) go_to_course_part(window, s, gpu, int(o.course_part));
      // A few frames let ImGui settle its layout (window sizes, tab bars) before the capture.
      std::string png;
      for (int f = 0; f < 4; ++f) frame(window, s, gpu, 0.0, f == 3 ? &png : nullptr);
      outs.bytes(o.screenshot) = std::move(png);
      if (!o.dump_state.empty()) outs.bytes(o.dump_state) = state_to_json(s).dump(1) + "\n";
      outs.commit();  // both or neither
      release_settings(settings_hold);
      int fw = 0, fh = 0;
      glfwGetFramebufferSize(window, &fw, &fh);
      std::printf("wrote %s (%dx%d) at step %zu of %zu\n", o.screenshot.c_str(), fw, fh, s.index(), s.steps());
    } else if (o.check_layout) {
      rc = check_course_layout(window, s, gpu, width, height, o.course_chapter.empty());
      release_settings(settings_hold);
    } else if (o.bench_frames > 0 || animating) {
      if (o.bench_frames > 0) run_frame_bench(window, s, gpu, o.bench_frames);
      else run_animation(window, s, gpu, plan);
      release_settings(settings_hold);  // after the run's own outputs, as the screenshot's
    } else {
      release_settings(settings_hold);  // the window is open: the run is no longer refused
      FrameClock clock;
      while (!glfwWindowShouldClose(window)) {
        // Idle (not playing): sleep until an event, so a still window costs no CPU.
        if (!s.playing) glfwWaitEventsTimeout(0.5);
        frame(window, s, gpu, clock.tick(), nullptr);
      }
    }
  } catch (const InputError& e) {
    failure = e.what();
  }

  for (Heatmap* h : {&gpu.Q, &gpu.K, &gpu.V, &gpu.S, &gpu.P, &gpu.O, &gpu.l, &gpu.m, &gpu.L, &gpu.err,
                     &gpu.legend_div, &gpu.legend_seq, &gpu.legend_log})
    h->destroy();
  gpu.shader.destroy();
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  if (!failure.empty()) throw InputError(failure);
  if (rc == 4) throw InputError("the heatmap shaders in " + shader_dir() + " did not compile (log above)");
  return rc;
}

}  // namespace
}  // namespace gui

// =============================================================================================
// [SECTION] Subcommand registration
// =============================================================================================

// A count of steps: a whole number >= 0, refused as typed ("--step -1"), not as a double range.
static CLI::Validator step_count(const char* flag) {
  return CLI::Validator(
      [flag](std::string& text) {
        try {
          if (checked::parse_int(text, flag) < 0) return std::string(flag) + " must be >= 0 (got " + text + ")";
        } catch (const InputError& e) {
          return std::string(e.what());
        }
        return std::string();
      },
      "", "step count");
}

void add_gui_command(CLI::App& app, const SetAction& set_action) {
  static gui::GuiOptions o;
  auto* g = app.add_subcommand("gui", "the desktop teaching app (Dear ImGui + OpenGL window)");
  // The presets named as the app finds them (assets/presets, installed or in the source tree).
  static const std::string preset_help = [] {
    std::string names;
    for (const std::string& n : gui::preset_names(gui::asset_dir())) names += (names.empty() ? "" : ", ") + n;
    return "preset in assets/presets (" + (names.empty() ? std::string("none found") : names) + ") or a .json path";
  }();
  g->add_option("--preset", o.preset, preset_help);
  g->add_option("--trace", o.trace, "open a saved trace (the Python module's save_trace, any puzzle's trace.save: a softmax row's too) and step through it");
  g->add_flag("--backward", o.backward, "add the backward pass to the preset's problem and open at its first step");
  g->add_option("--step", o.step, "apply this many steps before showing")->check(step_count("--step"));
  g->add_option("--screenshot", o.screenshot, "render to this PNG and exit (works under xvfb-run)");
  g->add_option("--size", o.size, "window size, default 1600x1000");
  g->add_option("--view", o.view, "open on tiles, lesson, compare, bench or pipeline");
  g->add_option("--bench", o.bench, "bench-gpu --json file for the Bench view (default assets/bench/h200.json)");
  g->add_option("--bench-figure", o.bench_figure, "the Bench view's figure: bc (default), tflops or memory");
  g->add_option("--back", o.back, "then step back this many steps")->check(step_count("--back"))->group("");
  g->add_option("--script", o.script, "UI actions: \"step 5; back 2; seek 9; end; home; jump I J; set d 8; set schedule fa2; apply\"")->group("");
  g->add_option("--dump-state", o.dump_state, "with --screenshot: write the app's step and HBM state as JSON")->group("");
  g->add_option("--bench-frames", o.bench_frames, "time this many frames (idle, then one step per frame), print the mean frame time and exit");
  g->add_option("--lesson-blocks", o.lesson_blocks, "blocks merged in the lesson tab")->group("");
  g->add_option("--snapshots", o.snapshots, "load this snapshot folder (run/gpu --snapshots) into the compare view");
  g->add_flag("--snapshot-problem", o.snapshot_problem, "with --snapshots: run the folder's problem (from its manifest) instead of the preset's");
  g->add_option("--compare-o", o.compare_o, "load this O .npy into the compare tab")->group("");
  g->add_option("--compare-lse", o.compare_lse, "load this lse .npy into the compare tab")->group("");
  // The classroom: display settings (app/gui/settings.h) and animation export (app/gui/animation.h).
  g->add_flag("--presentation", o.presentation, "for a projector: light theme, text 1.5x, the problem editor hidden");
  g->add_option("--theme", o.theme, "dark or light (this run; the Display menu remembers a choice)");
  g->add_option("--font-scale", o.font_scale, "text size for the whole UI, 0.75 to 2.5 (fonts rebuilt at that size)");
  g->add_option("--hide", o.hide, "panels to hide: controls, algorithm, problem, memory, softmax, legend (comma-separated), or none");
  g->add_option("--settings", o.settings, "the display settings file (default $FLASHSTEP_SETTINGS, else ~/.config/flashstep/settings.json)");
  g->add_option("--frames", o.animation.frames_dir, "write one PNG per step --from K to --to L into this new folder and exit");
  g->add_option("--from", o.animation.from, "first step of --frames/--gif/--video (default 0)");
  g->add_option("--to", o.animation.to, "last step of --frames/--gif/--video (default the last)");
  g->add_option("--gif", o.animation.gif, "make an animated GIF of the steps (ImageMagick or ffmpeg, found on PATH)");
  g->add_option("--video", o.animation.video, "make a video (.mp4, .webm, .mkv, .mov) of the steps with ffmpeg");
  g->add_option("--fps", o.animation.fps, "steps per second in --gif/--video (default 4)");
  // The guided course (app/gui/course_state.h): the chapter's text and questions beside the views.
  static CLI::Option* course_opt = g->add_option("--course", o.course_chapter, "open the guided course, at this chapter "
                                                 "(flashstep learn --list; default: the first not finished)")
                                         ->expected(0, 1)
                                         ->type_name("CHAPTER");  // not TEXT: no value is the documented default
  static CLI::Option* page_opt = g->add_option("--page", o.course_page, "with --course: open at this page (1 = the first)");
  g->add_option("--seed", o.course_seed, "with --course: the course problems' seed (default 1)");
  g->add_option("--part", o.course_part, "with --course and --screenshot: the page's part K, where the page is cut into parts")
      ->group("");
  g->add_flag("--check-layout", o.check_layout, "with --course: walk every page of the chapter (of all, without one) at this --size and "
              "display, list the pages whose text and questions need scrolling or run past the column's edge, exit 1 if any (run under xvfb-run)");
  g->add_option("--dram", o.dram, "measured DRAM bytes (the JSON tools/device/ncu_dram.sh writes) for the memory panel, beside the L2 model");
  g->callback([&set_action] {
    o.course = course_opt->count() > 0;
    o.course_page_given = page_opt->count() > 0;
    set_action([] { return gui::run_app(o); });
  });
}

bool gui_available_for_default() { return true; }

int run_gui_default() {
  if (!gui::have_display()) {
    std::printf("flashstep: %s\n", gui::kNoDisplay);
    return 0;
  }
  return gui::run_app(gui::GuiOptions{});
}

}  // namespace flashstep
