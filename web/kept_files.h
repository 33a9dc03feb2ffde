// The files a user opened from the computer in the web page, kept in the browser between visits.
// The page writes each chosen file to /upload/KIND/NAME (index.html), a folder the browser keeps
// in its IndexedDB (emscripten's IDBFS, stored after each upload; memory only where the browser
// refuses). What the views showed is named in /upload/kept.json, and the next visit opens those
// files in the same views, as the desktop opens a typed path again:
//   bench         the Bench view's results
//   compare-o     the compare view's O and lse (checked against the link's trace, as a fresh
//   compare-lse   upload is: another problem's O is refused with the view's error line)
//   dram          the memory panel's DRAM measurement
// A saved trace and Q, K, V inputs make the run, which the link names: they are for the visit
// only, and the next visit opens the link's problem. Plain C++ (no emscripten), so that the tests
// run it natively; the page's glue is in main_web.cpp.
#pragma once
#include "app/gui/app_state.h"

#include <string>
#include <vector>

namespace flashstep::web {

// The folder under /upload/ for each kind of file ("bench", "compare-o", ...).
const char* local_file_name(gui::LocalFile what);

class KeptFiles {
 public:
  explicit KeptFiles(std::string root) : root_(std::move(root)) {}

  // At the start, before the first frame: opens the files kept.json names in their views, each
  // through the checks a fresh upload goes through (a bad one leaves the view as it was and shows
  // the same one-line error naming the file); a file that is gone is dropped without a word in
  // the views. Then removes the other files under the folder (the visit's traces, inputs and
  // snapshot folders, refused uploads). Returns lines for the console; `changed` says whether the
  // folder changed (then the page stores it).
  std::vector<std::string> restore(gui::AppState& s, bool* changed);

  // After the page loaded a chosen file of kind `what` at `path`: when its view took it, it is
  // the one kept of its kind and the others of that kind are removed. Returns whether kept.json
  // or the folder changed.
  bool note_loaded(const gui::AppState& s, gui::LocalFile what, const std::string& path);

  // Removes every file under the folder, and the views show what they show with no file chosen
  // (the Bench view the shipped results; the compare view, an uploaded snapshot folder and the
  // DRAM measurement nothing; the Q, K, V fields empty). A run already made from files stays.
  void forget(gui::AppState& s);

  // How many files the views keep for the next visit.
  int count() const;

 private:
  std::string root_;
  std::string kept_[4];  // bench, compare-o, compare-lse, dram: the path kept, or ""
  void save() const;
};

}  // namespace flashstep::web
