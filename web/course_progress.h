// The course's progress across visits (web/course_progress.cpp). The app keeps it in its settings
// file, which in the page lives in memory and goes with the visit; the page keeps a copy of the
// file's "course" object in the browser's localStorage.
#pragma once

namespace flashstep::web {

// Before the app's state is made: the stored progress becomes the settings file's "course" (the
// display settings stay the visit's: the link carries them). A stored value the app would refuse
// is dropped, with a line in the console.
void restore_course_progress();

// After each frame: when the app has saved its settings file since, its "course" is stored.
void keep_course_progress();

}  // namespace flashstep::web
