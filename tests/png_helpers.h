// Reading a PNG back and telling pictures apart, for the tests of the app's screenshots and of
// `flashstep plot` (stb_image decodes; the test program links libstb).
#pragma once
#include <catch2/catch.hpp>
#include <stb_image.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace fstest {

struct Image {
  int w = 0, h = 0;
  std::vector<unsigned char> rgb;
};

inline Image load_png(const std::string& path) {
  Image im;
  int n = 0;
  unsigned char* px = stbi_load(path.c_str(), &im.w, &im.h, &n, 3);
  REQUIRE(px != nullptr);
  im.rgb.assign(px, px + size_t(im.w) * size_t(im.h) * 3);
  stbi_image_free(px);
  return im;
}

// Distinct colours among every 7th pixel: a blank window has one or two.
inline size_t distinct_colours(const Image& im) {
  std::set<uint32_t> colours;
  for (size_t p = 0; p < im.rgb.size(); p += 3 * 7)
    colours.insert(uint32_t(im.rgb[p]) << 16 | uint32_t(im.rgb[p + 1]) << 8 | im.rgb[p + 2]);
  return colours.size();
}

inline size_t pixels_differing(const Image& x, const Image& y) {
  REQUIRE(x.rgb.size() == y.rgb.size());
  size_t n = 0;
  for (size_t p = 0; p < x.rgb.size(); p += 3)
    n += x.rgb[p] != y.rgb[p] || x.rgb[p + 1] != y.rgb[p + 1] || x.rgb[p + 2] != y.rgb[p + 2];
  return n;
}

}  // namespace fstest
