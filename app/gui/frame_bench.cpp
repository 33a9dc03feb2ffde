// `flashstep gui --bench-frames N`: the frame cost at the problem's size. Idle frames must
// allocate nothing and upload nothing; stepping frames re-upload what a step changed. Prints the
// mean and worst frame time, the draw data of the last frame, and where the time goes.
#include "app/gui/alloc_counter.h"
#include "app/gui/frame.h"
#include "app/gui/gl.h"

#include <GLFW/glfw3.h>
#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

namespace flashstep::gui {

void run_frame_bench(GLFWwindow* window, AppState& s, GpuState& gpu, int frames) {
  // Idle frames (nothing changes: no upload, no allocation) and stepping frames (one step per
  // frame: O, l, m re-uploaded and S/P recoloured), each timed to glFinish.
  for (int f = 0; f < 10; ++f) frame(window, s, gpu, 0.0, nullptr);
  auto run_frames = [&](bool stepping, double* mean_ms, double* max_ms, long* allocs, FrameSplit* split) {
    using clock = std::chrono::steady_clock;
    double sum = 0, worst = 0;
    alloc_counter_reset();
    alloc_counter_enable(!stepping);
    for (int f = 0; f < frames; ++f) {
      const auto t0 = clock::now();
      if (stepping) {
        alloc_counter_enable(false);
        if (s.index() >= s.steps()) s.seek(0);
        s.step_forward();
      }
      frame(window, s, gpu, 0.0, nullptr, split);
      const double ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
      sum += ms;
      worst = std::max(worst, ms);
    }
    alloc_counter_enable(false);
    *mean_ms = sum / frames;
    *max_ms = worst;
    *allocs = alloc_counter_value();
  };
  double idle_mean = 0, idle_max = 0, step_mean = 0, step_max = 0;
  long idle_allocs = 0, step_allocs = 0;
  s.seek(s.steps() / 2);
  for (int f = 0; f < 3; ++f) frame(window, s, gpu, 0.0, nullptr);
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
              "%d texture uploads\n", idle_mean, idle_max, frames, idle_allocs, idle_uploads);
  std::printf("bench: stepping frames: mean %.2f ms, max %.2f ms over %d frames (one step per "
              "frame, textures re-uploaded)\n", step_mean, step_max, frames);
  const double n = frames;
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
}

}  // namespace flashstep::gui
