// flashstep in the browser: the desktop app's state and panels (app/gui) compiled to WebAssembly,
// drawn with WebGL2 through emscripten's GLFW. The page shell is web/index.html; web/build.sh
// builds both into build-web/. Index:
//   [SECTION] The page (JavaScript the app calls)
//   [SECTION] The mouse wheel
//   [SECTION] State from the link, state to the link and the status line
//   [SECTION] The frame loop
//   [SECTION] Set-up
// The desktop's straight-line loop becomes a callback, as the browser owns the loop: each
// animation frame runs the desktop's frame() (poll -> NewFrame -> panels -> Render), then tells
// the page what changed (status line, link, exported files).
#include "app/gui/frame.h"
#include "app/gui/resources.h"
#include "app/gui/state_dump.h"
#include "web/clipboard.h"
#include "web/kept_files.h"
#include "web/local_storage.h"
#include "web/url_state.h"

#include <GLFW/glfw3.h>
#include <imgui_internal.h>  // the hovered window's scroll, for the page's wheel check
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <emscripten.h>
#include <emscripten/html5.h>

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

// =============================================================================================
// [SECTION] The page (JavaScript the app calls)
// =============================================================================================

// The query's decoded pairs as "name TAB value NEWLINE" lines (URLSearchParams decodes %XX and
// '+'). No backslash escapes in EM_JS bodies: emscripten 3.1.6 copies them into its metadata
// JSON unescaped, and the link fails; nor destructuring, which its JS optimiser mangles.
EM_JS(char*, web_query_lines, (), {
  const tab = String.fromCharCode(9), nl = String.fromCharCode(10);
  const clean = (x) => x.split(tab).join(" ").split(nl).join(" ");
  let text = "";
  for (const kv of new URLSearchParams(window.location.search)) text += clean(kv[0]) + tab + clean(kv[1]) + nl;
  return allocateUTF8(text);
});

// The message line wraps (index.html's CSS) and holds the whole text as its tooltip too.
EM_JS(void, web_show_message, (const char* text), {
  const el = document.getElementById("message");
  el.textContent = UTF8ToString(text);
  el.title = el.textContent;
  el.hidden = false;
});

EM_JS(void, web_hide_message, (), {
  const el = document.getElementById("message");
  el.textContent = "";
  el.title = "";
  el.hidden = true;
});

EM_JS(void, web_set_status, (const char* label, int step, int steps, const char* course), {
  const el = document.getElementById("status");
  const dot = " " + String.fromCharCode(183) + " ";
  const c = UTF8ToString(course);
  el.textContent = UTF8ToString(label) + dot + "step " + step + " of " + steps + (c ? dot + "course: " + c : "");
  el.dataset.step = step;
  el.dataset.label = UTF8ToString(label);
  el.dataset.course = c;
});

EM_JS(void, web_replace_query, (const char* query), {
  const q = "?" + UTF8ToString(query);
  if (window.location.search !== q) history.replaceState(null, "", q);
});

// An exported file (the app wrote it to the in-memory file system) becomes a download.
EM_JS(void, web_download, (const char* path), {
  const p = UTF8ToString(path);
  try {
    const a = document.createElement("a");
    a.href = URL.createObjectURL(new Blob([FS.readFile(p)]));
    a.download = p.split("/").pop();
    document.body.appendChild(a);
    a.click();
    a.remove();
  } catch (e) {
    console.error("flashstep: error: cannot download " + p + ": " + e);
  }
});

// The files under /upload are kept in the browser's IndexedDB (index.html mounts emscripten's
// IDBFS there and reads it back before main runs): each change is stored, unless the browser
// refused, in which case the files are the visit's only and flashstepUploads.why says why.
EM_JS(void, web_store_uploads, (), { if (window.flashstepStoreUploads) window.flashstepStoreUploads(); });
EM_JS(int, web_uploads_kept, (), { return window.flashstepUploads && window.flashstepUploads.kept ? 1 : 0; });
EM_JS(int, web_uploads_read, (), { return window.flashstepUploads && window.flashstepUploads.read ? 1 : 0; });
EM_JS(void, web_app_started, (), { window.flashstepAppStarted = true; });
EM_JS(char*, web_uploads_why, (), { return allocateUTF8((window.flashstepUploads && window.flashstepUploads.why) || "storage is off"); });

