#include "app/plot/raster.h"

#include "app/plot/draw_figure.h"
#include "core/types.h"

#include <imgui.h>
#include <stb_image_write.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <filesystem>

namespace flashstep::plot {

namespace {

constexpr const char* kFont = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";  // fonts-dejavu-core

// The font atlas as ImGui built it: one alpha byte per texel (glyphs, and the white texel that
// untextured shapes sample).
struct Texture {
  const unsigned char* a = nullptr;
  int w = 0, h = 0;
  // Bilinear, texel centres at half-integers, as OpenGL's GL_LINEAR samples the atlas in the app.
  float sample(float u, float v) const {
    const float x = u * float(w) - 0.5f, y = v * float(h) - 0.5f;
    const int x0 = int(std::floor(x)), y0 = int(std::floor(y));
    const float fx = x - float(x0), fy = y - float(y0);
    auto at = [&](int px, int py) {
      px = std::clamp(px, 0, w - 1);
      py = std::clamp(py, 0, h - 1);
      return float(a[size_t(py) * size_t(w) + size_t(px)]) / 255.0f;
    };
    return (at(x0, y0) * (1 - fx) + at(x0 + 1, y0) * fx) * (1 - fy) +
           (at(x0, y0 + 1) * (1 - fx) + at(x0 + 1, y0 + 1) * fx) * fy;
  }
};

float edge(const ImVec2& a, const ImVec2& b, float px, float py) {
  return (b.x - a.x) * (py - a.y) - (b.y - a.y) * (px - a.x);
}

// Top-left rule: a pixel centre exactly on an edge shared by two triangles is filled once, so
// ImGui's anti-aliasing fringes (translucent triangles side by side) leave no seams.
bool top_left(const ImVec2& a, const ImVec2& b) {
  const float dx = b.x - a.x, dy = b.y - a.y;
  return (dy == 0 && dx > 0) || dy < 0;
}

// One triangle, colour and texture coordinates interpolated, blended over the image ("source
// over", as the app's OpenGL backend blends).
void triangle(Image& im, const Texture& tex, const ImVec4& clip, ImDrawVert v0, ImDrawVert v1, ImDrawVert v2) {
  float area = edge(v0.pos, v1.pos, v2.pos.x, v2.pos.y);
  if (std::fabs(area) < 1e-12f) return;
  if (area < 0) {
    std::swap(v1, v2);
    area = -area;
  }
  const int x0 = std::max(int(std::floor(std::min({v0.pos.x, v1.pos.x, v2.pos.x}))), std::max(0, int(clip.x)));
  const int x1 = std::min(int(std::ceil(std::max({v0.pos.x, v1.pos.x, v2.pos.x}))), std::min(im.w, int(std::ceil(clip.z))));
  const int y0 = std::max(int(std::floor(std::min({v0.pos.y, v1.pos.y, v2.pos.y}))), std::max(0, int(clip.y)));
  const int y1 = std::min(int(std::ceil(std::max({v0.pos.y, v1.pos.y, v2.pos.y}))), std::min(im.h, int(std::ceil(clip.w))));
  const bool tl0 = top_left(v1.pos, v2.pos), tl1 = top_left(v2.pos, v0.pos), tl2 = top_left(v0.pos, v1.pos);
  const ImVec4 c0 = ImGui::ColorConvertU32ToFloat4(v0.col), c1 = ImGui::ColorConvertU32ToFloat4(v1.col),
               c2 = ImGui::ColorConvertU32ToFloat4(v2.col);
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x) {
      const float px = float(x) + 0.5f, py = float(y) + 0.5f;
      if (px < clip.x || px >= clip.z || py < clip.y || py >= clip.w) continue;
      const float w0 = edge(v1.pos, v2.pos, px, py), w1 = edge(v2.pos, v0.pos, px, py), w2 = edge(v0.pos, v1.pos, px, py);
      if (w0 < 0 || w1 < 0 || w2 < 0) continue;
      if ((w0 == 0 && !tl0) || (w1 == 0 && !tl1) || (w2 == 0 && !tl2)) continue;
      const float b0 = w0 / area, b1 = w1 / area, b2 = w2 / area;
      const float u = b0 * v0.uv.x + b1 * v1.uv.x + b2 * v2.uv.x, v = b0 * v0.uv.y + b1 * v1.uv.y + b2 * v2.uv.y;
      const float a = (b0 * c0.w + b1 * c1.w + b2 * c2.w) * tex.sample(u, v);
      if (a <= 0) continue;
      unsigned char* dst = &im.rgb[(size_t(y) * size_t(im.w) + size_t(x)) * 3];
      const float src[3] = {b0 * c0.x + b1 * c1.x + b2 * c2.x, b0 * c0.y + b1 * c1.y + b2 * c2.y,
                            b0 * c0.z + b1 * c1.z + b2 * c2.z};
      for (int ch = 0; ch < 3; ++ch)
        dst[ch] = (unsigned char)std::lround(std::clamp(src[ch] * a * 255.0f + float(dst[ch]) * (1 - a), 0.0f, 255.0f));
    }
}

void rasterise(const ImDrawData& dd, const Texture& tex, Image& im) {
  for (int n = 0; n < dd.CmdListsCount; ++n) {
    const ImDrawList& cl = *dd.CmdLists[n];
    for (const ImDrawCmd& cmd : cl.CmdBuffer) {
      if (cmd.UserCallback) continue;  // DrawFigure adds none
      for (unsigned int e = 0; e + 2 < cmd.ElemCount; e += 3) {
        const ImDrawIdx* idx = &cl.IdxBuffer[int(cmd.IdxOffset + e)];
        const ImDrawVert* vtx = &cl.VtxBuffer[int(cmd.VtxOffset)];
        triangle(im, tex, cmd.ClipRect, vtx[idx[0]], vtx[idx[1]], vtx[idx[2]]);
      }
    }
  }
}

}  // namespace

