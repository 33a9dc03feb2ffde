// One frame of the desktop app, shared by the window's loop (gui_command.cpp) and the frame
// benchmark (frame_bench.cpp).
#pragma once
#include "app/gui/animation.h"
#include "app/gui/app_state.h"
#include "app/gui/panels.h"

#include <string>

struct GLFWwindow;

namespace flashstep::gui {

struct FrameSplit {
  double build_ms = 0, render_ms = 0, swap_ms = 0;  // ImGui + uploads, GL draw to glFinish, swap
};

// One frame: returns after the swap. `capture`, when given, receives this frame as PNG bytes
// (the caller writes them: core/output_files.h or the export's staging folder); `split`, when
// given, adds this frame's times (with glFinish between the parts).
void frame(GLFWwindow* window, AppState& s, GpuState& gpu, double dt, std::string* capture, FrameSplit* split = nullptr);

// Times `frames` idle frames, then `frames` frames of one step each, and prints the results.
void run_frame_bench(GLFWwindow* window, AppState& s, GpuState& gpu, int frames);

// frames_export.cpp: renders each step of the plan to a PNG, then makes its GIF or video and
// moves the frames to their folder (app/gui/animation.h); on failure nothing is left half-made.
void run_animation(GLFWwindow* window, AppState& s, GpuState& gpu, AnimationPlan plan);

}  // namespace flashstep::gui
