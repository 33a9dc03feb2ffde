// Figures to a PNG without a window, a display or OpenGL: a headless ImGui context builds its
// font atlas on the CPU, DrawFigure fills its draw lists, and a small triangle rasteriser turns
// ImDrawData (coloured, textured triangles with clip rectangles) into RGB pixels.
#pragma once
#include "app/plot/figures.h"

#include <string>
#include <vector>

namespace flashstep::plot {

struct Image {
  int w = 0, h = 0;
  std::vector<unsigned char> rgb;  // w * h * 3, top row first
};

// The figures stacked top to bottom in one w x h image, light style, DejaVu Sans when installed.
Image render_figures(const std::vector<Figure>& figures, int w, int h);
// The image as PNG bytes (stb_image_write); throws InputError if it cannot be encoded.
std::string encode_png(const Image& im);

}  // namespace flashstep::plot
