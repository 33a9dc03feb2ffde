// A picture made smaller by averaging: the Export tab's PNG on a HiDPI screen (the web page at
// devicePixelRatio 2 draws twice the layout's pixels each way) is written at the layout's size,
// each pixel the mean of the screen pixels it covers, so the text keeps its anti-aliased shape
// instead of losing every other column. Plain C++, no OpenGL.
#pragma once
#include <vector>

namespace flashstep::gui {

// `in` holds w x h pixels of `channels` bytes each, row after row. Returns out_w x out_h pixels
// (1 <= out_w <= w, 1 <= out_h <= h): each output pixel covers w / out_w by h / out_h input
// pixels, a partly covered one counted by the share of it inside (a box filter; ratios such as
// 1.5 included). The same size returns `in` as it is. Throws InputError for sizes out of range.
std::vector<unsigned char> shrink_pixels(const std::vector<unsigned char>& in, int w, int h, int channels, int out_w,
                                         int out_h);

}  // namespace flashstep::gui
