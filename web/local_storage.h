// The app's settings file across visits (web/local_storage.cpp): its display settings and the
// course's progress, kept in the browser's localStorage (web/stored_settings.h says which parts).
#pragma once
#include <string>

namespace flashstep::web {

// Before the app's state is made: the stored parts become the settings file, so that the app
// reads them as the desktop reads its file (a link's theme=, font=, hide= or presentation=1 then
// overrides the stored display settings). A stored part the app would refuse is dropped, with a
// line in the console.
void restore_stored_settings();

// After each frame: when the app has saved its settings file since, each changed part is stored;
// a new display part sets the Display menu's message to where it went (or that it could not).
void keep_stored_settings(std::string* display_message);

}  // namespace flashstep::web
