// The app's keys between frames (app/gui/key_latch.h): every press that arrives between two
// frames acts in the next one, a tap whose release came before the frame included, which
// ImGui 1.86's key-down state alone loses.
#include "app/gui/key_latch.h"

#include <catch2/catch.hpp>

#include <utility>

using flashstep::gui::AppKey;
using flashstep::gui::KeyLatch;
using flashstep::gui::KeyPresses;

namespace {

constexpr int kPress = KeyLatch::kGlfwPress, kRelease = KeyLatch::kGlfwRelease, kRepeat = KeyLatch::kGlfwRepeat;

void tap(KeyLatch& keys, int glfw_key) {
  keys.on_key(glfw_key, kPress);
  keys.on_key(glfw_key, kRelease);
}

int total(const KeyPresses& k) {
  int n = 0;
  for (int i = 0; i < int(AppKey::count); ++i) n += k.times(AppKey(i), true);
  return n;
}

}  // namespace

TEST_CASE("a tap whose press and release both come between two frames acts once in the next, for each of the app's keys",
          "[gui][keys]") {
  const auto [glfw_key, key] = GENERATE(std::pair{KeyLatch::kGlfwRight, AppKey::right}, std::pair{KeyLatch::kGlfwLeft, AppKey::left},
                                        std::pair{KeyLatch::kGlfwSpace, AppKey::space}, std::pair{KeyLatch::kGlfwHome, AppKey::home},
                                        std::pair{KeyLatch::kGlfwEnd, AppKey::end}, std::pair{KeyLatch::kGlfwF2, AppKey::f2});
  CAPTURE(glfw_key);
  KeyLatch keys;
  tap(keys, glfw_key);
  const KeyPresses frame = keys.take();
  CHECK(frame.times(key, false) == 1);
  CHECK(frame.times(key, true) == 1);
  CHECK(total(frame) == 1);  // as its own key
}

TEST_CASE("several presses between two frames are each counted", "[gui][keys]") {
  KeyLatch keys;
  tap(keys, KeyLatch::kGlfwRight);
  tap(keys, KeyLatch::kGlfwRight);
  keys.on_key(KeyLatch::kGlfwLeft, kPress);  // still held at the frame
  tap(keys, KeyLatch::kGlfwRight);
  const KeyPresses frame = keys.take();
  CHECK(frame.times(AppKey::right, true) == 3);
  CHECK(frame.times(AppKey::left, true) == 1);
  CHECK(total(frame) == 4);
}

TEST_CASE("a held key's repeats count where the key repeats, and a press counts in one frame only", "[gui][keys]") {
  KeyLatch keys;
  keys.on_key(KeyLatch::kGlfwRight, kPress);
  keys.on_key(KeyLatch::kGlfwSpace, kPress);
  KeyPresses frame = keys.take();
  CHECK(frame.times(AppKey::right, true) == 1);
  CHECK(frame.times(AppKey::space, false) == 1);
  // Still held: nothing new until the system repeats the key.
  CHECK(total(keys.take()) == 0);
  keys.on_key(KeyLatch::kGlfwRight, kRepeat);
  keys.on_key(KeyLatch::kGlfwRight, kRepeat);
  keys.on_key(KeyLatch::kGlfwSpace, kRepeat);
  frame = keys.take();
  CHECK(frame.times(AppKey::right, true) == 2);   // Right steps on while held
  CHECK(frame.times(AppKey::right, false) == 0);  // no new press
  CHECK(frame.times(AppKey::space, false) == 0);  // Space acts once a press
  CHECK(frame.times(AppKey::space, true) == 1);
  keys.on_key(KeyLatch::kGlfwRight, kRelease);
  keys.on_key(KeyLatch::kGlfwSpace, kRelease);
  CHECK(total(keys.take()) == 0);  // a release is no press
}

TEST_CASE("take empties the latch", "[gui][keys]") {
  KeyLatch keys;
  tap(keys, KeyLatch::kGlfwEnd);
  tap(keys, KeyLatch::kGlfwF2);
  CHECK(total(keys.take()) == 2);
  CHECK(total(keys.take()) == 0);
  tap(keys, KeyLatch::kGlfwHome);
  const KeyPresses frame = keys.take();
  CHECK(frame.times(AppKey::home, false) == 1);
  CHECK(frame.times(AppKey::end, false) == 0);
  CHECK(frame.times(AppKey::f2, false) == 0);
}

TEST_CASE("keys the app does not use, and unknown actions, are not counted", "[gui][keys]") {
  KeyLatch keys;
  // GLFW's A, Escape, Enter, Up, F1, F3, GLFW_KEY_UNKNOWN and the last key code (Menu).
  for (int other : {65, 256, 257, 265, 290, 292, -1, 348}) {
    keys.on_key(other, kPress);
    keys.on_key(other, kRepeat);
    keys.on_key(other, kRelease);
  }
  keys.on_key(KeyLatch::kGlfwRight, 3);  // no GLFW action
  CHECK(total(keys.take()) == 0);
}
