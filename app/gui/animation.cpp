#include "app/gui/animation.h"

#include "core/input_files.h"
#include "core/output_files.h"
#include "core/types.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <spawn.h>
#include <sstream>
#include <sys/stat.h>
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

// SIGINT/SIGTERM during an export: the handler only records the signal; the frame loop and
// run_program see it, clean up and then die of it (die_of_signal).
volatile sig_atomic_t g_stop = 0;
struct sigaction g_old_int, g_old_term;
bool g_handlers = false;

extern "C" void note_stop(int sig) { g_stop = sig; }

// A log for a program's output: a fresh mkstemp file in `dir`, unlinked at once (no name to
// plant a symlink at, nothing left behind); read back through the descriptor.
struct Log {
  int fd = -1;
  explicit Log(const std::string& dir) {
    std::string name = dir + "/.flashstep-log.XXXXXX";
    fd = ::mkstemp(name.data());
    if (fd < 0) throw InputError("cannot create a log file in " + dir + ": " + std::strerror(errno));
    ::unlink(name.c_str());
  }
  ~Log() { ::close(fd); }
  std::string text() const {  // the last 4 KiB
    const off_t end = ::lseek(fd, 0, SEEK_END);
    const off_t from = std::max<off_t>(0, end - 4096);
    std::string t(size_t(end - from), '\0');
    const ssize_t n = ::pread(fd, t.data(), t.size(), from);
    t.resize(n > 0 ? size_t(n) : 0);
    return t;
  }
};

// Runs argv (no shell: file names are passed as they are), its output into the log. Returns
// the exit status, or -1 with `why` set when it could not start, was killed, or was stopped
// by SIGINT/SIGTERM (the program is then stopped too).
int run_program(const std::vector<std::string>& argv, const Log& log, std::string* why) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, log.fd, 1);
  posix_spawn_file_actions_adddup2(&fa, log.fd, 2);
  pid_t pid = 0;
  const int err = posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (err != 0) {
    *why = std::string("could not start ") + excerpt(argv[0], 200) + ": " + std::strerror(err);
    return -1;
  }
  int status = 0;
  for (;;) {
    if (::waitpid(pid, &status, 0) >= 0) break;
    if (errno != EINTR) {
      *why = std::string("lost the program: ") + std::strerror(errno);
      return -1;
    }
    if (g_stop) ::kill(pid, SIGTERM);  // the export is stopping: so does the encoder
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  *why = "killed by signal " + std::to_string(WTERMSIG(status));
  return -1;
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

// An output file's folder must exist: nothing is created on the way to a result. Then the
// target itself follows run's rules (a regular file or none; a symlink is written through).
void check_output(const std::string& flag, const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !fs::is_directory(parent, ec))
    throw InputError(flag + " " + path + ": the folder " + parent.string() + " does not exist");
  if (fs::is_directory(path, ec)) throw InputError(flag + " " + path + " is a folder");
  OutputFiles out;
  out.add(path, flag);
  out.check();
}

constexpr int64_t kMaxEncodedBytes = int64_t(4) << 30;  // what an encoder may write: read back whole

// Runs an encoder that writes `made` (inside the staging folder); throws InputError with the
// reason and the encoder's last line when it fails or writes nothing.
void encode(const std::vector<std::string>& argv, const std::string& what, const std::string& out,
            const std::string& made, const std::string& staging) {
  const Log log(staging);
  std::string why;
  const int rc = run_program(argv, log, &why);
  if (g_stop) return;  // the caller stops the export
  const std::string tail = excerpt(last_line(log.text()), 200);
  struct stat st;
  if (rc == 0 && (::lstat(made.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0))
    why = "it wrote no file";
  else if (rc > 0)
    why = "exit " + std::to_string(rc);
  if (!why.empty()) throw InputError(what + " could not make " + out + " (" + why + ")" + (tail.empty() ? "" : ": " + tail));
}

}  // namespace

