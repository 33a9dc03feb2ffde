// The course as a mode of the app (`flashstep gui --course`): the chapter being read, the page,
// the typed answers with their tries, and the progress per chapter, remembered in the settings
// file. The chapters themselves are app/course's model; this is what the app adds to it (moving
// the run, the step and the view to a page's scene, revealing an answer after two tries). No
// ImGui here: course_view.cpp draws it, the tests drive it in-process.
#pragma once
#include "app/course/course.h"
#include "app/course/roofline.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace flashstep::gui {

struct AppState;

// One question's state while the chapter is open.
struct AnswerState {
  char text[96] = "";   // what is typed (number, or Br,Bc,M)
  int choice = -1;      // the radio button picked (choice questions)
  int tries = 0;
  bool correct = false;
  bool revealed = false;  // after two wrong tries the answer is shown
  std::string feedback;   // the last check's outcome (and the hint after a wrong one)
};

// What is remembered per chapter: the furthest page reached and the questions answered right.
struct ChapterProgress {
  int pages_seen = 0, pages = 0;
  int correct = 0, questions = 0;
  std::vector<std::string> right;  // ids of the questions answered right (first try or later)
};

constexpr int kRevealAfterTries = 2;

// The IO explorer's sliders (the io-complexity chapter's explorer pages) and what they show: the
// figure and the closed forms at the chosen N (app/course/io_explorer.h), remade when a value moves.
struct IoExplorerState {
  int log2_n = 14, d = 64, kib = 228;  // N = 2^log2_n; M = kib KiB of float32 words
  plot::Figure figure;
  std::vector<std::string> forms;
  float label_gap_px = 0;  // the narrowest gap from a value's text to its slider as last drawn (--dump-state)
  int64_t n() const { return int64_t(1) << log2_n; }
  int64_t M() const { return int64_t(kib) * 256; }
  void set(int64_t n, int64_t d_, int64_t M_);  // from a page's scene (clamped to the sliders' ranges)
  void rebuild();                               // after a slider moved
};

struct CourseState {
  bool active = false;
  uint64_t seed = 1;
  int page = 0;  // 0-based
  std::shared_ptr<const course::Chapter> chapter;
  std::vector<AnswerState> answers;  // the current page's questions
  std::map<std::string, ChapterProgress> progress;
  std::string progress_path;   // the settings file ("" when there is nowhere to remember)
  std::string message;         // the last save's trouble, if any
  std::string run_key;         // the run the app holds for the course ("chapter/run/seed")
  uint64_t version = 0;        // bumps when the page changes (the view scrolls to the top)
  uint64_t anchor_version = 0; // the version whose page's anchor was last brought into view
  int anchor_frames = 0;       // frames left to bring it into view (panels.h, BringAnchorIntoView)
  float anchor_outside_px = 0; // of the anchored part, the pixels out of view when last drawn (for --dump-state)
  bool anchor_scrolled = false; // the panel was scrolled to show it (for --dump-state)
  plot::Figure roofline;       // the chapter's roofline (memory-bound), made when it opens
  IoExplorerState io;          // the IO explorer (io-complexity)
  float column_w = 0, centre_w = 0;  // the window's course column and centre widths (for --dump-state)
  float page_overflow = 0;  // how far the page's text and questions reach below the column (0: they fit)
  float column_overflow_px = 0;  // how far the column's widest item (a button) ran past its width
  float page_view_h = 0;         // the height of the page's box in the column, as last drawn
  float picker_cut_px = 0;       // how much of the chapter's name the picker does not show (0 or less: none)
  float page_overflow_x_px = 0;  // how far the page's widest line (a question's) ran past the page's width
  float want_w = 0;         // the column width the page asks for (course_view.cpp; 0 on a new page)
  // A page taller than the column is shown in parts (course_view.cpp plans them): Next and Back
  // go through the parts first. tail_h: the heights of the outline's note and of each question
  // as drawn (empty: not measured yet on this page).
  int part = 0, parts = 1;
  std::vector<int> part_first{0};
  std::vector<float> tail_h;

  // Opens a chapter (by id) at a page (0-based; clamped, or refused when `strict`) and moves the
  // app to its scene. Throws InputError for an unknown chapter (or page), before any change.
  void open(AppState& s, const std::string& id, int page = 0, bool strict = false);
  void go(AppState& s, int page);  // another page of this chapter (clamped)
  void next(AppState& s);          // the next page; from the last one, the next chapter's first
  void back(AppState& s);
  void new_problem(AppState& s);   // the next seed: other sizes and inputs, other answers
  // Checks the typed answer of question q of this page; true when right.
  bool submit(int q);
  const course::Page* current_page() const;
  bool on_last_page() const;
  // The side panels the page shows (PanelBit set of app/gui/settings.h) and the one outlined.
  unsigned shown_panels() const;
  course::Panel outline() const;
  course::CentreView centre() const;
  // "next", "back", "open ID [PAGE]", "answer Q TEXT" (Q 1-based on the page), "seed N": the
  // script's `course` verb. Throws InputError.
  void run_command(AppState& s, const std::string& command);

  // The settings file's "course" object (settings.h: load_course_progress / save_course_progress).
  void load_progress(const std::string& path);
  void save_progress();

 private:
  void apply_scene(AppState& s);
  void note_progress();
};

}  // namespace flashstep::gui
