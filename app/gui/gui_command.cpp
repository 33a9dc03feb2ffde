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
#include "app/gui/frame.h"
#include "app/gui/options.h"
#include "app/gui/panels.h"
#include "app/gui/resources.h"
#include "app/gui/state_dump.h"
#include "core/output_files.h"

#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <stb_image_write.h>

#include <chrono>
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
    "flashstep: no display (DISPLAY is not set): use the headless subcommands (flashstep run, "
    "explain, lesson softmax; see flashstep --help) or render the app to a PNG with "
    "xvfb-run flashstep gui --screenshot out.png";

ImVec4 g_clear(0.06f, 0.06f, 0.06f, 1.0f);  // the panels' background (see setup_imgui)
bool g_offline = false;  // screenshot and benchmark: ignore the pointer (Xvfb puts it mid-screen)

// =============================================================================================
// [SECTION] Window, ImGui and fonts
// =============================================================================================

void glfw_error(int code, const char* text) { std::fprintf(stderr, "flashstep: GLFW error %d: %s\n", code, text); }

void setup_imgui(GLFWwindow* window, GpuState& gpu) {
  IMGUI_CHECKVERSION();
  ImGui::SetAllocatorFunctions(&counted_malloc, &counted_free, nullptr);
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // the layout is computed, nothing to remember
  ImGui::StyleColorsDark();
  ImGuiStyle& st = ImGui::GetStyle();
  st.WindowRounding = 0;
  st.FrameRounding = 3;
  st.WindowPadding = ImVec2(8, 6);
  st.ItemSpacing = ImVec2(7, 5);
  // The panels tile the whole window, so their background is the glClear colour: a fully
  // transparent WindowBg is skipped by ImGui, which saves a full-screen blended pass (the
  // largest cost of a frame under Mesa's software rasteriser).
  const ImVec4 bg = st.Colors[ImGuiCol_WindowBg];
  g_clear = ImVec4(bg.x, bg.y, bg.z, 1.0f);
  st.Colors[ImGuiCol_WindowBg].w = 0.0f;
  const std::string sans = system_font(false), mono = system_font(true);
  if (!sans.empty()) io.Fonts->AddFontFromFileTTF(sans.c_str(), 15.0f);
  else io.Fonts->AddFontDefault();
  if (!mono.empty()) gpu.mono = io.Fonts->AddFontFromFileTTF(mono.c_str(), 13.0f);
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 330 core");
}

// =============================================================================================
// [SECTION] Screenshot
// =============================================================================================

// Reads the back buffer just rendered and writes it as PNG (before the swap).
void write_screenshot(const std::string& path, int w, int h) {
  std::vector<unsigned char> px(size_t(w) * size_t(h) * 3);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, w, h, GL_RGB, GL_UNSIGNED_BYTE, px.data());
  stbi_flip_vertically_on_write(1);  // OpenGL's rows start at the bottom
  std::string png;  // encoded in memory, then written safely (core/output_files.h)
  auto append = [](void* to, void* data, int n) { static_cast<std::string*>(to)->append(static_cast<const char*>(data), size_t(n)); };
  if (!stbi_write_png_to_func(append, &png, w, h, 3, px.data(), w * 3))
    throw InputError("cannot encode the screenshot " + path);
  write_file_atomic(path, png);
}

}  // namespace

// =============================================================================================
// [SECTION] The frame loop
// =============================================================================================

