// The app's keys as pressed between two frames. ImGui 1.86 keeps only whether a key is down
// (io.KeysDown, written by its GLFW backend's callback) and compares that once a frame, so a press
// and its release that both arrive between two frames (a quick tap, a headless browser's key
// event, a slow frame under load) are never seen. The window's key callback records each press
// here as it arrives; HandleKeys (controls_panel.cpp) takes the counts once a frame.
// Plain C++ (no GLFW or ImGui): the codes below are GLFW's, checked against glfw3.h where the
// callback is installed.
#pragma once
#include <array>
#include <cstddef>

namespace flashstep::gui {

enum class AppKey { right, left, space, home, end, f2, count };

// A frame's worth of presses. `repeats` are the system's key repeats of a held key (GLFW_REPEAT;
// emscripten's GLFW sends them for a repeated keydown as well).
struct KeyPresses {
  std::array<int, size_t(AppKey::count)> presses{}, repeats{};
  // How many times the key acts this frame: its presses, and its repeats where a held key
  // repeats (Right and Left step on; Space, Home, End and F2 act once a press).
  int times(AppKey k, bool with_repeats) const {
    return presses[size_t(k)] + (with_repeats ? repeats[size_t(k)] : 0);
  }
};

class KeyLatch {
 public:
  // GLFW's codes (glfw3.h) for the keys the app uses, and its actions.
  static constexpr int kGlfwRight = 262, kGlfwLeft = 263, kGlfwSpace = 32, kGlfwHome = 268, kGlfwEnd = 269,
                       kGlfwF2 = 291;
  static constexpr int kGlfwRelease = 0, kGlfwPress = 1, kGlfwRepeat = 2;

  // From the window's key callback: a press or a repeat of one of the app's keys is counted; a
  // release changes nothing (the press before it stays counted), other keys are not the app's.
  void on_key(int glfw_key, int action) {
    const int k = app_key(glfw_key);
    if (k < 0) return;
    if (action == kGlfwPress) ++latched_.presses[size_t(k)];
    else if (action == kGlfwRepeat) ++latched_.repeats[size_t(k)];
  }

  // The presses since the last take; the latch starts empty again.
  KeyPresses take() {
    const KeyPresses got = latched_;
    latched_ = KeyPresses{};
    return got;
  }

 private:
  static int app_key(int glfw_key) {
    switch (glfw_key) {
      case kGlfwRight: return int(AppKey::right);
      case kGlfwLeft: return int(AppKey::left);
      case kGlfwSpace: return int(AppKey::space);
      case kGlfwHome: return int(AppKey::home);
      case kGlfwEnd: return int(AppKey::end);
      case kGlfwF2: return int(AppKey::f2);
      default: return -1;
    }
  }

  KeyPresses latched_;
};

}  // namespace flashstep::gui