EM_JS(void, web_first_frame, (), {
  window.flashstepFirstFrameMs = performance.now();
  document.getElementById("status").dataset.firstFrameMs = window.flashstepFirstFrameMs.toFixed(0);
  if (window.flashstepOnFirstFrame) window.flashstepOnFirstFrame();
});

// Milliseconds since the user last touched the page (keys, pointer, wheel, resize), as the
// listeners in index.html record it.
EM_JS(double, web_idle_ms, (), { return performance.now() - (window.flashstepLastInput || 0); });

EM_JS(int, web_canvas_width, (), { return window.innerWidth; });
EM_JS(int, web_canvas_height, (), { return window.innerHeight - document.getElementById("bar").offsetHeight; });
// Device pixels per CSS pixel: above 1 on HiDPI screens and when the browser zooms in.
EM_JS(double, web_pixel_ratio, (), { return window.devicePixelRatio || 1; });
// The canvas's size on the page, in CSS pixels; its backing store (canvas.width, .height, which
// GLFW's window size sets) holds the device pixels. GLFW clears the inline size whenever it
// resizes the canvas, so this is set after each resize.
EM_JS(void, web_set_canvas_css_size, (int w, int h), {
  const c = Module["canvas"];
  if (c.style.width !== w + "px") c.style.width = w + "px";
  if (c.style.height !== h + "px") c.style.height = h + "px";
});

// =============================================================================================
// [SECTION] The mouse wheel
// =============================================================================================
// emscripten 3.1.6's GLFW hands the scroll callback the DOM event's deltaX/deltaY unchanged:
// pixels, lines or pages (WheelEvent.deltaMode), positive = down. Native GLFW gives about 1 per
// notch, positive = up, and ImGui's backend (1.86) takes it as it comes: on the page one notch
// down scrolled about 100 notches up. A listener on the window, which sees the event before
// GLFW's listener on the canvas, records the factor from this event's deltas to notches; the
// app's scroll callback (set after ImGui's) applies it.
//   pixels: 100 a notch (Chromium's and Firefox's mouse wheel; a touchpad sends fractions)
//   lines:  3 a notch (Firefox's line mode)
//   pages:  1.5 notches a page (ImGui moves at most 0.67 of a panel's height a notch)
// The legacy 'mousewheel' event (wheelDeltaY, +120 a notch up) is already the right way round.
EM_JS(void, web_watch_wheel, (), {
  window.flashstepWheelToNotches = -0.01;
  window.addEventListener("wheel", function (ev) {
    window.flashstepWheelToNotches = ev.deltaMode === 1 ? -1 / 3 : ev.deltaMode === 2 ? -1.5 : -1 / 100;
  }, { capture: true, passive: true });
  window.addEventListener("mousewheel", function () { window.flashstepWheelToNotches = 1 / 120; },
                          { capture: true, passive: true });
});

EM_JS(double, web_wheel_to_notches, (), { return window.flashstepWheelToNotches; });

