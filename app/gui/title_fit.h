// Where a panel's title too long for its bar is cut (FitTitle in widgets.cpp), apart from ImGui so
// that the rule can be tested without a window: `width(begin, end)` measures a piece of text.
#pragma once
#include <cstddef>

namespace flashstep::gui {

// The end of the UTF-8 character that starts at `q` (at most `end`): a cut there keeps it whole.
inline const char* Utf8Next(const char* q, const char* end) {
  ++q;
  while (q < end && (static_cast<unsigned char>(*q) & 0xC0) == 0x80) ++q;  // continuation bytes
  return q;
}

// How many bytes of `title` (`len` of them) to keep before "..." (`dots` pixels wide) so that
// both fit `room` pixels: the longest prefix that ends before a space, less a ',' or ':' before
// it; a first word too long on its own is cut between characters, never inside a UTF-8
// character (its bytes would be drawn as a broken glyph). 0 where not even one character fits.
template <class Width>
size_t TitleKeep(const char* title, size_t len, float room, float dots, Width width) {
  const char* end = title + len;
  size_t keep = 0;
  for (size_t k = 1; k < len; ++k)
    if (title[k] == ' ' && width(title, title + k) + dots <= room) keep = k;
  if (keep == 0)
    for (const char* q = Utf8Next(title, end); q < end && width(title, q) + dots <= room; q = Utf8Next(q, end))
      keep = size_t(q - title);
  while (keep > 0 && (title[keep - 1] == ',' || title[keep - 1] == ':' || title[keep - 1] == ' ')) --keep;
  return keep;
}

}  // namespace flashstep::gui
