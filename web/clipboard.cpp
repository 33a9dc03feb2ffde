// Copy and paste in the page's text fields. A browser hands the clipboard to a page only inside
// its events: 'paste' carries the text (Ctrl+V, or the browser's Edit menu), and 'copy' and 'cut'
// take the text the page puts in them; navigator.clipboard.writeText also writes it, outside the
// events, but only in a secure context (https or localhost) and with the page focused.
//   paste: the event's text becomes ImGui's clipboard, and ImGui sees Ctrl+V in the next frame
//          (its own paste: the selection replaced, the field's character filter applied)
//   copy:  the active field's selection (all of it when nothing is selected, as ImGui copies)
//          goes into the event at once
//   cut:   the same, and ImGui sees Ctrl+X in the next frame, which deletes the selection
//   ImGui's own Ctrl+C / Ctrl+X: its text is kept and written with writeText where available
// Outside a text field the events are the browser's (the page's bar is plain text).
#include "web/clipboard.h"

#include <imgui.h>
#include <imgui_internal.h>  // the active field's text and selection
#include <emscripten.h>

#include <string>

// The listeners call back into the app (flashstep_clipboard_paste, _copy below). No backslash
// escapes in EM_JS bodies (emscripten 3.1.6 copies them into its metadata unescaped).
EM_JS(void, web_watch_clipboard, (), {
  document.addEventListener("paste", function (ev) {
    const text = ev.clipboardData ? ev.clipboardData.getData("text/plain") : "";
    // A whole field's worth and more; ccall copies the string onto the stack.
    if (Module.ccall("flashstep_clipboard_paste", "number", ["string"], [text.slice(0, 65536)])) ev.preventDefault();
    window.flashstepLastInput = performance.now();
  }, true);
  for (const kind of ["copy", "cut"]) {
    document.addEventListener(kind, function (ev) {
      const p = Module._flashstep_clipboard_copy(kind === "cut" ? 1 : 0);
      if (!p || !ev.clipboardData) return;  // no text field active: the browser copies as usual
      ev.clipboardData.setData("text/plain", UTF8ToString(p));
      ev.preventDefault();
      window.flashstepLastInput = performance.now();
    }, true);
  }
});

EM_JS(void, web_write_clipboard, (const char* text), {
  const t = UTF8ToString(text);
  // Refused without focus or outside a secure context: the copy event has the text already.
  if (navigator.clipboard && navigator.clipboard.writeText) navigator.clipboard.writeText(t).catch(function () {});
});

namespace flashstep::web {

namespace {

std::string g_clipboard;  // the last text pasted into the page or copied in it
int g_press = -1;         // ImGuiKey_V or ImGuiKey_X: ImGui sees it with Ctrl in the next frame
struct Saved {
  int key = -1;
  bool down = false, ctrl = false, shift = false, alt = false, super = false;
} g_saved;

const char* get_text(void*) { return g_clipboard.c_str(); }

void set_text(void*, const char* text) {
  g_clipboard = text ? text : "";
  web_write_clipboard(g_clipboard.c_str());
}

// The active text field's state, or null when none is being edited.
ImGuiInputTextState* active_field() {
  ImGuiContext* g = ImGui::GetCurrentContext();
  if (!g || g->ActiveId == 0 || g->InputTextState.ID != g->ActiveId) return nullptr;
  return &g->InputTextState;
}

}  // namespace

void install_clipboard() {
  ImGuiIO& io = ImGui::GetIO();
  io.GetClipboardTextFn = get_text;
  io.SetClipboardTextFn = set_text;
  io.ClipboardUserData = nullptr;
  web_watch_clipboard();
}

void before_frame() {
  g_saved.key = -1;
  if (g_press < 0) return;
  ImGuiIO& io = ImGui::GetIO();
  const int key = io.KeyMap[g_press];
  g_press = -1;
  if (key < 0 || key >= IM_ARRAYSIZE(io.KeysDown)) return;
  g_saved = {key, io.KeysDown[key], io.KeyCtrl, io.KeyShift, io.KeyAlt, io.KeySuper};
  io.KeysDown[key] = true;
  io.KeyCtrl = true;  // ImGui's shortcut: Ctrl alone (not on a Mac build, which this is not)
  io.KeyShift = io.KeyAlt = io.KeySuper = false;
}

void after_frame() {
  if (g_saved.key < 0) return;
  ImGuiIO& io = ImGui::GetIO();
  io.KeysDown[g_saved.key] = g_saved.down;
  io.KeyCtrl = g_saved.ctrl;
  io.KeyShift = g_saved.shift;
  io.KeyAlt = g_saved.alt;
  io.KeySuper = g_saved.super;
  g_saved.key = -1;
}

}  // namespace flashstep::web

using namespace flashstep::web;

// The paste event's text: ImGui's clipboard, pasted into the active field in the next frame.
// Returns 1 when a field takes it (the page then cancels the browser's own paste).
extern "C" EMSCRIPTEN_KEEPALIVE int flashstep_clipboard_paste(const char* text) {
  g_clipboard = text ? text : "";
  if (!active_field()) return 0;
  g_press = ImGuiKey_V;
  return 1;
}

// The copy or cut event: the active field's selection (all of its text when nothing is
// selected, as ImGui's Ctrl+C), or null when no field is being edited.
extern "C" EMSCRIPTEN_KEEPALIVE const char* flashstep_clipboard_copy(int cut) {
  const ImGuiInputTextState* st = active_field();
  if (!st) return nullptr;
  const bool sel = st->HasSelection();
  const int a = sel ? ImMin(st->Stb.select_start, st->Stb.select_end) : 0;
  const int b = sel ? ImMax(st->Stb.select_start, st->Stb.select_end) : st->CurLenW;
  static std::string text;
  text.assign(size_t(b - a) * 4 + 1, '\0');
  const int n = ImTextStrToUtf8(text.data(), int(text.size()), st->TextW.Data + a, st->TextW.Data + b);
  text.resize(size_t(n));
  g_clipboard = text;
  if (cut) g_press = ImGuiKey_X;
  return text.c_str();
}
