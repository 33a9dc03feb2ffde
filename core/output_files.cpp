#include "core/output_files.h"

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

namespace flashstep {

namespace {

// The temporaries that exist now, for the signal handler: fixed storage, because a handler
// may only call async-signal-safe functions (unlink, signal, raise).
constexpr int kMaxTemps = 16;
char g_temps[kMaxTemps][PATH_MAX];
volatile sig_atomic_t g_ntemps = 0;

// An OutputFolder's staging folder, for the same handler: its files' full paths, one after
// another with a NUL after each, built before the first file is created.
const char* volatile g_stage_paths = nullptr;
volatile sig_atomic_t g_stage_files = 0;
char g_stage_dir[PATH_MAX];

extern "C" void remove_temps_and_die(int sig) {
  for (int k = 0; k < g_ntemps; ++k) ::unlink(g_temps[k]);
  g_ntemps = 0;
  if (g_stage_paths) {
    const char* p = g_stage_paths;
    for (int k = 0; k < g_stage_files; ++k) {
      ::unlink(p);
      while (*p) ++p;
      ++p;
    }
    ::rmdir(g_stage_dir);
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

// Holds SIGINT and SIGTERM back for its lifetime (they are delivered when it ends).
struct SignalsHeld {
  sigset_t old;
  SignalsHeld() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigprocmask(SIG_BLOCK, &set, &old);
  }
  ~SignalsHeld() { sigprocmask(SIG_SETMASK, &old, nullptr); }
};

// A sigaction that calls handler (or SIG_IGN), with no flags and nothing masked.
struct sigaction action_of(void (*handler)(int)) {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  return sa;
}

// Installs the handler for the lifetime of a commit, then puts the old ones back.
struct SignalCleanup {
  struct sigaction old_int, old_term;
  SignalCleanup() {
    const struct sigaction sa = action_of(remove_temps_and_die);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
  }
  ~SignalCleanup() {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
  }
};

// SIGPIPE ignored for its lifetime: while temporaries exist, a reader that closed its pipe makes
// a write fail with EPIPE, which the writer reports, instead of ending the program with the
// temporaries left behind.
struct PipeSignalIgnored {
  struct sigaction old;
  PipeSignalIgnored() {
    const struct sigaction sa = action_of(SIG_IGN);
    sigaction(SIGPIPE, &sa, &old);
  }
  ~PipeSignalIgnored() { sigaction(SIGPIPE, &old, nullptr); }
};

std::string errno_text() { return std::strerror(errno); }

// All of `bytes` to fd (a write cut short by a signal goes on), then fsync; false with errno
// set on failure.
bool write_and_sync(int fd, const std::string& bytes) {
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    left -= size_t(n);
  }
  return ::fsync(fd) == 0;
}

std::string dir_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string real_path(const std::string& path) {
  char buf[PATH_MAX];
  if (!::realpath(path.c_str(), buf)) return "";
  return buf;
}

std::string inode_key(const struct stat& st) {
  return "inode " + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
}

}  // namespace

std::string file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symlink";
  if (S_ISREG(mode)) return "a regular file";
  return "a special file";
}

OutputFiles::~OutputFiles() { remove_temporaries(); }

void OutputFiles::add(const std::string& path, const std::string& what) {
  if (path.empty()) throw InputError(what + ": empty file name");
  if (int(outs_.size()) == kMaxTemps) throw InputError("too many output files (at most 16)");
  outs_.push_back({path, what, "", "", "", 0});
}

std::string& OutputFiles::bytes(const std::string& path) {
  for (Out& o : outs_)
    if (o.path == path) return o.bytes;
  throw std::logic_error("OutputFiles::bytes: " + path + " was not added");
}

void OutputFiles::add_input(const std::string& path, const std::string& what) {
  if (!path.empty()) ins_.push_back({path, what});
}

void OutputFiles::add_folder(OutputFolder& folder) { folder_ = &folder; }

// An output that is the folder, or a file inside it, would be replaced by the folder or would
// corrupt it (a manifest.json or .npy file it does not list, a file the next run refuses): both
// are refused, as two outputs naming one file are. Paths are compared once made absolute with
// every existing part's links resolved.
void OutputFiles::check_not_in_folder() const {
  if (!folder_) return;
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir = fs::weakly_canonical(fs::absolute(folder_->dir_), ec);
  if (ec) return;  // the folder's own check names the problem
  const std::string d = dir.string();
  for (const Out& o : outs_) {
    const fs::path p = fs::weakly_canonical(fs::absolute(o.path), ec);
    if (ec) continue;  // the file's own check names the problem
    const std::string s = p.string();
    if (s == d)
      throw InputError(o.what + " " + o.path + " is the " + folder_->what_ + " folder " + folder_->dir_ +
                       "; give the output another name");
    if (s.size() > d.size() && s.compare(0, d.size(), d) == 0 && (d == "/" || s[d.size()] == '/'))
      throw InputError(o.what + " " + o.path + " lies inside the " + folder_->what_ + " folder " + folder_->dir_ +
                       ", which holds only the files it writes; write it elsewhere");
  }
}

