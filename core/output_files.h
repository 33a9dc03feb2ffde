// Writing a run's output files safely, all or nothing.
//
// Each output is staged in memory, then commit():
//   1. checks every target before writing anything: an existing target must be a regular file
//      (a device, FIFO or directory is refused); a symlink is followed and its target written
//      (the link itself stays); no two outputs, and no output and an input, may be one file
//      (compared by device and inode, or by the real path of a file not yet there);
//   2. writes each output to a fresh temporary made with mkstemp (O_EXCL: a planted file or
//      symlink cannot be followed) in the target's own folder, and fsyncs it;
//   3. renames every temporary over its target only when all were written, with SIGINT and
//      SIGTERM held back meanwhile.
// With a folder (add_folder: run's --snapshots), the folder is one more output of the same
// commit: step 1 also checks it and refuses an output that is the folder or lies inside it;
// step 2 also stages the folder; step 3 renames it into place first and, if a file's rename
// fails, puts the old folder back. So a refused run leaves an existing folder as it was and
// creates none.
// On any error, and on SIGINT/SIGTERM while temporaries exist, the temporaries are removed, so a
// failed or interrupted run leaves no file behind.
#pragma once
#include "core/types.h"

#include <functional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace flashstep {

class OutputFolder;

class OutputFiles {
 public:
  OutputFiles() = default;
  OutputFiles(const OutputFiles&) = delete;
  OutputFiles& operator=(const OutputFiles&) = delete;
  ~OutputFiles();  // removes any temporaries left

  // Plans an output; `what` names the flag in messages (e.g. "--out-o").
  void add(const std::string& path, const std::string& what = "output");
  // The bytes to write to a planned output (filled once the run has produced them).
  std::string& bytes(const std::string& path);
  // Files the run read: no output may name one of them.
  void add_input(const std::string& path, const std::string& what = "input");
  // A folder written with the files, all or nothing together (see above). It must outlive
  // this object's commit(); its files are added to it, not here.
  void add_folder(OutputFolder& folder);
  // Step 1 only, so that a bad target fails before a long run; commit() checks again.
  void check();
  // Checks, writes and renames (see above). Throws InputError naming the path on failure.
  // before_publish, if given, runs between steps 2 and 3 (every temporary written, nothing
  // renamed yet; SIGPIPE ignored meanwhile): a command prints its report there and throws if
  // standard output failed, so that a run whose report was lost, or whose files could not be
  // written, leaves no file and shows no report.
  void commit(const std::function<void()>& before_publish = nullptr);

 private:
  struct Out {
    std::string path, what, bytes, target, temp;
    mode_t mode = 0;
  };
  struct In {
    std::string path, what;
  };
  std::vector<Out> outs_;
  std::vector<In> ins_;
  OutputFolder* folder_ = nullptr;
  void remove_temporaries();
  void check_not_in_folder() const;
};

// A folder of files, all or nothing (a snapshot folder: core/snapshot.h). commit():
//   1. checks the target: it must not exist (its parent must), or be a directory that is empty
//      or that the recogniser (set with recognise()) calls a folder this writer made before,
//      holding nothing else; that one is replaced. A symlink, a file or any other folder is
//      refused, so a user's folder is never emptied;
//   2. writes every file into a fresh hidden staging folder beside the target (mkdtemp) and
//      fsyncs each;
//   3. renames the staging folder into place (an old folder is moved aside first and removed
//      after), with SIGINT and SIGTERM held back meanwhile.
// On any error, and on SIGINT/SIGTERM while staging, the staging folder and its files are
// removed, so a failed or interrupted run leaves the target as it was.
class OutputFolder {
 public:
  OutputFolder(std::string dir, std::string what, std::string marker);
  OutputFolder(const OutputFolder&) = delete;
  OutputFolder& operator=(const OutputFolder&) = delete;
  ~OutputFolder();  // removes a staging folder left

  // Tells a folder this writer made (and may replace) from any other: returns "" for one, else
  // why not ("it holds index.html, which ..."). Without one, only an empty folder is replaced.
  using Recogniser = std::function<std::string(const std::string& dir)>;
  void recognise(Recogniser r) { recognise_ = std::move(r); }
  // Plans a file inside the folder (a plain name: no '/', not "." or ".."); returns the bytes
  // to fill.
  std::string& add(const std::string& name);
  void check();   // step 1 only, so that a bad target fails before a long run
  void commit();  // throws InputError naming the folder on failure

 private:
  friend class OutputFiles;  // commits a folder together with its files
  struct File {
    std::string name, bytes;
  };
  std::string dir_, what_, marker_, stage_;
  std::string stage_paths_;  // the staged files' paths for the signal handler (NUL after each)
  std::string aside_;  // the old folder, moved aside by publish() until settle() or restore()
  std::vector<File> files_;
  Recogniser recognise_;
  bool replace_ = false;  // the target exists (empty, or a folder made by this writer)
  void remove_stage();
  // commit()'s steps, each run with the signal handler installed (SignalCleanup):
  void stage();    // 1 and 2: check, then write every file into the staging folder
  void publish();  // 3: the old folder aside, the staging folder into place (signals held)
  void settle();   // the old folder removed: the commit is final
  void restore();  // publish() undone: the new folder removed, the old one back
};

// One file, atomically (an OutputFiles of one).
void write_file_atomic(const std::string& path, const std::string& text);

// "a directory", "a FIFO", "a character device", ... for messages.
std::string file_kind(mode_t mode);

}  // namespace flashstep
