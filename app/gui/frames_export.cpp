// `flashstep gui --frames DIR --from K --to L [--gif F] [--video F]`: one PNG per step, rendered
// by the real window like --screenshot; the checks and the encoders are in animation.cpp.
#include "app/gui/frame.h"

#include "core/types.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace flashstep::gui {

namespace {

// A frame into the private staging folder: a new file (O_EXCL), whole.
void write_frame(const std::string& path, const std::string& png) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw InputError("cannot write the frame " + path + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < png.size()) {
    const ssize_t n = ::write(fd, png.data() + done, png.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      throw InputError("cannot write the frame " + path + ": " + why);
    }
    done += size_t(n);
  }
  if (::close(fd) != 0) throw InputError("cannot write the frame " + path + ": " + std::strerror(errno));
}

// "frame 120 of 1553, about 95 s left" on stderr, at most twice a second, once the export has
// taken two seconds: on a terminal one line redrawn in place, else a line every ten seconds.
struct Progress {
  using clock = std::chrono::steady_clock;
  clock::time_point start = clock::now(), last = start;
  bool tty = ::isatty(2) != 0, shown = false;
  void update(size_t done, size_t total) {
    const auto now = clock::now();
    const double elapsed = std::chrono::duration<double>(now - start).count();
    const double since = std::chrono::duration<double>(now - last).count();
    if (elapsed < 2 || since < (tty ? 0.5 : 10)) return;
    last = now;
    shown = true;
    const double left = elapsed / double(done) * double(total - done);
    std::fprintf(stderr, "%sflashstep: frame %zu of %zu, about %.0f s left%s", tty ? "\r" : "", done, total, left,
                 tty ? "   " : "\n");
  }
  void finish() {
    if (shown && tty) std::fprintf(stderr, "\n");
  }
};

}  // namespace

void run_animation(GLFWwindow* window, AppState& s, GpuState& gpu, AnimationPlan plan) {
  begin_animation(plan);
  Progress progress;
  try {
    // Played, not stepped: the pseudocode panel keeps the current line in view as it does
    // while playing (dt = 0: the frames themselves never advance the step).
    s.seek(size_t(plan.from));
    s.playing = true;
    for (int f = 0; f < 3; ++f) frame(window, s, gpu, 0.0, nullptr);  // ImGui settles its layout
    std::string png;
    for (int64_t k = plan.from; k <= plan.to && !stop_signal(); ++k) {
      s.seek(size_t(k));
      s.playing = true;
      frame(window, s, gpu, 0.0, nullptr);  // scroll to the new line, then capture the settled frame
      frame(window, s, gpu, 0.0, &png);
      write_frame(plan.frame_path(k), png);
      progress.update(size_t(k - plan.from + 1), plan.count());
    }
    progress.finish();
    if (!stop_signal()) finish_animation(plan);
  } catch (...) {
    progress.finish();
    abandon_animation(plan);
    if (stop_signal()) die_of_signal(stop_signal());
    throw;
  }
  if (stop_signal()) {  // SIGINT or SIGTERM: nothing is left, and the program ends by the signal
    abandon_animation(plan);
    die_of_signal(stop_signal());
  }
  std::printf("wrote %zu frames (steps %lld to %lld)%s%s%s%s%s%s\n", plan.count(), (long long)plan.from,
              (long long)plan.to, plan.frames_dir.empty() ? "" : " to ", plan.frames_dir.c_str(),
              plan.gif.empty() ? "" : ", GIF ", plan.gif.c_str(), plan.video.empty() ? "" : ", video ",
              plan.video.c_str());
}

}  // namespace flashstep::gui
