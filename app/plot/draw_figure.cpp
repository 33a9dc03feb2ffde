#include "app/plot/draw_figure.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>

namespace flashstep::plot {

namespace {

// Tableau's ten colours, the eight that stay apart on white and on dark grey. A figure with more
// colours than that draws the second round's discs as diamonds (and diamonds as discs), so that
// no two series look alike.
constexpr ImU32 kPalette[8] = {IM_COL32(78, 121, 167, 255),  IM_COL32(242, 142, 43, 255),
                               IM_COL32(225, 87, 89, 255),   IM_COL32(89, 161, 79, 255),
                               IM_COL32(176, 122, 161, 255), IM_COL32(118, 183, 178, 255),
                               IM_COL32(156, 117, 95, 255),  IM_COL32(237, 201, 72, 255)};

ImU32 with_alpha(ImU32 c, int a) { return (c & ~IM_COL32_A_MASK) | (ImU32(a) << IM_COL32_A_SHIFT); }

// A series' colour: its palette entry, lighter for a square-marked pass (the backward) and darker
// for a triangle-marked one (forward + backward), so that the passes of one kernel, whose lines
// run a few pixels apart, differ in shade as well as in marker.
ImU32 series_colour(const FigureStyle& st, const Series& s) {
  const ImU32 c = st.palette[s.colour % 8];
  if (s.marker != Marker::square && s.marker != Marker::triangle) return c;
  const ImVec4 v = ImGui::ColorConvertU32ToFloat4(c);
  const float t = s.marker == Marker::square ? 0.45f : -0.35f;  // toward white, or toward black
  auto mix = [&](float x) { return t > 0 ? x + (1 - x) * t : x * (1 + t); };
  return ImGui::ColorConvertFloat4ToU32(ImVec4(mix(v.x), mix(v.y), mix(v.z), v.w));
}

struct Painter {
  ImDrawList* dl;
  ImFont* font;
  float size;
  ImVec2 text_size(const char* s, float wrap = 0) const { return font->CalcTextSizeA(size, FLT_MAX, wrap, s); }
  void text(ImVec2 p, ImU32 c, const char* s, float wrap = 0) const { dl->AddText(font, size, p, c, s, nullptr, wrap); }
  // Anchored text: ax, ay in 0..1 say which point of its box sits at p (0.5, 0: centred above).
  void text_at(ImVec2 p, float ax, float ay, ImU32 c, const char* s) const {
    const ImVec2 t = text_size(s);
    text(ImVec2(std::floor(p.x - t.x * ax), std::floor(p.y - t.y * ay)), c, s);
  }
};

// The end of the first line of [s, e) in w pixels, broken at a space (ImGui's own wrapping also
// breaks after '.', which would split "13.96"); the first word whole where even it is wider.
const char* line_end(const Painter& pt, const char* s, const char* e, float w) {
  const char* fits = nullptr;
  for (const char* q = s; q <= e; ++q) {
    if (q != e && *q != ' ') continue;
    if (pt.font->CalcTextSizeA(pt.size, FLT_MAX, 0, s, q).x > w) return fits ? fits : q;
    fits = q;
  }
  return e;
}

// The lines a label takes at w pixels (w = 0: one).
int label_lines(const Painter& pt, const std::string& label, float w) {
  if (w <= 0) return 1;
  int n = 0;
  for (const char *s = label.c_str(), *e = s + label.size(); s < e; ++n) {
    s = line_end(pt, s, e, w);
    while (s < e && *s == ' ') ++s;
  }
  return std::max(n, 1);
}

float widest_tick(const Painter& pt, const Axis& a) {
  float w = 0;
  for (const Tick& t : a.ticks) w = std::max(w, pt.text_size(t.label.c_str()).x);
  return w;
}

// A polyline, solid or dashed (dash and gap in pixels, carried across the corners).
void polyline(ImDrawList* dl, const ImVec2* p, int n, ImU32 c, float thick, bool dashed) {
  if (!dashed) {
    // Segment by segment, not AddPolyline: its joins average the two segments' normals, and at
    // a sharp zigzag (random timings) those nearly cancel, pinching each segment to nothing in
    // its middle. The markers cover the corners.
    for (int k = 0; k + 1 < n; ++k) dl->AddLine(p[k], p[k + 1], c, thick);
    return;
  }
  const float dash = 4 * thick, gap = 2.5f * thick;
  float phase = 0;  // distance into the current dash + gap period
  for (int k = 0; k + 1 < n; ++k) {
    const float dx = p[k + 1].x - p[k].x, dy = p[k + 1].y - p[k].y, len = std::sqrt(dx * dx + dy * dy);
    float s = 0;
    while (s < len) {
      const bool on = phase < dash;
      const float step = std::min(len - s, on ? dash - phase : dash + gap - phase);
      if (on) {
        const ImVec2 a(p[k].x + dx * s / len, p[k].y + dy * s / len);
        const ImVec2 b(p[k].x + dx * (s + step) / len, p[k].y + dy * (s + step) / len);
        dl->AddLine(a, b, c, thick);
      }
      s += step;
      phase = std::fmod(phase + step, dash + gap);
    }
  }
}

// A series' marker as drawn: its own, discs and diamonds swapped in the palette's second round.
Marker shape(const Series& s) {
  if (s.colour % 16 < 8 || (s.marker != Marker::disc && s.marker != Marker::diamond)) return s.marker;
  return s.marker == Marker::disc ? Marker::diamond : Marker::disc;
}

// One marker of about the same area whatever its shape: a disc, a diamond, a square or a
// triangle pointing up.
void marker(ImDrawList* dl, ImVec2 p, float r, ImU32 c, Marker m) {
  switch (m) {
    case Marker::disc: return dl->AddCircleFilled(p, r, c);
    case Marker::diamond: {
      const float k = 1.3f * r;
      return dl->AddQuadFilled(ImVec2(p.x, p.y - k), ImVec2(p.x + k, p.y), ImVec2(p.x, p.y + k), ImVec2(p.x - k, p.y), c);
    }
    case Marker::square: {
      const float k = 0.9f * r;
      return dl->AddRectFilled(ImVec2(p.x - k, p.y - k), ImVec2(p.x + k, p.y + k), c);
    }
    case Marker::triangle: {
      const float k = 1.35f * r;
      return dl->AddTriangleFilled(ImVec2(p.x, p.y - k), ImVec2(p.x + 0.87f * k, p.y + 0.5f * k),
                                   ImVec2(p.x - 0.87f * k, p.y + 0.5f * k), c);
    }
  }
}

// The legend's sample of a series: a filled square for bars, a line with its marker otherwise.
void legend_sample(ImDrawList* dl, ImVec2 p, float w, float h, const Series& s, ImU32 c, float lw, float mr) {
  const float cy = p.y + h * 0.5f;
  if (s.bars) {
    dl->AddRectFilled(ImVec2(p.x + w * 0.25f, p.y + h * 0.15f), ImVec2(p.x + w * 0.75f, p.y + h * 0.85f), c);
    return;
  }
  const ImVec2 line[2] = {ImVec2(p.x, cy), ImVec2(p.x + w, cy)};
  if (!s.points) polyline(dl, line, 2, c, lw, s.dashed);
  marker(dl, ImVec2(p.x + w * 0.5f, cy), s.points ? 1.4f * mr : 1.2f * mr, c, shape(s));
}

}  // namespace

float figure_height_for(const Figure& f, float width, ImFont* font, float size, float plot_h) {
  // Heights in half font sizes from 6 to 80, searched by halving (a view calls this every frame):
  // the plot grows with the height, so the least height that gives it plot_h is found in 8 layouts.
  const auto enough = [&](int k) {
    const FigureLayout l = layout_figure(f, ImVec2(0, 0), ImVec2(width, 0.5f * size * float(k)), font, size);
    return l.fits && l.a1.y - l.a0.y >= plot_h;
  };
  int lo = 12, hi = 160;  // enough(hi) is taken as true: 80 font sizes is the most a figure gets
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (enough(mid)) hi = mid;
    else lo = mid + 1;
  }
  return 0.5f * size * float(lo);
}

