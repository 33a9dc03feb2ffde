// `flashstep gui --frames DIR --from K --to L [--gif F] [--video F]`: one PNG per step, rendered
// by the real window like --screenshot; the checks and the encoders are in animation.cpp.
#include "app/gui/frame.h"

#include "core/types.h"

#include <cstdio>
#include <filesystem>

namespace flashstep::gui {

void run_animation(GLFWwindow* window, AppState& s, GpuState& gpu, const AnimationPlan& plan) {
  std::error_code ec;
  if (!std::filesystem::create_directory(plan.staging, ec))
    throw InputError("cannot create the folder " + plan.staging + (ec ? ": " + ec.message() : " (it exists)"));
  try {
    // Played, not stepped: the pseudocode panel keeps the current line in view as it does
    // while playing (dt = 0: the frames themselves never advance the step).
    s.seek(size_t(plan.from));
    s.playing = true;
    for (int f = 0; f < 3; ++f) frame(window, s, gpu, 0.0, "");  // ImGui settles its layout
    for (int64_t k = plan.from; k <= plan.to; ++k) {
      s.seek(size_t(k));
      s.playing = true;
      frame(window, s, gpu, 0.0, "");  // scroll to the new line, then capture the settled frame
      frame(window, s, gpu, 0.0, plan.frame_path(k));
    }
    finish_animation(plan);
  } catch (...) {
    abandon_animation(plan);
    throw;
  }
  std::printf("wrote %zu frames (steps %lld to %lld)%s%s%s%s%s%s\n", plan.count(), (long long)plan.from,
              (long long)plan.to, plan.frames_dir.empty() ? "" : " to ", plan.frames_dir.c_str(),
              plan.gif.empty() ? "" : ", GIF ", plan.gif.c_str(), plan.video.empty() ? "" : ", video ",
              plan.video.c_str());
}

}  // namespace flashstep::gui
