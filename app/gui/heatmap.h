// Heatmaps: a matrix goes to the GPU as an R32F texture; the GLSL colormap in
// shaders/heatmap.frag paints it into an RGBA texture (one texel per element) that ImGui draws.
// Data is uploaded only when the caller says it changed, and the colour pass runs only when
// data or a uniform (colormap, range) changed. A matrix shown smaller than one pixel per element
// (N = 1024 in a few hundred pixels) is coloured into a texture of the displayed size instead:
// the same nearest pick of one element per pixel, but drawing it then reads a small texture in
// order rather than a large one scattered, which is most of its cost under a software rasteriser.
#pragma once
#include "app/gui/gl.h"
#include "core/types.h"

#include <cstdint>
#include <string>

namespace flashstep::gui {

enum class Colormap { diverging = 0, sequential = 1, log_error = 2 };

class HeatmapShader {
 public:
  // Compiles shaders/heatmap.{vert,frag}; on failure returns false and puts the info log in err.
  bool init(const std::string& shader_dir, std::string* err);
  void destroy();
  GLuint program() const { return program_; }
  GLuint vao() const { return vao_; }
  GLint loc_data = -1, loc_transpose = -1, loc_map = -1, loc_lo = -1, loc_hi = -1, loc_empty = -1,
        loc_scale = -1, loc_empty_colour = -1;
  // "Not there yet" (unwritten HBM rows): the theme's background. Heatmaps re-colour when the
  // version moves (set_empty_colour).
  void set_empty_colour(float r, float g, float b);
  float empty_colour[3] = {0.06f, 0.06f, 0.06f};
  uint64_t colour_version = 0;

 private:
  GLuint program_ = 0, vao_ = 0;
};

struct HeatmapParams {
  Colormap map = Colormap::diverging;
  float lo = -1, hi = 1;
  bool transpose = false;
  bool empty = false;
  bool operator==(const HeatmapParams& o) const {
    return map == o.map && lo == o.lo && hi == o.hi && transpose == o.transpose && empty == o.empty;
  }
};

class Heatmap {
 public:
  ~Heatmap() { destroy(); }
  // Uploads a rows x cols row-major matrix (reallocates only when the shape changes).
  void upload(const float* data, int rows, int cols);
  void upload(const Mat& m) { upload(m.data(), int(m.rows()), int(m.cols())); }
  void upload(const Vec& v) { upload(v.data(), int(v.size()), 1); }
  void set_params(const HeatmapParams& p);
  // The size it is drawn at, in pixels (displayed width x height); the output texture is at
  // most that large from the next colour pass on. Cheap when unchanged.
  void fit_to(float width_px, float height_px);
  // Re-colours into the output texture if anything changed. Restores framebuffer 0.
  void render(const HeatmapShader& shader);
  void destroy();
  bool valid() const { return out_tex_ != 0 && rows_ > 0; }
  int rows() const { return rows_; }
  int cols() const { return cols_; }
  void* texture() const { return reinterpret_cast<void*>(uintptr_t(out_tex_)); }
  int uploads = 0, renders = 0;  // counters for the frame-cost checks

 private:
  GLuint data_tex_ = 0, out_tex_ = 0, fbo_ = 0;
  int rows_ = 0, cols_ = 0, out_w_ = 0, out_h_ = 0;
  int fit_w_ = 0, fit_h_ = 0;  // 0: the full size (one texel per element)
  HeatmapParams params_;
  bool dirty_ = true;
  uint64_t colour_seen_ = 0;  // the shader's colour_version of the last colour pass
};

}  // namespace flashstep::gui