std::string find_imagemagick() {
  for (const char* name : {"magick", "convert"}) {
    const std::string p = find_on_path(name);
    if (p.empty()) continue;
    // Another program may be called convert (Windows has one; a sandbox may have a stand-in).
    std::error_code ec;
    const fs::path tmp = fs::temp_directory_path(ec);  // $TMPDIR may name no folder
    const Log log(ec ? "/tmp" : tmp.string());
    std::string why;
    const int rc = run_program({p, "-version"}, log, &why);
    if (rc == 0 && log.text().find("Version: ImageMagick") != std::string::npos) return p;
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
  if (p.count() > kMaxAnimationFrames)
    throw InputError("--from K --to L: " + std::to_string(p.count()) + " frames, over the " +
                     std::to_string(kMaxAnimationFrames) + " one export makes (export a part at a time)");
  std::error_code ec;
  if (!r.frames_dir.empty()) {
    fs::path dir = fs::path(r.frames_dir).lexically_normal();
    if (!dir.has_filename()) dir = dir.parent_path();
    if (fs::is_symlink(dir, ec)) {  // written through, as run writes through a symlinked file
      const fs::path target = fs::canonical(dir, ec);
      if (ec || !fs::is_directory(target, ec))
        throw InputError("--frames " + r.frames_dir + " is a symlink to a missing folder or to a file");
      dir = target;
    }
    const fs::path parent = dir.parent_path();
    const std::string name = dir.filename().string();
    if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
      throw InputError("--frames " + r.frames_dir + " exists and is not a folder");
    if (fs::is_directory(dir, ec) && !fs::is_empty(dir, ec))
      throw InputError("--frames " + r.frames_dir + " is not empty (give a new or empty folder)");
    if (!parent.empty() && !fs::is_directory(parent, ec))
      throw InputError("--frames " + r.frames_dir + ": the folder " + parent.string() + " does not exist");
    p.frames_dir = (parent / name).string();
    p.staging = (parent / ".flashstep-frames-XXXXXX").string();  // short: any DIR name fits beside it
  } else {
    const fs::path tmp = fs::temp_directory_path(ec);
    p.staging = ((ec ? fs::path("/tmp") : tmp) / "flashstep-frames-XXXXXX").string();
  }
  if (!r.gif.empty()) {
    if (lower_extension(r.gif) != ".gif") throw InputError("--gif " + r.gif + ": the file name must end in .gif");
    check_output("--gif", r.gif);
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
    check_output("--video", r.video);
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
  std::string folder;  // ffmpeg reads '%' in the whole name as a pattern: a '%' in a folder's name is "%%"
  for (char c : pattern.substr(0, dash)) folder += c == '%' ? std::string("%%") : std::string(1, c);
  pattern = folder + "step-%0" + std::to_string(digits) + "d.png";
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

void begin_animation(AnimationPlan& p) {
  std::string dir = p.staging;
  if (!::mkdtemp(dir.data()))
    throw InputError("cannot create a staging folder " + p.staging + ": " + std::strerror(errno));
  p.staging = dir;
  g_stop = 0;
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = note_stop;  // no SA_RESTART: waitpid returns, and the encoder is stopped
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &g_old_int);
  sigaction(SIGTERM, &sa, &g_old_term);
  g_handlers = true;
}

int stop_signal() { return g_stop; }

namespace {

// The GIF and the video, made in the staging folder, then written all or nothing; the frames
// moved to --frames or removed with the staging folder.
void commit_animation(const AnimationPlan& p) {
  OutputFiles out;
  for (const auto& [path, what] : p.inputs) out.add_input(path, what);
  const std::pair<const std::string*, const char*> wanted[] = {{&p.gif, "--gif"}, {&p.video, "--video"}};
  for (const auto& [target, flag] : wanted) {
    if (target->empty()) continue;
    const bool gif = target == &p.gif;
    const std::string made = p.staging + "/.encoded" + lower_extension(*target);  // the encoders go by the extension
    encode(gif ? gif_command(p, made) : video_command(p, made), gif ? p.gif_encoder.what : p.video_encoder.what,
           *target, made, p.staging);
    if (g_stop) return;
    out.add(*target, flag);
    out.bytes(*target) = read_input_file(made, "the encoded file", kMaxEncodedBytes);
    ::unlink(made.c_str());
  }
  if (!p.frames_dir.empty()) {  // checked again: it must still be a new or empty folder
    std::error_code ec;
    if (fs::exists(p.frames_dir, ec) && (!fs::is_directory(p.frames_dir, ec) || !fs::is_empty(p.frames_dir, ec)))
      throw InputError("--frames " + p.frames_dir + " is no longer a new or empty folder");
  }
  // SIGINT and SIGTERM wait from the commit until the staging folder is gone or moved: inside
  // commit() OutputFiles' own handler would remove its temporaries and end the program, leaving
  // the staging folder behind. A signal that came meanwhile reaches note_stop when the mask is
  // restored, and run_animation then ends the program by it (the outputs are whole by then).
  sigset_t held, before;
  sigemptyset(&held);
  sigaddset(&held, SIGINT);
  sigaddset(&held, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &held, &before);
  struct Restore {
    const sigset_t* mask;
    ~Restore() { pthread_sigmask(SIG_SETMASK, mask, nullptr); }
  } restore{&before};
  out.commit();
  std::error_code ec;
  if (p.frames_dir.empty()) {
    fs::remove_all(p.staging, ec);
  } else {
    fs::remove(p.frames_dir, ec);  // an empty folder given as DIR (checked empty above)
    fs::rename(p.staging, p.frames_dir, ec);
    if (ec) throw InputError("cannot move the frames to " + p.frames_dir + ": " + ec.message());
    ::chmod(p.frames_dir.c_str(), 0777 & ~[] { const mode_t m = ::umask(0); ::umask(m); return m; }());  // mkdtemp made it 0700
  }
}

}  // namespace

void finish_animation(const AnimationPlan& p) {
  commit_animation(p);  // the signal mask is as before again when it returns or throws
  if (g_stop) return;   // run_animation ends the program by the signal
  if (g_handlers) {
    sigaction(SIGINT, &g_old_int, nullptr);
    sigaction(SIGTERM, &g_old_term, nullptr);
    g_handlers = false;
  }
}

void abandon_animation(const AnimationPlan& p) noexcept {
  std::error_code ec;
  const std::string& st = p.staging;  // a template still ending in XXXXXX: not made
  if (st.size() > 6 && st.compare(st.size() - 6, 6, "XXXXXX") != 0) fs::remove_all(st, ec);
  if (g_handlers) {
    sigaction(SIGINT, &g_old_int, nullptr);
    sigaction(SIGTERM, &g_old_term, nullptr);
    g_handlers = false;
  }
}

void die_of_signal(int sig) {
  std::signal(sig, SIG_DFL);
  std::raise(sig);
  std::_Exit(128 + sig);
}

}  // namespace flashstep::gui