void frame(GLFWwindow* window, AppState& s, GpuState& gpu, double dt, const std::string& capture,
           FrameSplit* split) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  glfwPollEvents();
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  if (g_offline) ImGui::GetIO().MousePos = ImVec2(-FLT_MAX, -FLT_MAX);  // no stray hover
  ImGui::NewFrame();
  HandleKeys(s);
  s.advance_playback(dt);
  UpdateHeatmaps(s, gpu);

  const ImVec2 display = ImGui::GetIO().DisplaySize;
  const ImGuiStyle& st = ImGui::GetStyle();
  const float controls_h = ImGui::GetFrameHeightWithSpacing() * 2 + st.WindowPadding.y * 2;
  const Layout layout = ComputeLayout(display, controls_h);
  DrawControlsPanel(s, layout);
  DrawAlgorithmPanel(s, gpu, layout);
  DrawProblemPanel(s, layout);
  DrawCenterPanel(s, gpu, layout);
  DrawMemoryPanel(s, layout);
  DrawSoftmaxPanel(s, layout);

  ImGui::Render();
  const auto t1 = clock::now();
  int fw = 0, fh = 0;
  glfwGetFramebufferSize(window, &fw, &fh);
  glViewport(0, 0, fw, fh);
  glClearColor(g_clear.x, g_clear.y, g_clear.z, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  if (!capture.empty()) write_screenshot(capture, fw, fh);  // throws: the mode's result
  // The Export tab's PNG (in the screenshot mode, from the settled last frame only).
  if (!s.screenshot_request.empty() && (!g_offline || !capture.empty())) {
    try {
      write_screenshot(s.screenshot_request, fw, fh);
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

int run_app(const GuiOptions& o) {
  int width = 1600, height = 1000;
  parse_size(o.size, &width, &height);
  if (!have_display()) {
    std::fprintf(stderr, "%s\n", kNoDisplay);
    return 2;
  }
  // The state first: a bad preset or script fails before a window opens.
  AppState s;
  prepare_state(s, o);

  glfwSetErrorCallback(glfw_error);
  if (!glfwInit()) {
    std::fprintf(stderr, "%s\n", kNoDisplay);
    return 2;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
  glfwWindowHint(GLFW_DEPTH_BITS, 0);  // 2-D only: no depth or stencil buffer to clear and store
  glfwWindowHint(GLFW_STENCIL_BITS, 0);
  glfwWindowHint(GLFW_RESIZABLE, o.screenshot.empty() && o.bench_frames == 0 ? GLFW_TRUE : GLFW_FALSE);
  GLFWwindow* window = glfwCreateWindow(width, height, "flashstep: FlashAttention tile by tile", nullptr, nullptr);
  if (!window) {
    glfwTerminate();
    throw InputError("could not open an OpenGL 3.3 window on this display");
  }
  glfwMakeContextCurrent(window);
  const bool offline = !o.screenshot.empty() || o.bench_frames > 0;
  glfwSwapInterval(offline ? 0 : 1);
  g_offline = offline;

  GpuState gpu;
  setup_imgui(window, gpu);
  std::string shader_error;
  int rc = 0;
  std::string failure;  // an error inside the loop: shut down in order first, then report it
  try {
    if (!gpu.shader.init(shader_dir(), &shader_error)) {
      rc = 4;  // the info log is printed already
    } else if (!o.screenshot.empty()) {
      // A few frames let ImGui settle its layout (window sizes, tab bars) before the capture.
      for (int f = 0; f < 4; ++f) frame(window, s, gpu, 0.0, f == 3 ? o.screenshot : std::string());
      if (!o.dump_state.empty()) write_state_dump(s, o.dump_state);
      int fw = 0, fh = 0;
      glfwGetFramebufferSize(window, &fw, &fh);
      std::printf("wrote %s (%dx%d) at step %zu of %zu\n", o.screenshot.c_str(), fw, fh, s.index(), s.steps());
    } else if (o.bench_frames > 0) {
      run_frame_bench(window, s, gpu, o.bench_frames);
    } else {
      FrameClock clock;
      while (!glfwWindowShouldClose(window)) {
        // Idle (not playing): sleep until an event, so a still window costs no CPU.
        if (!s.playing) glfwWaitEventsTimeout(0.5);
        frame(window, s, gpu, clock.tick(), "");
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

void add_gui_command(CLI::App& app, const SetAction& set_action) {
  static gui::GuiOptions o;
  auto* g = app.add_subcommand("gui", "the desktop teaching app (Dear ImGui + OpenGL window)");
  g->add_option("--preset", o.preset, "preset in assets/presets (tiny, gpt2-medium, lesson, causal, fa1-vs-fa2, dropout-bf16, backward) or a .json path");
  g->add_flag("--backward", o.backward, "add the backward pass to the preset's problem and open at its first step");
  g->add_option("--step", o.step, "apply this many steps before showing")->check(CLI::NonNegativeNumber);
  g->add_option("--screenshot", o.screenshot, "render to this PNG and exit (works under xvfb-run)");
  g->add_option("--size", o.size, "window size, default 1600x1000");
  g->add_option("--view", o.view, "open on tiles, lesson or compare");
  g->add_option("--back", o.back, "then step back this many steps")->check(CLI::NonNegativeNumber)->group("");
  g->add_option("--script", o.script, "UI actions: \"step 5; back 2; seek 9; end; home; jump I J; set d 8; set schedule fa2; apply\"")->group("");
  g->add_option("--dump-state", o.dump_state, "with --screenshot: write the app's step and HBM state as JSON")->group("");
  g->add_option("--bench-frames", o.bench_frames, "time this many frames (idle, then one step per frame), print the mean frame time and exit");
  g->add_option("--lesson-blocks", o.lesson_blocks, "blocks merged in the lesson tab")->group("");
  g->add_option("--snapshots", o.snapshots, "load this snapshot folder (run/gpu --snapshots) into the compare view");
  g->add_flag("--snapshot-problem", o.snapshot_problem, "with --snapshots: run the folder's problem (from its manifest) instead of the preset's");
  g->add_option("--compare-o", o.compare_o, "load this O .npy into the compare tab")->group("");
  g->add_option("--compare-lse", o.compare_lse, "load this lse .npy into the compare tab")->group("");
  g->callback([&set_action] { set_action([] { return gui::run_app(o); }); });
}

bool gui_available_for_default() { return true; }

int run_gui_default() {
  if (!gui::have_display()) {
    std::printf("%s\n", gui::kNoDisplay);
    return 0;
  }
  return gui::run_app(gui::GuiOptions{});
}

}  // namespace flashstep