Image render_figures(const std::vector<Figure>& figures, int w, int h) {
  Image im;
  im.w = w;
  im.h = h;
  const FigureStyle st = light_figure_style();
  im.rgb.assign(size_t(w) * size_t(h) * 3, 255);
  if (figures.empty()) return im;
  const float fig_h = float(h) / float(figures.size());
  const float font_px = std::clamp(std::min(float(w) * 0.6f, fig_h) / 40.0f, 12.0f, 40.0f);

  ImGuiContext* previous = ImGui::GetCurrentContext();
  ImGuiContext* ctx = ImGui::CreateContext();
  ImGui::SetCurrentContext(ctx);
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;
  io.LogFilename = nullptr;
  io.DisplaySize = ImVec2(float(w), float(h));
  io.DeltaTime = 1.0f / 60.0f;
  io.BackendFlags |= ImGuiBackendFlags_RendererHasVtxOffset;  // rasterise() honours VtxOffset
  std::error_code ec;
  ImFont* font = std::filesystem::exists(kFont, ec) ? io.Fonts->AddFontFromFileTTF(kFont, font_px) : nullptr;
  if (!font) {
    ImFontConfig cfg;
    cfg.SizePixels = std::round(font_px);
    font = io.Fonts->AddFontDefault(&cfg);
  }
  Texture tex;
  unsigned char* atlas = nullptr;
  io.Fonts->GetTexDataAsAlpha8(&atlas, &tex.w, &tex.h);
  tex.a = atlas;
  io.Fonts->SetTexID(ImTextureID(intptr_t(1)));

  ImGui::NewFrame();
  ImDrawList* dl = ImGui::GetBackgroundDrawList();
  for (size_t k = 0; k < figures.size(); ++k) {
    const ImVec2 p0(0, std::round(fig_h * float(k))), p1(float(w), std::round(fig_h * float(k + 1)));
    DrawFigure(dl, p0, p1, figures[k], st, font, font_px, ImVec2(-FLT_MAX, -FLT_MAX), nullptr, 0);
  }
  ImGui::Render();
  rasterise(*ImGui::GetDrawData(), tex, im);
  ImGui::DestroyContext(ctx);
  ImGui::SetCurrentContext(previous);
  return im;
}

std::string encode_png(const Image& im) {
  std::string png;
  auto append = [](void* to, void* data, int n) {
    static_cast<std::string*>(to)->append(static_cast<const char*>(data), size_t(n));
  };
  if (!stbi_write_png_to_func(append, &png, im.w, im.h, 3, im.rgb.data(), im.w * 3))
    throw InputError("cannot encode the PNG");
  return png;
}

}  // namespace flashstep::plot
