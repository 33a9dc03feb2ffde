// OpenGL entry points. On Linux, libGL/libOpenGL (GLVND) export every OpenGL 3.3 core function,
// so prototypes are enough and no loader is needed. The web build (web/build.sh, emscripten)
// draws with WebGL2, which is OpenGL ES 3.0: its header declares the same functions.
#pragma once
#ifdef __EMSCRIPTEN__
#include <GLES3/gl3.h>
#else
#ifndef GL_GLEXT_PROTOTYPES
#define GL_GLEXT_PROTOTYPES 1
#endif
#include <GL/gl.h>
#include <GL/glext.h>
#endif

#include <string>

namespace flashstep::gui {

// The shaders in shaders/ are written once, in the GLSL subset that OpenGL 3.3 core and OpenGL
// ES 3.00 share, and start with `#version 330 core`. Under ES that first line becomes the ES
// version with the precisions ES asks for (highp: the matrices are float32, the texel indices
// exact), and `#line 1` keeps the info log's line numbers those of the file.
inline std::string glsl_for_this_gl(const std::string& source) {
#ifdef __EMSCRIPTEN__
  const std::string desktop = "#version 330 core";
  if (source.compare(0, desktop.size(), desktop) != 0) return source;
  return "#version 300 es\nprecision highp float;\nprecision highp int;\nprecision highp sampler2D;\n#line 1\n" +
         source.substr(desktop.size());
#else
  return source;
#endif
}

}  // namespace flashstep::gui
