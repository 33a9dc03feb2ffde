// Draws a Figure (app/plot/figures.h) into an ImGui draw list: title, axes with ticks and
// labels, grid, bars and lines, a legend, notes, and the point under the mouse. The app's Bench
// view draws into its window; `flashstep plot` into a headless ImGui context that
// app/plot/raster.h rasterises on the CPU. Needs only ImGui's core (no window, no OpenGL), and
// allocates nothing, so an idle frame of the app stays allocation-free.
#pragma once
#include "app/plot/figures.h"

#include <imgui.h>

#include <cstddef>

namespace flashstep::plot {

struct FigureStyle {
  ImU32 background, plot_background, frame, grid, text, dim;
  ImU32 palette[8];
};
FigureStyle light_figure_style();  // slides and README figures
FigureStyle dark_figure_style();   // the app's dark panels

// Where DrawFigure puts the plot in [p0, p1] (the hover test finds the points with it).
struct FigureLayout {
  float subtitle_y = 0, text_y = 0;  // the subtitle's top; the first line under it
  ImVec2 a0, a1;                     // the plot area
  float right_ticks = 0;             // width of the right-hand axis' labels
  // The two y axes' labels above the plot: on one line (the left one at the left, the right one
  // ending at the right ticks' edge), or, where they would come within a font size of each
  // other, the left one a line higher. y_labels_gap: the room between them were they on one
  // line (negative: they would overlap; 0 without a right-hand axis).
  bool y_labels_stacked = false;
  float y_labels_gap = 0;
  bool fits = false;                 // room for a readable plot
  // The legend: right of the plot, or under the x axis' label in columns of legend_w where that
  // leaves the plot more room (the notes follow it).
  bool legend_below = false;
  int legend_cols = 1;
  float legend_w = 0, legend_y = 0;
  // Under the plot in one column narrower than its longest entry, each label wraps at spaces to
  // legend_text_w pixels (0: no wrapping); legend_lines counts the legend's lines of text.
  float legend_text_w = 0;
  int legend_lines = 0;
  ImVec2 point(const Figure& f, const Series& s, size_t k) const;  // series s, point k, in pixels
};
FigureLayout layout_figure(const Figure& f, ImVec2 p0, ImVec2 p1, ImFont* font, float size);
// The least height (at most 80 font sizes) at which f, `width` pixels wide, has a plot area at
// least plot_h pixels tall: a view gives its figure that much and scrolls, rather than drawing
// "(too small: enlarge the window)" under its controls.
float figure_height_for(const Figure& f, float width, ImFont* font, float size, float plot_h);

// Draws f in [p0, p1] with `font` at `size` pixels. When `mouse` is over a point, writes its
// series and values to hover (a tooltip's text) and returns true.
bool DrawFigure(ImDrawList* dl, ImVec2 p0, ImVec2 p1, const Figure& f, const FigureStyle& st, ImFont* font,
                float size, ImVec2 mouse, char* hover, size_t hover_n);

}  // namespace flashstep::plot