namespace flashstep::web {

namespace {

void on_scroll(GLFWwindow* window, double dx, double dy) {
  const double k = web_wheel_to_notches();
  ImGui_ImplGlfw_ScrollCallback(window, dx * k, dy * k);
}

struct WebApp {
  GLFWwindow* window = nullptr;
  std::unique_ptr<gui::AppState> s;
  gui::GpuState gpu;
  std::string base_preset;  // the preset the link names (the app forgets it once Apply runs)
  double last_time = 0;
  uint64_t cursor_seen = 0, run_seen = 0, course_seen = 0;
  gui::View view_seen = gui::View::tiles;
  uint64_t display_seen = 0;  // the DisplayState::version last written to the link
  std::string export_seen;  // the last export message acted on
  long frames = 0;
  int bench_frames = 0;
  bool dump = false;
  bool link_message = false;  // the message line says why the link was refused
  KeptFiles kept{"/upload"};  // the files opened from the computer, kept in the browser
  int files_note_kept = -1, files_note_count = -1;  // what the Display menu's note last said
  bool files_forgotten = false;  // the note says so until the next file is kept
  bool kept_opened = false;      // the kept files were opened in their views
};

WebApp* g_app = nullptr;  // for the exported functions the page calls

// =============================================================================================
// [SECTION] State from the link, state to the link and the status line
// =============================================================================================

Query read_query() {
  char* lines = web_query_lines();
  Query q;
  std::string text(lines);
  std::free(lines);
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = text.find('\n', at), tab = text.find('\t', at);
    q.emplace_back(text.substr(at, tab - at), text.substr(tab + 1, end - tab - 1));
    at = end + 1;
  }
  return q;
}

// The link's state, or the default problem with the reason shown in the page.
void open_from_link(WebApp& app) {
  UrlRequest r;
  try {
    r = parse_query(read_query());
    app.s = std::make_unique<gui::AppState>();
    apply_request(*app.s, r);
    app.base_preset = r.options.preset;
    app.dump = r.dump;
    app.bench_frames = r.bench_frames;
    return;
  } catch (const InputError& e) {
    const std::string line = std::string("flashstep: error: ") + e.what() + " (showing the default problem)";
    std::fprintf(stderr, "%s\n", line.c_str());
    web_show_message(line.c_str());
    app.link_message = true;
  }
  app.s = std::make_unique<gui::AppState>();
  gui::prepare_state(*app.s, gui::GuiOptions{});  // the shipped default: an error here is a bug
  app.base_preset = gui::GuiOptions{}.preset;
}

// The status line holds the current step as `flashstep run --trace` labels it ("Alg1 L11 i=0
// j=1"); the link follows the state.
void publish(WebApp& app) {
  gui::AppState& s = *app.s;
  const uint64_t course = s.course.active ? s.course.version + 1 : 0;
  const bool moved = s.cursor_version != app.cursor_seen || s.run_version != app.run_seen || s.view != app.view_seen ||
                     course != app.course_seen;
  // The Display menu's settings are in the link too (theme=light): a change there rewrites it.
  if (!moved && s.display.version == app.display_seen) return;
  app.display_seen = s.display.version;
  // A refused link's message speaks of the link the page opened with; once the user moves on
  // (a step, a preset, Apply, a view, a course page), the address bar holds another link and the
  // message ("showing the default problem") would no longer be true.
  if (moved && app.link_message && app.frames > 0) {
    web_hide_message();
    app.link_message = false;
  }
  app.cursor_seen = s.cursor_version;
  app.run_seen = s.run_version;
  app.view_seen = s.view;
  app.course_seen = course;
  if (!s.preset_name.empty()) app.base_preset = s.preset_name;  // a preset loaded from the menu
  std::string label = "start";
  if (const Step* cur = s.cursor->current()) {
    label = line_label(cur->line);
    if (cur->i >= 0) label += " i=" + std::to_string(cur->i);
    if (cur->j >= 0) label += " j=" + std::to_string(cur->j);
  }
  std::string where;  // "online-softmax, page 2 of 4" in the course
  if (s.course.active && s.course.chapter)
    where = s.course.chapter->id + ", page " + std::to_string(s.course.page + 1) + " of " +
            std::to_string(s.course.chapter->pages.size());
  web_set_status(label.c_str(), int(s.index()), int(s.steps()), where.c_str());
  web_replace_query(query_for_state(s, app.base_preset).c_str());
}

// The Export tab writes into the page's memory: each file it wrote is handed to the browser as a
// download ("wrote a.json", "wrote a.png", "wrote O.npy and lse.npy").
void offer_exports(WebApp& app) {
  gui::AppState& s = *app.s;
  for (std::string* msg : {&s.export_message, &s.compare.message}) {
    if (msg->rfind("wrote ", 0) != 0) continue;
    std::string rest = msg->substr(6);
    for (size_t and_at; (and_at = rest.find(" and ")) != std::string::npos; rest = rest.substr(and_at + 5))
      web_download(rest.substr(0, and_at).c_str());
    web_download(rest.c_str());
    *msg = "downloaded " + msg->substr(6) + " (the browser saves it in its downloads folder)";
  }
}

// =============================================================================================
// [SECTION] The frame loop
// =============================================================================================

// The pixel ratio the page draws at: the browser's devicePixelRatio, within what the fonts and
// the canvas can take.
float pixel_ratio() { return float(std::clamp(web_pixel_ratio(), 0.5, 4.0)); }

// HiDPI: the canvas fills the page in CSS pixels and its backing store has devicePixelRatio times
// as many pixels, so the browser shows it 1:1 instead of scaling it up (soft text). emscripten
// 3.1.6's GLFW knows no pixel ratio: its window size is the backing store's, in device pixels,
// as are its pointer positions; frame() hands ImGui the CSS pixels (AppState's
// display.pixel_ratio), and the fonts are rasterised at the ratio (app/gui/display.cpp). A new
// ratio (browser zoom, another screen) rebuilds the fonts.
void resize_to_page(WebApp& app) {
  const int w = std::max(320, web_canvas_width()), h = std::max(240, web_canvas_height());
  const float ratio = pixel_ratio();
  const int bw = int(std::lround(w * double(ratio))), bh = int(std::lround(h * double(ratio)));
  int now_w = 0, now_h = 0;
  glfwGetWindowSize(app.window, &now_w, &now_h);
  if (bw != now_w || bh != now_h) glfwSetWindowSize(app.window, bw, bh);
  web_set_canvas_css_size(w, h);
  gui::DisplayState& d = app.s->display;
  if (ratio != d.pixel_ratio) {
    d.pixel_ratio = ratio;
    ++d.version;  // frame() re-applies the display settings: the fonts at the new ratio
  }
}

// The Display menu's line on the opened files: where they are kept (and how many), or that they
// are the visit's only and why. Rewritten only when that changes: an idle frame allocates nothing.
void note_kept_files(WebApp& app) {
  // Before IndexedDB has answered, the files are neither kept nor refused yet (-1).
  const int kept = web_uploads_read() ? web_uploads_kept() : -1, count = app.kept.count();
  if (kept == app.files_note_kept && count == app.files_note_count) return;
  if (count != app.files_note_count && app.files_note_count >= 0) app.files_forgotten = false;
  app.files_note_kept = kept;
  app.files_note_count = count;
  std::string& note = app.s->local_files_note;
  if (kept < 0) {
    note = "Files opened from this computer: reading what this browser keeps";
  } else if (!kept) {
    char* why = web_uploads_why();
    note = std::string("Files opened from this computer are kept for this visit only: this browser keeps no files for the page (") +
           why + ")";
    std::free(why);
  } else if (app.files_forgotten) {
    note = "Opened files forgotten: removed from this browser and from the views";
  } else {
    note = count ? "Files opened from this computer: " + std::to_string(count) + " kept in this browser for the next visit"
                 : std::string("Files opened from this computer are kept in this browser for the next visit");
  }
}

void tick(void* arg) {
  WebApp& app = *static_cast<WebApp*>(arg);
  // Idle (not playing, no input for a second): skip the frame, as the desktop sleeps in
  // glfwWaitEventsTimeout, so a still page costs no CPU. The canvas keeps the last frame.
  if (app.frames > 5 && !app.s->playing && web_idle_ms() > 1000.0) {
    app.last_time = 0;
    return;
  }
  const double now = emscripten_get_now() / 1000.0;
  const double dt = app.last_time > 0 ? now - app.last_time : 0.0;
  app.last_time = now;
  resize_to_page(app);
  before_frame();  // a paste or cut event: ImGui's Ctrl+V or Ctrl+X (web/clipboard.h)
  try {
    gui::frame(app.window, *app.s, app.gpu, dt, nullptr);
  } catch (const InputError& e) {  // the Export tab's PNG: its message says why
    app.s->export_message = std::string("error: ") + e.what();
  }
  after_frame();
  keep_stored_settings(&app.s->display.message);
  note_kept_files(app);
  offer_exports(app);
  publish(app);
  if (++app.frames == 1) {
    web_first_frame();
    if (app.dump) std::printf("flashstep-state %s\n", gui::state_to_json(*app.s).dump().c_str());
    if (app.bench_frames > 0) gui::run_frame_bench(app.window, *app.s, app.gpu, app.bench_frames);
  }
}

}  // namespace
}  // namespace flashstep::web

