#include "app/gui/animation.h"

#include "core/types.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <spawn.h>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace flashstep::gui {

namespace fs = std::filesystem;

namespace {

std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "");
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) continue;
    const std::string p = dir + "/" + name;
    if (::access(p.c_str(), X_OK) == 0 && !fs::is_directory(p)) return p;
  }
  return "";
}

// Runs argv (no shell: file names are passed as they are), its output into `log`; the exit
// status, or -1 when it could not start or was killed.
int run_program(const std::vector<std::string>& argv, const std::string& log) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = 0;
  const int err = posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (err != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string last_line(const std::string& text) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
  const size_t nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

std::string lower_extension(const std::string& path) {
  std::string e = fs::path(path).extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return e;
}

// An output file's folder must exist: nothing is created on the way to a result.
void check_parent(const std::string& flag, const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !fs::is_directory(parent, ec))
    throw InputError(flag + " " + path + ": the folder " + parent.string() + " does not exist");
  if (fs::is_directory(path, ec)) throw InputError(flag + " " + path + " is a folder");
}

// A name beside `out` (same folder, same extension: the encoders choose the format by it).
std::string partial_beside(const std::string& out) {
  const fs::path p(out);
  return (p.parent_path() / (".flashstep-partial-" + std::to_string(::getpid()) + "-" + p.filename().string())).string();
}

void encode(const std::vector<std::string>& argv, const std::string& what, const std::string& out,
            const std::string& partial) {
  const std::string log = partial + ".log";
  const int rc = run_program(argv, log);
  const std::string tail = last_line(read_all(log));
  std::error_code ec;
  fs::remove(log, ec);
  if (rc != 0 || !fs::exists(partial, ec) || fs::file_size(partial, ec) == 0) {
    fs::remove(partial, ec);
    throw InputError(what + " could not make " + out + " (exit " + std::to_string(rc) + ")" +
                     (tail.empty() ? "" : ": " + tail));
  }
  fs::rename(partial, out, ec);
  if (ec) {
    fs::remove(partial, ec);
    throw InputError("cannot write " + out);
  }
}

}  // namespace

std::string find_imagemagick() {
  for (const char* name : {"magick", "convert"}) {
    const std::string p = find_on_path(name);
    if (p.empty()) continue;
    // Another program may be called convert (Windows has one; a sandbox may have a stand-in).
    const std::string log = (fs::temp_directory_path() / ("flashstep-im-" + std::to_string(::getpid()) + ".log")).string();
    const int rc = run_program({p, "-version"}, log);
    const std::string text = read_all(log);
    std::error_code ec;
    fs::remove(log, ec);
    if (rc == 0 && text.find("Version: ImageMagick") != std::string::npos) return p;
  }
  return "";
}

std::string find_ffmpeg() { return find_on_path("ffmpeg"); }

std::string AnimationPlan::frame_path(int64_t step) const {
  int width = 5;
  for (int64_t x = to; x >= 100000; x /= 10) ++width;  // names sort by step whatever the count
  char name[64];
  std::snprintf(name, sizeof name, "step-%0*lld.png", width, (long long)step);
  return (fs::path(staging) / name).string();
}

AnimationPlan plan_animation(const AnimationRequest& r, size_t steps) {
  AnimationPlan p;
  if (!r.wanted()) {
    if (r.from != r.kUnset || r.to != r.kUnset) throw InputError("--from and --to need --frames DIR, --gif FILE or --video FILE");
    return p;
  }
  const int64_t n = int64_t(steps);
  p.from = r.from == r.kUnset ? 0 : r.from;
  p.to = r.to == r.kUnset ? n : r.to;
  if (p.from < 0 || p.from > p.to || p.to > n)
    throw InputError("--from K --to L needs 0 <= K <= L <= " + std::to_string(n) + " (the trace's steps; got K = " +
                     std::to_string(p.from) + ", L = " + std::to_string(p.to) + ")");
  if (!(r.fps >= 0.5 && r.fps <= 60)) throw InputError("--fps must be from 0.5 to 60");
  p.fps = r.fps;
  std::error_code ec;
  const std::string tag = std::to_string(::getpid());
  if (!r.frames_dir.empty()) {
    const fs::path dir = fs::path(r.frames_dir).lexically_normal();
    const fs::path parent = dir.has_filename() ? dir.parent_path() : dir.parent_path().parent_path();
    const std::string name = (dir.has_filename() ? dir : dir.parent_path()).filename().string();
    if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
      throw InputError("--frames " + r.frames_dir + " exists and is not a folder");
    if (fs::is_directory(dir, ec) && !fs::is_empty(dir, ec))
      throw InputError("--frames " + r.frames_dir + " is not empty (give a new or empty folder)");
    if (!parent.empty() && !fs::is_directory(parent, ec))
      throw InputError("--frames " + r.frames_dir + ": the folder " + parent.string() + " does not exist");
    p.frames_dir = (parent / name).string();
    p.staging = (parent / ("." + name + ".partial-" + tag)).string();
  } else {
    p.staging = (fs::temp_directory_path() / ("flashstep-frames-" + tag)).string();
  }
  if (!r.gif.empty()) {
    if (lower_extension(r.gif) != ".gif") throw InputError("--gif " + r.gif + ": the file name must end in .gif");
    check_parent("--gif", r.gif);
    const std::string im = find_imagemagick(), ff = find_ffmpeg();
    if (im.empty() && ff.empty())
      throw InputError("--gif needs ImageMagick (convert) or ffmpeg on PATH (apt-get install imagemagick or "
                       "ffmpeg), or write the PNGs with --frames DIR and convert them elsewhere");
    p.gif = r.gif;
    p.gif_encoder = im.empty() ? Encoder{"ffmpeg", ff} : Encoder{"ImageMagick", im};
  }
  if (!r.video.empty()) {
    const std::string e = lower_extension(r.video);
    if (e != ".mp4" && e != ".webm" && e != ".mkv" && e != ".mov")
      throw InputError("--video " + r.video + ": the file name must end in .mp4, .webm, .mkv or .mov");
    check_parent("--video", r.video);
    const std::string ff = find_ffmpeg();
    if (ff.empty())
      throw InputError("--video needs ffmpeg on PATH (apt-get install ffmpeg), or write the PNGs with --frames DIR "
                       "and encode them elsewhere");
    p.video = r.video;
    p.video_encoder = Encoder{"ffmpeg", ff};
  }
  return p;
}