FigureLayout layout_figure(const Figure& f, ImVec2 p0, ImVec2 p1, ImFont* font, float size) {
  const Painter pt{nullptr, font, size};
  const float F = size, wrap = p1.x - p0.x - 1.2f * F;
  FigureLayout l;
  l.subtitle_y = p0.y + 0.4f * F + pt.text_size(f.title.c_str(), wrap).y + 0.15f * F;
  l.text_y = l.subtitle_y + (f.subtitle.empty() ? 0 : pt.text_size(f.subtitle.c_str(), wrap).y);
  // Margins: tick labels, the axis labels above the y axes, the legend to the right, notes below.
  float legend_w = 0;
  for (const Series& s : f.series) legend_w = std::max(legend_w, pt.text_size(s.label.c_str()).x);
  legend_w += 3.2f * F;
  l.legend_w = legend_w;
  const float left = p0.x + 0.6f * F + widest_tick(pt, f.y) + 0.5f * F;
  l.right_ticks = f.has_y2 ? widest_tick(pt, f.y2) + 0.9f * F : 0.4f * F;
  float right = p1.x - legend_w - l.right_ticks - 0.4f * F;
  float notes_h = 0;
  for (const std::string& n : f.notes) notes_h += pt.text_size(n.c_str(), wrap).y;
  float top = l.text_y + 1.9f * F;
  float bottom = p1.y - notes_h - 3.4f * F;
  // The legend right of the plot, or under it in columns where that leaves the plot a clearly
  // larger readable area (a quarter more; a plot up to twice as wide as tall counts its width).
  const int cols = std::max(1, int((p1.x - p0.x - 1.2f * F) / legend_w));
  // One column narrower than the longest entry: the labels wrap (the sample takes 3 font sizes).
  const float text_w = legend_w > p1.x - p0.x - 1.2f * F ? p1.x - p0.x - 3.6f * F : 0.0f;
  int lines = (int(f.series.size()) + cols - 1) / cols;
  if (text_w > 0) {
    lines = 0;
    for (const Series& s : f.series) lines += label_lines(pt, s.label, text_w);
  }
  const float legend_h = float(lines) * 1.35f * F + 0.4f * F;
  const float right_below = p1.x - l.right_ticks - 0.4f * F, bottom_below = bottom - legend_h;
  auto score = [](float w, float h) { return std::min(w, 2 * h); };
  if (!f.series.empty() && score(right_below - left, bottom_below - top) > 1.25f * score(right - left, bottom - top)) {
    l.legend_below = true;
    l.legend_cols = cols;
    l.legend_text_w = text_w;
    l.legend_lines = lines;
    right = right_below;
    bottom = bottom_below;
  }
  // The y axes' labels on one line where a font size is left between them, else the left one a
  // line above (at 1024x768 and font scale 2 "HBM traffic (GB)" and "runtime (ms)" were drawn over
  // each other). The right one ends at the right ticks' edge.
  if (f.has_y2) {
    l.y_labels_gap = std::floor(right) + l.right_ticks - pt.text_size(f.y2.label.c_str()).x -
                     (p0.x + 0.6f * F + pt.text_size(f.y.label.c_str()).x);
    l.y_labels_stacked = l.y_labels_gap < F;
    if (l.y_labels_stacked) top += 1.2f * F;
  }
  l.legend_y = bottom + 3.0f * F;
  l.fits = right - left >= 4 * F && bottom - top >= 3 * F;
  l.a0 = ImVec2(std::floor(left), std::floor(top));
  l.a1 = ImVec2(std::floor(right), std::floor(bottom));
  return l;
}