// The page's console: flashstepDumpState() (index.html) prints what `flashstep gui --dump-state`
// writes.
extern "C" EMSCRIPTEN_KEEPALIVE const char* flashstep_state_json() {
  static std::string text;
  text = flashstep::web::g_app ? flashstep::gui::state_to_json(*flashstep::web::g_app->s).dump(1) : "{}";
  return text.c_str();
}

// The page's "Upload snapshot folder": the files are in the page's memory under `dir`; the
// compare view loads them as its Load button would, and opens.
extern "C" EMSCRIPTEN_KEEPALIVE void flashstep_load_snapshots(const char* dir) {
  using namespace flashstep;
  if (!web::g_app) return;
  gui::AppState& s = *web::g_app->s;
  std::snprintf(s.snapshots.dir, sizeof s.snapshots.dir, "%s", dir);
  s.load_snapshots();  // a bad folder: the view shows its error
  s.view = gui::View::compare;
  s.view_changed = true;
}

// The page's "Open a file..." buttons (Bench view, compare view, the Problem tab's saved trace
// and .npy inputs, the memory panel's DRAM measurement): the app's pick_local_file
// opens the browser's file dialog with index.html's #pick input (a click the user just made
// allows it); the chosen file's bytes go to /upload/WHAT/NAME in the page's memory and then to
// flashstep_load_local_file.
EM_JS(void, web_open_picker, (const char* what, const char* accept), {
  const input = document.getElementById("pick");
  input.dataset.for = UTF8ToString(what);
  input.accept = UTF8ToString(accept);
  input.value = "";  // the same file chosen again is still a change
  input.click();
});

