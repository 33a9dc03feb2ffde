#include "app/gui/heatmap.h"

#include "app/gui/resources.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace flashstep::gui {

namespace {

// Shader errors go to stderr with the driver's info log, and to the caller.
void report(std::string* err, const std::string& what, const char* log) {
  *err = what + ":\n" + log;
  std::fprintf(stderr, "flashstep: %s\n", err->c_str());
}

// Compiles one stage; on failure prints the info log (with the file name) and returns 0.
GLuint compile(GLenum type, const std::string& source, const std::string& path, std::string* err) {
  GLuint s = glCreateShader(type);
  const char* src = source.c_str();
  glShaderSource(s, 1, &src, nullptr);
  glCompileShader(s);
  GLint ok = 0;
  glGetShaderiv(s, GL_COMPILE_STATUS, &ok);
  if (!ok) {
    char log[4096] = "";
    glGetShaderInfoLog(s, sizeof log, nullptr, log);
    report(err, "shader " + path + " failed to compile", log);
    glDeleteShader(s);
    return 0;
  }
  return s;
}

void set_filtering(GLint filter) {
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, filter);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, filter);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
}

}  // namespace

bool HeatmapShader::init(const std::string& dir, std::string* err) {
  const std::string vpath = dir + "/heatmap.vert", fpath = dir + "/heatmap.frag";
  std::string vsrc, fsrc;
  try {
    vsrc = glsl_for_this_gl(read_text_file(vpath));
    fsrc = glsl_for_this_gl(read_text_file(fpath));
  } catch (const std::exception& e) {
    *err = e.what();
    return false;
  }
  GLuint vs = compile(GL_VERTEX_SHADER, vsrc, vpath, err);
  if (!vs) return false;
  GLuint fs = compile(GL_FRAGMENT_SHADER, fsrc, fpath, err);
  if (!fs) {
    glDeleteShader(vs);
    return false;
  }
  program_ = glCreateProgram();
  glAttachShader(program_, vs);
  glAttachShader(program_, fs);
  glLinkProgram(program_);
  glDeleteShader(vs);
  glDeleteShader(fs);
  GLint ok = 0;
  glGetProgramiv(program_, GL_LINK_STATUS, &ok);
  if (!ok) {
    char log[4096] = "";
    glGetProgramInfoLog(program_, sizeof log, nullptr, log);
    report(err, "heatmap shader program failed to link", log);
    glDeleteProgram(program_);
    program_ = 0;
    return false;
  }
  loc_data = glGetUniformLocation(program_, "u_data");
  loc_transpose = glGetUniformLocation(program_, "u_transpose");
  loc_map = glGetUniformLocation(program_, "u_map");
  loc_lo = glGetUniformLocation(program_, "u_lo");
  loc_hi = glGetUniformLocation(program_, "u_hi");
  loc_empty = glGetUniformLocation(program_, "u_empty");
  loc_scale = glGetUniformLocation(program_, "u_scale");
  loc_empty_colour = glGetUniformLocation(program_, "u_empty_colour");
  glGenVertexArrays(1, &vao_);  // core profile: a bound VAO is needed even with no attributes
  return true;
}

void HeatmapShader::destroy() {
  if (program_) glDeleteProgram(program_);
  if (vao_) glDeleteVertexArrays(1, &vao_);
  program_ = vao_ = 0;
}

void Heatmap::upload(const float* data, int rows, int cols) {
  if (rows <= 0 || cols <= 0) {
    rows_ = cols_ = 0;
    return;
  }
  if (!data_tex_) glGenTextures(1, &data_tex_);
  glBindTexture(GL_TEXTURE_2D, data_tex_);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
  glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
  if (rows != rows_ || cols != cols_) {
    set_filtering(GL_NEAREST);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_R32F, cols, rows, 0, GL_RED, GL_FLOAT, data);
    rows_ = rows;
    cols_ = cols;
  } else {
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, cols, rows, GL_RED, GL_FLOAT, data);
  }
  ++uploads;
  dirty_ = true;
}

void Heatmap::set_params(const HeatmapParams& p) {
  if (p == params_) return;
  params_ = p;
  dirty_ = true;
}

void Heatmap::fit_to(float width_px, float height_px) {
  const int w = std::max(1, int(std::ceil(width_px))), h = std::max(1, int(std::ceil(height_px)));
  if (w == fit_w_ && h == fit_h_) return;
  fit_w_ = w;
  fit_h_ = h;
  dirty_ = true;  // recoloured at the new size by the next render (at most once per resize)
}

void HeatmapShader::set_empty_colour(float r, float g, float b) {
  if (empty_colour[0] == r && empty_colour[1] == g && empty_colour[2] == b) return;
  empty_colour[0] = r;
  empty_colour[1] = g;
  empty_colour[2] = b;
  ++colour_version;
}

void Heatmap::render(const HeatmapShader& shader) {
  if ((!dirty_ && colour_seen_ == shader.colour_version) || rows_ == 0 || !shader.program()) return;
  dirty_ = false;
  colour_seen_ = shader.colour_version;
  const int full_w = params_.transpose ? rows_ : cols_, full_h = params_.transpose ? cols_ : rows_;
  const int w = fit_w_ > 0 ? std::min(full_w, fit_w_) : full_w;
  const int h = fit_h_ > 0 ? std::min(full_h, fit_h_) : full_h;
  if (!out_tex_) glGenTextures(1, &out_tex_);
  if (w != out_w_ || h != out_h_) {
    glBindTexture(GL_TEXTURE_2D, out_tex_);
    // Nearest both ways: cells stay crisp when magnified; when N = 1024 is shrunk into a few
    // hundred pixels, bilinear without mipmaps would not average the cells anyway.
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, w, h, 0, GL_RGBA, GL_UNSIGNED_BYTE, nullptr);
    if (!fbo_) glGenFramebuffers(1, &fbo_);
    glBindFramebuffer(GL_FRAMEBUFFER, fbo_);
    glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, out_tex_, 0);
    out_w_ = w;
    out_h_ = h;
  }
  glBindFramebuffer(GL_FRAMEBUFFER, fbo_);
  glViewport(0, 0, w, h);
  glDisable(GL_BLEND);
  glDisable(GL_SCISSOR_TEST);
  glDisable(GL_DEPTH_TEST);
  glUseProgram(shader.program());
  glActiveTexture(GL_TEXTURE0);
  glBindTexture(GL_TEXTURE_2D, data_tex_);
  glUniform1i(shader.loc_data, 0);
  glUniform1i(shader.loc_transpose, params_.transpose ? 1 : 0);
  glUniform1i(shader.loc_map, int(params_.map));
  glUniform1f(shader.loc_lo, params_.lo);
  glUniform1f(shader.loc_hi, params_.hi);
  glUniform1i(shader.loc_empty, params_.empty ? 1 : 0);
  glUniform2f(shader.loc_scale, float(full_w) / float(w), float(full_h) / float(h));
  glUniform3f(shader.loc_empty_colour, shader.empty_colour[0], shader.empty_colour[1], shader.empty_colour[2]);
  glBindVertexArray(shader.vao());
  glDrawArrays(GL_TRIANGLES, 0, 3);
  glBindVertexArray(0);
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  ++renders;
}

void Heatmap::destroy() {
  if (fbo_) glDeleteFramebuffers(1, &fbo_);
  if (out_tex_) glDeleteTextures(1, &out_tex_);
  if (data_tex_) glDeleteTextures(1, &data_tex_);
  fbo_ = out_tex_ = data_tex_ = 0;
  rows_ = cols_ = out_w_ = out_h_ = 0;
}

}  // namespace flashstep::gui
