// Where a panel's title too long for its bar is cut (app/gui/title_fit.h, FitTitle's rule): at a
// word where one fits, else between characters, never inside a UTF-8 character.
#include "app/gui/title_fit.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <string>

using flashstep::gui::TitleKeep;

namespace {

// 10 px a byte: a measure under which a cut between bytes looks as good as one between characters.
float ten_px_a_byte(const char* b, const char* e) { return 10.0f * float(e - b); }

size_t keep(const std::string& title, float room) {
  return TitleKeep(title.c_str(), title.size(), room, 30.0f, ten_px_a_byte);
}

bool starts_a_character(const std::string& s, size_t at) {
  return at >= s.size() || (static_cast<unsigned char>(s[at]) & 0xC0) != 0x80;
}

}  // namespace

TEST_CASE("a title is cut at the last word that fits with \"...\", less a ',' or ':' before the cut", "[gui][title]") {
  CHECK(keep("FlashAttention, tile by tile", 30 + 200) == std::strlen("FlashAttention, tile"));
  CHECK(keep("FlashAttention, tile by tile", 30 + 150) == std::strlen("FlashAttention"));
  CHECK(keep("Memory: HBM and SRAM", 30 + 100) == std::strlen("Memory"));
}

TEST_CASE("a first word too long for the bar is cut between UTF-8 characters, never inside one", "[gui][title]") {
  // "αβγδε" (two bytes each) then ASCII: with room for three bytes and "...", one cut between
  // bytes would keep "α" and half of "β".
  const std::string greek = "\xCE\xB1\xCE\xB2\xCE\xB3\xCE\xB4\xCE\xB5 softmax";
  CHECK(keep(greek, 30 + 30) == 2);
  // The rest of the room, every width from one byte to the whole word.
  for (int bytes = 1; bytes <= 10; ++bytes) {
    CAPTURE(bytes);
    const size_t k = keep(greek, 30.0f + 10.0f * float(bytes));
    CHECK(k <= size_t(bytes));
    CHECK(k % 2 == 0);  // whole characters only
    CHECK(starts_a_character(greek, k));
  }
  // Three- and four-byte characters ("→", "𝔼") before a letter.
  const std::string arrows = "\xE2\x86\x92\xF0\x9D\x94\xBC" "a\xE2\x86\x92longword more";
  for (int bytes = 1; bytes <= 12; ++bytes) {
    CAPTURE(bytes);
    const size_t k = keep(arrows, 30.0f + 10.0f * float(bytes));
    CHECK(starts_a_character(arrows, k));
  }
  CHECK(keep(arrows, 30 + 60) == 3);  // "→", not "→" and two bytes of "𝔼"
  CHECK(keep(arrows, 30 + 70) == 7);  // "→𝔼"
}