namespace flashstep::web {
namespace {

constexpr gui::LocalFile kLocalFiles[] = {gui::LocalFile::bench,   gui::LocalFile::compare_o, gui::LocalFile::compare_lse,
                                           gui::LocalFile::trace,   gui::LocalFile::input_q,   gui::LocalFile::input_k,
                                           gui::LocalFile::input_v, gui::LocalFile::dram};

void open_picker(gui::LocalFile what) {
  const bool json = what == gui::LocalFile::bench || what == gui::LocalFile::trace || what == gui::LocalFile::dram;
  web_open_picker(local_file_name(what), json ? ".json,application/json" : ".npy");
}

}  // namespace
}  // namespace flashstep::web

// The picked file is in the page's memory at `path`: the app loads it as its Load button would.
extern "C" EMSCRIPTEN_KEEPALIVE void flashstep_load_local_file(const char* what, const char* path) {
  using namespace flashstep;
  if (!web::g_app) return;
  for (gui::LocalFile k : web::kLocalFiles)
    if (std::string(what) == web::local_file_name(k)) {
      web::g_app->s->load_local_file(k, path);
      web::g_app->kept.note_loaded(*web::g_app->s, k, path);
      return web_store_uploads();
    }
}

// The files kept from earlier visits (index.html read them back from IndexedDB): into their
// views, once.
extern "C" EMSCRIPTEN_KEEPALIVE void flashstep_open_kept_files() {
  using namespace flashstep;
  web::WebApp* app = web::g_app;
  if (!app || app->kept_opened) return;
  app->kept_opened = true;
  bool changed = false;
  for (const std::string& line : app->kept.restore(*app->s, &changed)) std::printf("flashstep: %s\n", line.c_str());
  if (changed) web_store_uploads();
}