void OutputFiles::remove_temporaries() {
  SignalsHeld held;
  for (Out& o : outs_)
    if (!o.temp.empty()) {
      ::unlink(o.temp.c_str());
      o.temp.clear();
    }
  g_ntemps = 0;
}

void OutputFiles::check() {
  check_not_in_folder();
  if (folder_) folder_->check();
  // 1. Every target checked, and the identity of each (device and inode, or the real path of
  //    a file not yet there), before anything is written.
  std::vector<std::string> keys;
  const mode_t mask = ::umask(0);
  ::umask(mask);
  for (Out& o : outs_) {
    struct stat st;
    if (::lstat(o.path.c_str(), &st) != 0) {
      if (errno != ENOENT) throw InputError(o.path + ": cannot write file (" + o.what + "): " + errno_text());
      const std::string dir = real_path(dir_of(o.path));
      if (dir.empty())
        throw InputError(o.path + ": cannot write file (" + o.what + "): folder " + dir_of(o.path) + ": " + errno_text());
      o.target = (dir == "/" ? "" : dir) + "/" + base_of(o.path);
      o.mode = 0666 & ~mask;
      keys.push_back("path " + o.target);
    } else {
      if (S_ISLNK(st.st_mode)) {  // written through to what it points at; the link stays
        o.target = real_path(o.path);
        if (o.target.empty() || ::stat(o.target.c_str(), &st) != 0)
          throw InputError(o.path + ": is a symlink to a missing file; refusing to write it (" + o.what + ")");
      } else {
        o.target = o.path;
      }
      if (!S_ISREG(st.st_mode))
        throw InputError(o.path + ": is " + file_kind(st.st_mode) + ", not a regular file; refusing to replace it (" + o.what + ")");
      o.mode = st.st_mode & 07777;
      keys.push_back(inode_key(st));
    }
  }
  for (size_t a = 0; a < outs_.size(); ++a)
    for (size_t b = a + 1; b < outs_.size(); ++b)
      if (keys[a] == keys[b])
        throw InputError(outs_[a].what + " and " + outs_[b].what + " name the same file (" + outs_[a].path + ")");
  for (const In& in : ins_) {
    struct stat st;
    if (::stat(in.path.c_str(), &st) != 0) continue;  // not there: the reader already said so
    for (size_t a = 0; a < outs_.size(); ++a)
      if (keys[a] == inode_key(st))
        throw InputError(outs_[a].what + " " + outs_[a].path + " is the " + in.what + " file " + in.path + "; refusing to overwrite an input");
  }
}

void OutputFiles::commit(const std::function<void()>& before_publish) {
  check();

  // 2. Temporaries next to each target, written and synced; the folder staged.
  SignalCleanup cleanup;
  bool published = false;
  try {
    for (Out& o : outs_) {
      std::string temp = dir_of(o.target) + "/." + base_of(o.target) + ".XXXXXX";
      int fd;
      {
        SignalsHeld held;  // the temporary is registered before a signal can see it
        fd = ::mkstemp(temp.data());
        if (fd < 0) throw InputError(o.path + ": cannot create a temporary file in " + dir_of(o.target) + ": " + errno_text());
        o.temp = temp;
        std::snprintf(g_temps[g_ntemps], PATH_MAX, "%s", temp.c_str());
        g_ntemps = g_ntemps + 1;
      }
      bool ok = ::fchmod(fd, o.mode) == 0 && write_and_sync(fd, o.bytes);
      const std::string why = errno_text();
      ok = (::close(fd) == 0) && ok;
      if (!ok) throw InputError(o.path + ": write failed (" + o.what + "): " + why);
      std::string().swap(o.bytes);
    }
    if (folder_) folder_->stage();
    if (before_publish) {
      PipeSignalIgnored pipe;
      before_publish();
    }
    // 3. All written: the folder into place, then every file renamed, with the signals held so
    //    that none is left half-done.
    SignalsHeld held;
    if (folder_) {
      folder_->publish();
      published = true;
    }
    for (Out& o : outs_) {
      if (::rename(o.temp.c_str(), o.target.c_str()) != 0)
        throw InputError(o.path + ": cannot write file (" + o.what + "): " + errno_text());
      o.temp.clear();
    }
    g_ntemps = 0;
    if (folder_) folder_->settle();
  } catch (...) {
    remove_temporaries();
    if (published) folder_->restore();
    throw;
  }
}

OutputFolder::OutputFolder(std::string dir, std::string what, std::string marker)
    : dir_(std::move(dir)), what_(std::move(what)), marker_(std::move(marker)) {
  while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
  if (dir_.empty()) throw InputError(what_ + ": empty folder name");
}

OutputFolder::~OutputFolder() { remove_stage(); }

std::string& OutputFolder::add(const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
    throw std::logic_error("OutputFolder::add: not a plain file name: " + name);
  for (const File& f : files_)
    if (f.name == name) throw std::logic_error("OutputFolder::add: " + name + " added twice");
  files_.push_back({name, ""});
  return files_.back().bytes;
}

