// Animation export for slides: `flashstep gui --frames DIR --from K --to L` writes one PNG per
// step K..L (DIR/step-0000K.png ...), and --gif / --video turn them into a GIF or a video with
// ImageMagick or ffmpeg when one is installed (found on PATH at run time). Everything is
// checked before the window opens; the PNGs go to a private staging folder (mkdtemp) that
// becomes DIR only when every frame is written. The encoders write into that folder too (their
// log is an unlinked mkstemp file there, never a predictable /tmp name), and the GIF and video
// then follow run's output rules (core/output_files.h: regular files only, a symlink written
// through, no input overwritten, all or nothing). SIGINT/SIGTERM remove the staging folder.
// The window's part (rendering each step) is frames_export.cpp.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace flashstep::gui {

struct AnimationRequest {
  static constexpr int64_t kUnset = std::numeric_limits<int64_t>::min();
  std::string frames_dir, gif, video;
  int64_t from = kUnset, to = kUnset;  // not given: 0 and the last step
  double fps = 4;
  bool wanted() const { return !frames_dir.empty() || !gif.empty() || !video.empty(); }
};

// An external program and its arguments before the frames (ImageMagick or ffmpeg).
struct Encoder {
  std::string what;  // "ImageMagick" or "ffmpeg"
  std::string program;
};

// At most this many frames in one export (a few minutes of rendering and a few GB of PNGs).
constexpr int64_t kMaxAnimationFrames = 20000;

struct AnimationPlan {
  int64_t from = 0, to = 0;
  double fps = 4;
  std::string frames_dir;  // "" when only a GIF or video is asked for (a symlink: its folder)
  std::string staging;     // where the PNGs are written first: a mkdtemp template until begun
  std::vector<std::pair<std::string, std::string>> inputs;  // files the app read (path, flag): never overwritten
  std::string gif, video;
  Encoder gif_encoder, video_encoder;
  std::string frame_path(int64_t step) const;  // staging/step-00012.png
  size_t count() const { return size_t(to - from + 1); }
};

// Checks the request against a trace of `steps` steps (K <= L, both in 0..steps), the output
// paths and the tools; throws InputError (one line naming the flag) on any problem. With a
// request that wants nothing, any --from/--to is an error.
AnimationPlan plan_animation(const AnimationRequest& r, size_t steps);

// ImageMagick's `magick` or `convert` on PATH (checked to be ImageMagick), or ffmpeg; "" if none.
std::string find_imagemagick();
std::string find_ffmpeg();

// Makes the staging folder (mkdtemp: a fresh, private name) and sets p.staging to it; installs
// the SIGINT/SIGTERM handlers that stop the export (see stop_signal). Throws InputError.
void begin_animation(AnimationPlan& p);
// The signal (SIGINT, SIGTERM) that asked the export to stop, or 0. The frame loop and the
// encoders check it; then abandon_animation and die_of_signal.
int stop_signal();
// After the frames: the GIF and the video are made in the staging folder and written to their
// targets all or nothing (core/output_files.h), then the staging folder becomes frames_dir
// (or is removed when only a GIF or video was asked for). Throws InputError.
void finish_animation(const AnimationPlan& p);
// On failure: removes the staging folder with every file in it; puts the signal handlers back.
void abandon_animation(const AnimationPlan& p) noexcept;
// After abandon_animation: ends the program by the signal that stopped it, as if unhandled.
[[noreturn]] void die_of_signal(int sig);

// The encoders' command lines (for the docs and the tests).
std::vector<std::string> gif_command(const AnimationPlan& p, const std::string& out);
std::vector<std::string> video_command(const AnimationPlan& p, const std::string& out);

}  // namespace flashstep::gui