namespace {

// ffmpeg reads the frames as a numbered sequence from --from on.
std::vector<std::string> ffmpeg_input(const AnimationPlan& p) {
  char fps[32];
  std::snprintf(fps, sizeof fps, "%g", p.fps);
  std::string pattern = p.frame_path(p.from);  // step-00012.png -> step-%05d.png
  const size_t dash = pattern.rfind("step-");
  const size_t digits = pattern.size() - dash - 9;  // "step-" + digits + ".png"
  pattern = pattern.substr(0, dash) + "step-%0" + std::to_string(digits) + "d.png";
  return {"-hide_banner", "-loglevel", "error", "-y", "-framerate", fps, "-start_number", std::to_string(p.from),
          "-i", pattern, "-frames:v", std::to_string(p.count())};
}

}  // namespace

std::vector<std::string> gif_command(const AnimationPlan& p, const std::string& out) {
  std::vector<std::string> argv{p.gif_encoder.program};
  if (p.gif_encoder.what == "ImageMagick") {
    // -delay is in hundredths of a second per frame.
    argv.insert(argv.end(), {"-delay", std::to_string(std::max(1L, std::lround(100.0 / p.fps))), "-loop", "0"});
    for (int64_t k = p.from; k <= p.to; ++k) argv.push_back(p.frame_path(k));
  } else {
    const auto in = ffmpeg_input(p);
    argv.insert(argv.end(), in.begin(), in.end());
    // A palette made from the frames themselves: the default 256-colour one bands the heatmaps.
    argv.insert(argv.end(), {"-filter_complex", "split[a][b];[a]palettegen[pal];[b][pal]paletteuse", "-loop", "0"});
  }
  argv.push_back(out);
  return argv;
}

std::vector<std::string> video_command(const AnimationPlan& p, const std::string& out) {
  std::vector<std::string> argv{p.video_encoder.program};
  const auto in = ffmpeg_input(p);
  argv.insert(argv.end(), in.begin(), in.end());
  // yuv420p (what players expect) needs even sides.
  argv.insert(argv.end(), {"-vf", "pad=ceil(iw/2)*2:ceil(ih/2)*2", "-pix_fmt", "yuv420p", out});
  return argv;
}

void finish_animation(const AnimationPlan& p) {
  if (!p.gif.empty()) {
    const std::string partial = partial_beside(p.gif);
    encode(gif_command(p, partial), p.gif_encoder.what, p.gif, partial);
  }
  if (!p.video.empty()) {
    const std::string partial = partial_beside(p.video);
    encode(video_command(p, partial), p.video_encoder.what, p.video, partial);
  }
  std::error_code ec;
  if (p.frames_dir.empty()) {
    fs::remove_all(p.staging, ec);
    return;
  }
  fs::remove(p.frames_dir, ec);  // an empty folder given as DIR (checked empty by the plan)
  fs::rename(p.staging, p.frames_dir, ec);
  if (ec) throw InputError("cannot move the frames to " + p.frames_dir + ": " + ec.message());
}

void abandon_animation(const AnimationPlan& p) noexcept {
  std::error_code ec;
  if (!p.staging.empty()) fs::remove_all(p.staging, ec);
  for (const std::string& out : {p.gif, p.video})
    if (!out.empty()) {
      fs::remove(partial_beside(out), ec);
      fs::remove(partial_beside(out) + ".log", ec);
    }
}

}  // namespace flashstep::gui