void OutputFolder::check() {
  const std::string where = dir_ + " (" + what_ + ")";
  struct stat st;
  if (::lstat(dir_.c_str(), &st) != 0) {
    if (errno != ENOENT) throw InputError(where + ": " + errno_text());
    const std::string parent = dir_of(dir_);
    if (::stat(parent.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      throw InputError(where + ": its parent folder " + parent + " does not exist");
    replace_ = false;
    return;
  }
  if (!S_ISDIR(st.st_mode))
    throw InputError(where + ": is " + file_kind(st.st_mode) + ", not a folder; refusing to replace it");
  bool empty = true;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(dir_, ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    empty = false;
    break;
  }
  if (ec) throw InputError(where + ": cannot read the folder: " + ec.message());
  if (!empty) {
    if (!recognise_ || ::lstat((dir_ + "/" + marker_).c_str(), &st) != 0)
      throw InputError(where + ": the folder exists and holds files but no " + marker_ +
                       "; refusing to replace a folder this command did not write");
    const std::string why = recognise_(dir_);
    if (!why.empty()) throw InputError(where + ": " + why + "; refusing to replace a folder this command did not write");
  }
  replace_ = true;
}

void OutputFolder::remove_stage() {
  if (stage_.empty()) return;
  SignalsHeld held;
  for (const File& f : files_) ::unlink((stage_ + "/" + f.name).c_str());
  ::rmdir(stage_.c_str());
  stage_.clear();
  g_stage_paths = nullptr;
  g_stage_files = 0;
}

void OutputFolder::stage() {
  check();
  const std::string where = dir_ + " (" + what_ + ")";
  const std::string parent = dir_of(dir_);
  try {
    // 2. The staging folder and its files.
    {
      SignalsHeld held;
      std::string stage = parent + "/." + base_of(dir_) + ".XXXXXX";
      if (!::mkdtemp(stage.data()))
        throw InputError(where + ": cannot create a staging folder in " + parent + ": " + errno_text());
      stage_ = stage;
      stage_paths_.clear();
      for (const File& f : files_) stage_paths_ += stage_ + "/" + f.name + '\0';
      std::snprintf(g_stage_dir, PATH_MAX, "%s", stage_.c_str());
      g_stage_files = sig_atomic_t(files_.size());
      g_stage_paths = stage_paths_.data();
    }
    for (File& f : files_) {
      const std::string path = stage_ + "/" + f.name;
      const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd < 0) throw InputError(where + ": cannot create " + f.name + ": " + errno_text());
      bool ok = write_and_sync(fd, f.bytes);
      const std::string why = errno_text();
      ok = (::close(fd) == 0) && ok;
      if (!ok) throw InputError(where + ": write failed (" + f.name + "): " + why);
      std::string().swap(f.bytes);
    }
    const mode_t mask = ::umask(0);
    ::umask(mask);
    ::chmod(stage_.c_str(), 0777 & ~mask);  // mkdtemp made it 0700
  } catch (...) {
    remove_stage();
    throw;
  }
}

void OutputFolder::publish() {
  // 3. Into place: an old folder is moved aside (onto an empty placeholder, which rename may
  //    replace), then the staging folder renamed over the target. The caller holds signals.
  const std::string where = dir_ + " (" + what_ + ")";
  const std::string parent = dir_of(dir_);
  try {
    if (replace_) {
      std::string aside = parent + "/." + base_of(dir_) + ".old.XXXXXX";
      if (!::mkdtemp(aside.data()))
        throw InputError(where + ": cannot create a folder in " + parent + ": " + errno_text());
      if (::rename(dir_.c_str(), aside.c_str()) != 0) {
        const std::string why = errno_text();
        ::rmdir(aside.c_str());
        throw InputError(where + ": cannot move the old folder aside: " + why);
      }
      aside_ = aside;
    }
    if (::rename(stage_.c_str(), dir_.c_str()) != 0) {
      const std::string why = errno_text();
      if (!aside_.empty() && ::rename(aside_.c_str(), dir_.c_str()) == 0) aside_.clear();  // the old folder back
      throw InputError(where + ": cannot rename the staging folder into place: " + why);
    }
  } catch (...) {
    remove_stage();
    throw;
  }
  stage_.clear();
  g_stage_paths = nullptr;
  g_stage_files = 0;
}

void OutputFolder::settle() {
  if (aside_.empty()) return;
  std::error_code ec;  // the old folder is gone from the target already; a leftover is harmless
  std::filesystem::remove_all(aside_, ec);
  aside_.clear();
}

void OutputFolder::restore() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);  // the folder this commit put there
  if (!aside_.empty() && ::rename(aside_.c_str(), dir_.c_str()) == 0) aside_.clear();
}

void OutputFolder::commit() {
  SignalCleanup cleanup;
  stage();
  SignalsHeld held;
  publish();
  settle();
}

void write_file_atomic(const std::string& path, const std::string& text) {
  OutputFiles out;
  out.add(path);
  out.bytes(path) = text;
  out.commit();
}

}  // namespace flashstep
