// `flashstep gui`: the desktop teaching app, and `flashstep` with no arguments.
// Straight-line main loop in the style of imgui's example_glfw_opengl3: set up, then each frame
// poll -> NewFrame -> one DrawXxxPanel(state) per window -> Render -> swap; shut down in reverse.
// Index:
//   [SECTION] Options
//   [SECTION] Window, ImGui and fonts
//   [SECTION] Screenshot and state dump
//   [SECTION] The frame loop (interactive, screenshot, benchmark)
//   [SECTION] Subcommand registration
#include "app/commands.h"
#include "app/gui/alloc_counter.h"
#include "app/gui/app_state.h"
#include "app/gui/panels.h"
#include "app/gui/resources.h"
#include "core/export.h"

#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <stb_image_write.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cfloat>
#include <cstdlib>
#include <string>
#include <nlohmann/json.hpp>
#include <vector>

namespace flashstep {

namespace gui {

// =============================================================================================
// [SECTION] Options
// =============================================================================================

struct GuiOptions {
  std::string preset = "tiny";
  int64_t step = 0, back = 0;
  std::string script, screenshot, size = "1600x1000", dump_state, view;
  std::string compare_o, compare_lse;
  int64_t lesson_blocks = -1;
  int bench_frames = 0;
};

namespace {

void parse_size(const std::string& text, int* w, int* h) {
  int a = 0, b = 0;
  char x = 0, extra = 0;
  if (std::sscanf(text.c_str(), "%d%c%d%c", &a, &x, &b, &extra) != 3 || (x != 'x' && x != 'X'))
    throw InputError("--size must look like 1600x1000 (got '" + text + "')");
  if (a < 320 || b < 240 || a > 8192 || b > 8192)
    throw InputError("--size must be between 320x240 and 8192x8192 (got '" + text + "')");
  *w = a;
  *h = b;
}

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
// [SECTION] Screenshot and state dump
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

nlohmann::json number_or_text(float x) {
  if (std::isfinite(x)) return double(x);
  return std::isnan(x) ? "nan" : (x < 0 ? "-inf" : "inf");
}

// The app's position and HBM state as JSON, for tests that compare it with core's Cursor.
void write_state_dump(const AppState& s, const std::string& path) {
  nlohmann::json j;
  const Step* cur = s.cursor->current();
  j["index"] = s.index();
  j["steps"] = s.steps();
  j["line"] = cur ? line_label(cur->line) : "";
  j["i"] = cur ? cur->i : -1;
  j["j"] = cur ? cur->j : -1;
  j["hbm_read_total"] = cur ? cur->hbm_read_total : 0;
  j["hbm_write_total"] = cur ? cur->hbm_write_total : 0;
  const Problem& p = s.run->trace.problem;
  j["problem"] = {{"nq", p.nq}, {"nk", p.nk}, {"d", p.d}, {"M", p.M}, {"seed", p.seed},
                  {"pattern", p.pattern}, {"scale", p.scale}, {"schedule", schedule_name(p.schedule)},
                  {"dtype", dtype_name(p.dtype)}, {"dropout", p.dropout}, {"mask", p.mask.describe()}};
  for (Tensor t : {Tensor::O, Tensor::l, Tensor::m, Tensor::L, Tensor::S, Tensor::P}) {
    if (!s.cursor->written(t)) {
      j["hbm"][tensor_name(t)] = nullptr;
      continue;
    }
    const Mat& m = s.cursor->hbm(t);
    nlohmann::json rows = nlohmann::json::array();
    for (int64_t r = 0; r < m.rows(); ++r) {
      nlohmann::json row = nlohmann::json::array();
      for (int64_t c = 0; c < m.cols(); ++c) row.push_back(number_or_text(m(r, c)));
      rows.push_back(std::move(row));
    }
    j["hbm"][tensor_name(t)] = std::move(rows);
  }
  // The memory panel's side-by-side table: each schedule's totals and closed form.
  for (const ScheduleRun& r : s.run->runs) {
    nlohmann::json e;
    e["ok"] = r.ok;
    e["hbm_read"] = r.totals.hbm_read_bytes;
    e["hbm_write"] = r.totals.hbm_write_bytes;
    const int bpe = p.bytes_per_elem;
    e["form_read"] = r.form.read_bytes(bpe);
    e["form_write"] = r.form.write_bytes(bpe);
    if (r.have_error) e["o_max_rel"] = r.o_err.max_rel;
    j["runs"][schedule_name(r.schedule)] = std::move(e);
  }
  j["skipped_tiles"] = s.run->skipped_tiles;
  j["partial_tiles"] = s.run->partial_tiles;
  j["form_error"] = s.form.error;
  j["form_error_field"] = int(s.form.error_field);
  j["apply_error"] = s.apply_error;
  j["lesson_shown"] = s.lesson.shown;
  j["compare"] = {{"loaded", s.compare.loaded}, {"passed", s.compare.passed()},
                  {"o_max_rel", s.compare.o_stats.max_rel}, {"lse_max_rel", s.compare.lse_stats.max_rel}};
  j["view"] = s.view == View::lesson ? "lesson" : s.view == View::compare ? "compare" : "tiles";
  write_file_atomic(path, j.dump(1) + "\n");
}

// =============================================================================================
// [SECTION] The frame loop
// =============================================================================================

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

// One frame: returns after the swap. `capture` names a PNG to write from this frame.

struct FrameSplit {
  double build_ms = 0, render_ms = 0, swap_ms = 0;  // ImGui + uploads, GL draw to glFinish, swap
};

void frame(GLFWwindow* window, AppState& s, GpuState& gpu, double dt, const std::string& capture,
           FrameSplit* split = nullptr) {
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

int run_app(const GuiOptions& o) {
  int width = 1600, height = 1000;
  parse_size(o.size, &width, &height);
  if (!have_display()) {
    std::fprintf(stderr, "%s\n", kNoDisplay);
    return 2;
  }
  // The state first: a bad preset or script fails before a window opens.
  AppState s;
  s.asset_dir = asset_dir();
  s.preset_names = preset_names(s.asset_dir);
  s.load_preset(o.preset);
  if (!o.view.empty()) {
    if (o.view != "tiles" && o.view != "lesson" && o.view != "compare")
      throw InputError("--view must be tiles, lesson or compare");
    s.view = o.view == "lesson" ? View::lesson : o.view == "compare" ? View::compare : View::tiles;
    s.view_changed = true;
  }
  const int64_t len = int64_t(s.steps());  // beyond the trace's length, steps do nothing more
  for (int64_t n = 0; n < std::min(o.step, len); ++n) s.step_forward();
  for (int64_t n = 0; n < std::min(o.back, len); ++n) s.step_back();
  if (!o.script.empty()) s.run_script(o.script);
  if (o.lesson_blocks >= 0) s.lesson.shown = int(std::min<int64_t>(o.lesson_blocks, int64_t(s.lesson.lesson.blocks.size())));
  if (!o.compare_o.empty()) {
    std::snprintf(s.compare.o_path, sizeof s.compare.o_path, "%s", o.compare_o.c_str());
    std::snprintf(s.compare.lse_path, sizeof s.compare.lse_path, "%s", o.compare_lse.c_str());
    s.load_compare();
    if (!s.compare.error.empty()) throw InputError(s.compare.error);
  }

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
      FrameClock clock;
      for (int f = 0; f < 4; ++f) frame(window, s, gpu, 0.0, f == 3 ? o.screenshot : std::string());
      if (!o.dump_state.empty()) write_state_dump(s, o.dump_state);
      int fw = 0, fh = 0;
      glfwGetFramebufferSize(window, &fw, &fh);
      std::printf("wrote %s (%dx%d) at step %zu of %zu\n", o.screenshot.c_str(), fw, fh, s.index(), s.steps());
    } else if (o.bench_frames > 0) {
      // Idle frames (nothing changes: no upload, no allocation) and stepping frames (one step per
      // frame: O, l, m re-uploaded and S/P recoloured), each timed to glFinish.
      for (int f = 0; f < 10; ++f) frame(window, s, gpu, 0.0, "");
      auto run_frames = [&](bool stepping, double* mean_ms, double* max_ms, long* allocs, FrameSplit* split) {
        using clock = std::chrono::steady_clock;
        double sum = 0, worst = 0;
        alloc_counter_reset();
        alloc_counter_enable(!stepping);
        for (int f = 0; f < o.bench_frames; ++f) {
          const auto t0 = clock::now();
          if (stepping) {
            alloc_counter_enable(false);
            if (s.index() >= s.steps()) s.seek(0);
            s.step_forward();
          }
          frame(window, s, gpu, 0.0, "", split);
          const double ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
          sum += ms;
          worst = std::max(worst, ms);
        }
        alloc_counter_enable(false);
        *mean_ms = sum / o.bench_frames;
        *max_ms = worst;
        *allocs = alloc_counter_value();
      };
      double idle_mean = 0, idle_max = 0, step_mean = 0, step_max = 0;
      long idle_allocs = 0, step_allocs = 0;
      s.seek(s.steps() / 2);
      for (int f = 0; f < 3; ++f) frame(window, s, gpu, 0.0, "");
      const int uploads_before = gpu.O.uploads;
      FrameSplit idle_split, step_split;
      run_frames(false, &idle_mean, &idle_max, &idle_allocs, &idle_split);
      const int idle_uploads = gpu.O.uploads - uploads_before;
      run_frames(true, &step_mean, &step_max, &step_allocs, &step_split);
      const Problem& p = s.run->trace.problem;
      int fw = 0, fh = 0;
      glfwGetFramebufferSize(window, &fw, &fh);
      std::printf("bench: Nq = %lld, Nk = %lld, d = %lld, %zu steps, window %dx%d, renderer %s\n",
                  (long long)p.nq, (long long)p.nk, (long long)p.d, s.steps(), fw, fh,
                  reinterpret_cast<const char*>(glGetString(GL_RENDERER)));
      std::printf("bench: idle frames:     mean %.2f ms, max %.2f ms over %d frames; %ld allocations, "
                  "%d texture uploads\n", idle_mean, idle_max, o.bench_frames, idle_allocs, idle_uploads);
      std::printf("bench: stepping frames: mean %.2f ms, max %.2f ms over %d frames (one step per "
                  "frame, textures re-uploaded)\n", step_mean, step_max, o.bench_frames);
      const double n = o.bench_frames;
      int cmds = 0;
      const ImDrawData* dd = ImGui::GetDrawData();
      for (int c = 0; c < dd->CmdListsCount; ++c) cmds += dd->CmdLists[c]->CmdBuffer.Size;
      std::printf("bench: last frame: %d draw lists, %d draw commands, %d vertices, %d indices\n",
                  dd->CmdListsCount, cmds, dd->TotalVtxCount, dd->TotalIdxCount);
      // Pixels the rasteriser fills (triangle areas, before clipping): the software
      // rasteriser's cost grows with this, not with the number of vertices.
      double filled = 0;
      for (int c = 0; c < dd->CmdListsCount; ++c) {
        const ImDrawList* list = dd->CmdLists[c];
        for (int k = 0; k + 2 < list->IdxBuffer.Size; k += 3) {
          const ImVec2 a = list->VtxBuffer[list->IdxBuffer[k]].pos, b = list->VtxBuffer[list->IdxBuffer[k + 1]].pos,
                       d = list->VtxBuffer[list->IdxBuffer[k + 2]].pos;
          filled += std::abs((b.x - a.x) * (d.y - a.y) - (d.x - a.x) * (b.y - a.y)) * 0.5;
        }
      }
      std::printf("bench: last frame fills about %.2f Mpixel, %.2fx the window (plus the clear)\n",
                  filled / 1e6, filled / (double(fw) * double(fh)));
      std::printf("bench: split (idle / stepping): UI build + uploads %.2f / %.2f ms, GL draw %.2f / "
                  "%.2f ms, swap %.2f / %.2f ms\n", idle_split.build_ms / n, step_split.build_ms / n,
                  idle_split.render_ms / n, step_split.render_ms / n, idle_split.swap_ms / n,
                  step_split.swap_ms / n);
      std::printf("mean frame time %.2f ms (target < 16 ms)\n", std::max(idle_mean, step_mean));
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
  g->add_option("--preset", o.preset, "preset in assets/presets (tiny, gpt2-medium, lesson, causal, fa1-vs-fa2, dropout-bf16) or a .json path");
  g->add_option("--step", o.step, "apply this many steps before showing")->check(CLI::NonNegativeNumber);
  g->add_option("--screenshot", o.screenshot, "render to this PNG and exit (works under xvfb-run)");
  g->add_option("--size", o.size, "window size, default 1600x1000");
  g->add_option("--view", o.view, "open on tiles, lesson or compare");
  g->add_option("--back", o.back, "then step back this many steps")->check(CLI::NonNegativeNumber)->group("");
  g->add_option("--script", o.script, "UI actions: \"step 5; back 2; seek 9; end; home; jump I J; set d 8; set schedule fa2; apply\"")->group("");
  g->add_option("--dump-state", o.dump_state, "with --screenshot: write the app's step and HBM state as JSON")->group("");
  g->add_option("--bench-frames", o.bench_frames, "time this many frames (idle, then one step per frame), print the mean frame time and exit");
  g->add_option("--lesson-blocks", o.lesson_blocks, "blocks merged in the lesson tab")->group("");
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
