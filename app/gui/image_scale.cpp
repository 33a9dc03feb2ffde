#include "app/gui/image_scale.h"

#include "core/input_error.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace flashstep::gui {

namespace {

// For each of `out` cells along an axis of `n` pixels: the input pixels it covers and how much of
// each (the weights of a cell add up to 1).
struct Tap {
  int at;
  float weight;
};
std::vector<std::vector<Tap>> box_taps(int n, int out) {
  const double step = double(n) / double(out);
  std::vector<std::vector<Tap>> taps(static_cast<size_t>(out));
  for (int o = 0; o < out; ++o) {
    const double lo = o * step, hi = (o + 1) * step;
    for (int i = int(std::floor(lo)); i < n && i < hi; ++i) {
      const double cover = std::min(hi, double(i + 1)) - std::max(lo, double(i));
      if (cover > 1e-9) taps[size_t(o)].push_back({i, float(cover / step)});
    }
  }
  return taps;
}

}  // namespace

std::vector<unsigned char> shrink_pixels(const std::vector<unsigned char>& in, int w, int h, int channels, int out_w,
                                         int out_h) {
  if (w < 1 || h < 1 || channels < 1 || out_w < 1 || out_h < 1 || out_w > w || out_h > h ||
      in.size() != size_t(w) * size_t(h) * size_t(channels))
    throw InputError("cannot shrink a " + std::to_string(w) + "x" + std::to_string(h) + " picture to " +
                     std::to_string(out_w) + "x" + std::to_string(out_h));
  if (out_w == w && out_h == h) return in;
  const auto across = box_taps(w, out_w), down = box_taps(h, out_h);
  // Rows first (each input row to out_w pixels), then columns, in float.
  std::vector<float> rows(size_t(h) * size_t(out_w) * size_t(channels), 0.0f);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < out_w; ++x)
      for (const Tap& t : across[size_t(x)])
        for (int c = 0; c < channels; ++c)
          rows[(size_t(y) * out_w + x) * channels + c] += t.weight * in[(size_t(y) * w + t.at) * channels + c];
  std::vector<unsigned char> out(size_t(out_w) * size_t(out_h) * size_t(channels));
  for (int y = 0; y < out_h; ++y)
    for (int x = 0; x < out_w; ++x)
      for (int c = 0; c < channels; ++c) {
        float v = 0;
        for (const Tap& t : down[size_t(y)]) v += t.weight * rows[(size_t(t.at) * out_w + x) * channels + c];
        out[(size_t(y) * out_w + x) * channels + c] = (unsigned char)std::clamp(std::lround(v), 0L, 255L);
      }
  return out;
}

}  // namespace flashstep::gui
