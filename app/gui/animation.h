// Animation export for slides: `flashstep gui --frames DIR --from K --to L` writes one PNG per
// step K..L (DIR/step-0000K.png ...), and --gif / --video turn them into a GIF or a video with
// ImageMagick or ffmpeg when one is installed (found on PATH at run time). Everything is
// checked before the window opens; the PNGs go to a staging folder that becomes DIR only when
// every frame is written, and a GIF or video is written beside its final name and renamed.
// The window's part (rendering each step) is frames_export.cpp.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
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

struct AnimationPlan {
  int64_t from = 0, to = 0;
  double fps = 4;
  std::string frames_dir;  // "" when only a GIF or video is asked for
  std::string staging;     // where the PNGs are written first
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

// After the frames: the staging folder becomes frames_dir (or is removed when only a GIF or
// video was asked for), after the GIF and video are made. Throws InputError.
void finish_animation(const AnimationPlan& p);
// On failure: removes the staging folder and any partial GIF or video.
void abandon_animation(const AnimationPlan& p) noexcept;

// The encoders' command lines (for the docs and the tests).
std::vector<std::string> gif_command(const AnimationPlan& p, const std::string& out);
std::vector<std::string> video_command(const AnimationPlan& p, const std::string& out);

}  // namespace flashstep::gui
