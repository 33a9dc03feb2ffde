// Copy and paste in the page's text fields (web/clipboard.cpp). emscripten's GLFW has no
// clipboard in the browser, so ImGui's Ctrl+C / Ctrl+X / Ctrl+V went nowhere; the browser's own
// copy, cut and paste events carry the text instead.
#pragma once

namespace flashstep::web {

// After ImGui_ImplGlfw_InitForOpenGL: ImGui's clipboard becomes the page's (the browser's
// clipboard through its events, and navigator.clipboard.writeText where there is one).
void install_clipboard();

// Around the desktop's frame(): a paste or a cut event since the last frame presses Ctrl+V or
// Ctrl+X for ImGui in that frame (a paste from a menu or with the Mac's Cmd key has no Ctrl+V of
// its own; a real Ctrl+V is already down, and ImGui takes it once).
void before_frame();
void after_frame();

}  // namespace flashstep::web