// The page's wheel check (check_page.py via headless.py): the vertical scroll of the panel the
// wheel moves, the one under the pointer (or the first parent that can scroll, as ImGui picks
// it); -1 when the pointer is over no panel.
extern "C" EMSCRIPTEN_KEEPALIVE double flashstep_wheel_scroll_y() {
  const ImGuiWindow* w = ImGui::GetCurrentContext() ? GImGui->HoveredWindow : nullptr;
  while (w && (w->Flags & ImGuiWindowFlags_ChildWindow) && w->ScrollMax.y == 0.0f && w->ParentWindow)
    w = w->ParentWindow;
  return w ? w->Scroll.y : -1.0;
}

// =============================================================================================
// [SECTION] Set-up
// =============================================================================================

int main() {
  using namespace flashstep;
  // emscripten starts with umask 0777, so files the app writes (exports, made 0666 & ~umask by
  // core/output_files.cpp) would be unreadable to the download; 022 is the usual default.
  ::umask(022);
  auto* app = new web::WebApp;  // lives as long as the page
  web::g_app = app;
  web::restore_stored_settings();  // before the display settings and the course read the file
  web::open_from_link(*app);
  app->s->pick_local_file = web::open_picker;
  // The files kept from earlier visits into their views: now if index.html has read them back
  // from IndexedDB, else when it has (flashstep_open_kept_files).
  web_app_started();
  if (web_uploads_read()) flashstep_open_kept_files();
  app->s->forget_local_files = [app] {
    app->kept.forget(*app->s);
    app->files_forgotten = true;
    app->files_note_count = -2;  // the note is rewritten in this frame
    web_store_uploads();
  };

  if (!glfwInit()) {
    web_show_message("flashstep: error: this browser gave no window (GLFW did not start)");
    return 1;
  }
  glfwWindowHint(GLFW_CLIENT_API, GLFW_OPENGL_ES_API);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 0);
  const float ratio = web::pixel_ratio();
  app->window = glfwCreateWindow(int(std::lround(std::max(320, web_canvas_width()) * double(ratio))),
                                 int(std::lround(std::max(240, web_canvas_height()) * double(ratio))),
                                 "flashstep", nullptr, nullptr);
  if (!app->window) {
    web_show_message("flashstep: error: this browser has no WebGL2, which the app draws with");
    return 1;
  }
  glfwMakeContextCurrent(app->window);
  app->s->display.pixel_ratio = ratio;  // the first frame builds the fonts at it
  web_set_canvas_css_size(std::max(320, web_canvas_width()), std::max(240, web_canvas_height()));

  ImGui::CreateContext();
  ImGui::GetIO().IniFilename = nullptr;  // the layout is computed
  gui::InstallKeyLatch(app->window);  // before the backend, which chains to it (app/gui/panels.h)
  ImGui_ImplGlfw_InitForOpenGL(app->window, true);
  web::install_clipboard();  // after GLFW's backend, whose clipboard is empty in the browser
  web_watch_wheel();
  glfwSetScrollCallback(app->window, web::on_scroll);  // after ImGui's: replaces it, then calls it
  ImGui_ImplOpenGL3_Init("#version 300 es");
  ImGui_ImplOpenGL3_CreateDeviceObjects();  // the first frame applies the display settings and fonts
  std::string shader_error;
  if (!app->gpu.shader.init(gui::shader_dir(), &shader_error)) {
    const std::string line = "flashstep: error: the heatmap shaders did not compile: " + shader_error;
    web_show_message(line.c_str());
  }
  emscripten_set_main_loop_arg(web::tick, app, 0, false);
  return 0;
}