ImVec2 FigureLayout::point(const Figure& f, const Series& s, size_t k) const {
  const Axis& ya = s.right ? f.y2 : f.y;
  return ImVec2(a0.x + float(f.x.fraction(s.x[k])) * (a1.x - a0.x), a1.y - float(ya.fraction(s.y[k])) * (a1.y - a0.y));
}

FigureStyle light_figure_style() {
  FigureStyle s{IM_COL32(255, 255, 255, 255), IM_COL32(250, 250, 252, 255), IM_COL32(90, 90, 100, 255),
                IM_COL32(222, 224, 230, 255), IM_COL32(25, 25, 30, 255),   IM_COL32(95, 98, 110, 255),
                {}};
  std::copy(std::begin(kPalette), std::end(kPalette), s.palette);
  return s;
}

FigureStyle dark_figure_style() {
  FigureStyle s{IM_COL32(15, 15, 15, 255),    IM_COL32(24, 25, 30, 255),    IM_COL32(120, 122, 135, 255),
                IM_COL32(48, 50, 58, 255),    IM_COL32(235, 235, 240, 255), IM_COL32(165, 170, 185, 255),
                {}};
  std::copy(std::begin(kPalette), std::end(kPalette), s.palette);
  return s;
}

bool DrawFigure(ImDrawList* dl, ImVec2 p0, ImVec2 p1, const Figure& f, const FigureStyle& st, ImFont* font,
                float size, ImVec2 mouse, char* hover, size_t hover_n) {
  const Painter pt{dl, font, size};
  const float F = size, width = p1.x - p0.x;
  const float lw = std::max(1.5f, 0.125f * F), mr = std::max(2.5f, 0.22f * F);  // lines and markers scale with the text
  dl->PushClipRect(p0, p1, true);
  dl->AddRectFilled(p0, p1, st.background);

  // Title and subtitle, wrapped to the width.
  const FigureLayout lay = layout_figure(f, p0, p1, font, size);
  const float wrap = width - 1.2f * F;
  pt.text(ImVec2(p0.x + 0.6f * F, p0.y + 0.4f * F), st.text, f.title.c_str(), wrap);
  if (!f.subtitle.empty()) pt.text(ImVec2(p0.x + 0.6f * F, lay.subtitle_y), st.dim, f.subtitle.c_str(), wrap);
  if (!f.empty.empty() || !lay.fits) {  // nothing to draw, or too small to read: say so rather than scribble
    const char* why = f.empty.empty() ? "(too small: enlarge the window)" : f.empty.c_str();
    pt.text(ImVec2(p0.x + 0.6f * F, lay.text_y + F), st.dim, why, wrap);
    dl->PopClipRect();
    return false;
  }
  const ImVec2 a0 = lay.a0, a1 = lay.a1;
  const float aw = a1.x - a0.x, ah = a1.y - a0.y, right_ticks = lay.right_ticks;
  auto X = [&](double v) { return a0.x + float(f.x.fraction(v)) * aw; };
  auto Y = [&](const Axis& a, double v) { return a1.y - float(a.fraction(v)) * ah; };

  dl->AddRectFilled(a0, a1, st.plot_background);
  // A y tick's label is left out where it would touch the last one drawn (a short plot of many
  // ticks: 1000, 300, 200, 100, ... ran into each other 10 px apart).
  float label_top = FLT_MAX;
  for (const Tick& t : f.y.ticks) {
    const float ty = std::round(Y(f.y, t.value));
    dl->AddLine(ImVec2(a0.x, ty), ImVec2(a1.x, ty), st.grid);
    dl->AddLine(ImVec2(a0.x - 0.3f * F, ty), ImVec2(a0.x, ty), st.frame);
    const float half = 0.5f * pt.text_size(t.label.c_str()).y;
    if (label_top != FLT_MAX && std::abs(ty - label_top) < 2 * half + 0.15f * F) continue;
    label_top = ty;
    pt.text_at(ImVec2(a0.x - 0.45f * F, ty), 1.0f, 0.5f, st.text, t.label.c_str());
  }
  float label_end = -FLT_MAX;  // a tick's label is left out where it would touch the previous one
  for (const Tick& t : f.x.ticks) {
    const float tx = std::round(X(t.value));
    dl->AddLine(ImVec2(tx, a0.y), ImVec2(tx, a1.y), st.grid);
    dl->AddLine(ImVec2(tx, a1.y), ImVec2(tx, a1.y + 0.3f * F), st.frame);
    const float w = pt.text_size(t.label.c_str()).x;
    if (tx - 0.5f * w < label_end + 0.4f * F) continue;
    label_end = tx + 0.5f * w;
    pt.text_at(ImVec2(tx, a1.y + 0.4f * F), 0.5f, 0.0f, st.text, t.label.c_str());
  }
  if (f.has_y2)
    for (const Tick& t : f.y2.ticks) {
      const float ty = std::round(Y(f.y2, t.value));
      dl->AddLine(ImVec2(a1.x, ty), ImVec2(a1.x + 0.3f * F, ty), st.frame);
      pt.text_at(ImVec2(a1.x + 0.45f * F, ty), 0.0f, 0.5f, st.text, t.label.c_str());
    }
  // Bars on one axis and one line on the other: each axis' label takes its series' colour.
  const bool pair = f.has_y2 && f.series.size() == 2;
  const ImU32 y_col = pair ? st.palette[f.series[0].colour % 8] : st.text;
  pt.text_at(ImVec2(p0.x + 0.6f * F, a0.y - (lay.y_labels_stacked ? 1.7f : 0.5f) * F), 0.0f, 1.0f, y_col,
             f.y.label.c_str());
  if (f.has_y2)
    pt.text_at(ImVec2(a1.x + right_ticks, a0.y - 0.5f * F), 1.0f, 1.0f, pair ? st.palette[f.series[1].colour % 8] : st.text,
               f.y2.label.c_str());
  pt.text_at(ImVec2((a0.x + a1.x) * 0.5f, a1.y + 1.6f * F), 0.5f, 0.0f, st.text, f.x.label.c_str());

  // The data: bars first, lines over them.
  const float octave = f.x.log ? aw / float(std::log2(f.x.hi / f.x.lo)) : aw / 10;
  constexpr size_t kChunk = 64;  // a polyline is drawn in pieces of this many points (no allocation)
  ImVec2 pts[kChunk];
  // A marker of a markers-only series that lands on the centre of an earlier one is drawn smaller,
  // so that the earlier shows as a ring around it: the roofline's S = QK^T (28.67 FLOP/B) lay
  // under O = PV (28.44), a third of a pixel away, and its disc could not be seen at all.
  constexpr int kMarked = 64;
  ImVec2 marked[kMarked];
  float marked_r[kMarked];
  int n_marked = 0;
  float best = 0.8f * F;  // hover: the nearest point within this many pixels
  const Series* hs = nullptr;
  size_t hk = 0;
  ImVec2 hp;
  for (int pass = 0; pass < 2; ++pass)
    for (const Series& s : f.series) {
      if (s.bars != (pass == 0)) continue;
      const ImU32 c = series_colour(st, s);
      const size_t n = s.x.size();
      for (size_t k = 0; k < n; ++k) {
        const ImVec2 q = lay.point(f, s, k);
        if (s.bars) {
          const float hw = 0.28f * octave;
          dl->AddRectFilled(ImVec2(q.x - hw, q.y), ImVec2(q.x + hw, a1.y), with_alpha(c, 215));
          if (!hs && mouse.x >= q.x - hw && mouse.x <= q.x + hw && mouse.y >= q.y && mouse.y <= a1.y) {
            hs = &s;
            hk = k;
            hp = q;
          }
          continue;
        }
        const float dx = mouse.x - q.x, dy = mouse.y - q.y, dist = std::sqrt(dx * dx + dy * dy);
        if (dist < best) {  // lines are drawn over bars, so they answer first
          best = dist;
          hs = &s;
          hk = k;
          hp = q;
        }
      }
      if (s.bars) continue;
      for (size_t start = 0; !s.points && start + 1 < n; start += kChunk - 1) {  // consecutive pieces share a point
        const size_t m = std::min(kChunk, n - start);
        for (size_t k = 0; k < m; ++k) pts[k] = lay.point(f, s, start + k);
        polyline(dl, pts, int(m), c, lw, s.dashed);
      }
      for (size_t k = 0; k < n; ++k) {
        const ImVec2 q = lay.point(f, s, k);
        // Markers-only series and a line's lone point (a backward measured at one N) are drawn
        // larger: a line's 3-pixel marker is the whole of such a series.
        float r = s.points ? 1.8f * mr : n == 1 ? 1.6f * mr : mr;
        if (s.points) {
          for (int e = 0; e < n_marked; ++e) {
            const float dx = q.x - marked[e].x, dy = q.y - marked[e].y;
            if (dx * dx + dy * dy < 0.25f * marked_r[e] * marked_r[e]) r = std::min(r, 0.55f * marked_r[e]);
          }
          if (n_marked < kMarked) {
            marked[n_marked] = q;
            marked_r[n_marked++] = r;
          }
        }
        marker(dl, q, r, c, shape(s));
      }
    }
  dl->AddRect(a0, a1, st.frame);

  // Legend, right of the right-hand axis, or in columns under the x axis' label.
  const float line_h = 1.35f * F;
  float wrapped_y = lay.legend_y;  // where the next wrapped entry starts
  for (size_t k = 0; k < f.series.size(); ++k) {
    const int col = lay.legend_below ? int(k) % lay.legend_cols : 0, row = lay.legend_below ? int(k) / lay.legend_cols : int(k);
    const float lx = lay.legend_below ? p0.x + 0.6f * F + float(col) * lay.legend_w : a1.x + right_ticks + 0.6f * F;
    const float ly = lay.legend_text_w > 0 ? wrapped_y : (lay.legend_below ? lay.legend_y : a0.y) + float(row) * line_h;
    legend_sample(dl, ImVec2(lx, ly), 2.0f * F, F, f.series[k], series_colour(st, f.series[k]), lw, mr);
    const std::string& label = f.series[k].label;
    if (lay.legend_text_w <= 0 || label.empty()) {
      if (lay.legend_text_w > 0) wrapped_y += line_h;
      pt.text(ImVec2(lx + 2.4f * F, ly), st.text, label.c_str());
      continue;
    }
    for (const char *s = label.c_str(), *e = s + label.size(); s < e; wrapped_y += line_h) {
      const char* end = line_end(pt, s, e, lay.legend_text_w);
      dl->AddText(pt.font, pt.size, ImVec2(lx + 2.4f * F, wrapped_y), st.text, s, end);
      for (s = end; s < e && *s == ' ';) ++s;
    }
  }

  // Notes under the x axis' label (and the legend, when it is there).
  float ny = lay.legend_below ? lay.legend_y + float(lay.legend_lines) * line_h + 0.4f * F : a1.y + 3.0f * F;
  for (const std::string& n : f.notes) {
    pt.text(ImVec2(p0.x + 0.6f * F, ny), st.dim, n.c_str(), wrap);
    ny += pt.text_size(n.c_str(), wrap).y;
  }

  const bool hit = hs != nullptr && hover && hover_n > 0;
  if (hit) {
    dl->AddCircle(hp, 2 * mr, st.text, 0, 1.5f);
    const Axis& ya = hs->right ? f.y2 : f.y;
    std::snprintf(hover, hover_n, "%s\n%s = %.6g\n%s = %.4g", hs->label.c_str(), f.x.label.c_str(), hs->x[hk],
                  ya.label.c_str(), hs->y[hk]);
  }
  dl->PopClipRect();
  return hit;
}

}  // namespace flashstep::plot
