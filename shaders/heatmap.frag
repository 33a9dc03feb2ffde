#version 330 core
// Colours one matrix into an RGBA texture with one texel per element. It runs when the data or
// the colour range changes, not every frame; tiles that do not exist yet (S_ij before line 9)
// are covered by the app's overlay, so stepping does not recolour the N x N score matrix.
//   u_data      the matrix, R32F, width = columns, height = rows (row 0 first)
//   u_transpose draw the matrix transposed (K and V shown as d x Nk under/over S)
//   u_map       0 diverging (blue - white - red) over [-u_hi, u_hi]: Q, K, V, S, O, m
//               1 sequential (dark - teal - yellow) over [u_lo, u_hi]: P~, l
//               2 sequential over log10 |x| in [u_lo, u_hi]: the compare tab's error
//   u_empty     the whole matrix does not exist yet (O, l, m before Alg1 L2)
//   u_empty_colour  "not there yet": the panels' background of the theme (dark or light)
//   u_scale     displayed elements per output texel (x, y): 1 normally; above 1 when the
//               matrix is coloured at the size it is drawn (each texel takes one element)
uniform sampler2D u_data;
uniform int u_transpose;
uniform int u_map;
uniform float u_lo;
uniform float u_hi;
uniform int u_empty;
uniform vec3 u_empty_colour;
uniform vec2 u_scale;
out vec4 frag_colour;

const vec3 kNegInf = vec3(0.36, 0.30, 0.46);  // m = -inf before a row has seen any key
const vec3 kNaN = vec3(1.0, 0.0, 1.0);

vec3 diverging(float t) {  // t in [0, 1], 0.5 is white
  vec3 blue = vec3(0.13, 0.35, 0.78), white = vec3(0.97, 0.97, 0.97), red = vec3(0.80, 0.15, 0.15);
  return t < 0.5 ? mix(blue, white, t * 2.0) : mix(white, red, t * 2.0 - 1.0);
}

vec3 sequential(float t) {  // piecewise linear through four hand-picked colours
  vec3 c0 = vec3(0.06, 0.05, 0.22), c1 = vec3(0.16, 0.36, 0.62);
  vec3 c2 = vec3(0.22, 0.70, 0.52), c3 = vec3(0.99, 0.91, 0.30);
  if (t < 1.0 / 3.0) return mix(c0, c1, t * 3.0);
  if (t < 2.0 / 3.0) return mix(c1, c2, t * 3.0 - 1.0);
  return mix(c2, c3, t * 3.0 - 2.0);
}

void main() {
  ivec2 px = ivec2(floor(gl_FragCoord.xy * u_scale));  // gl_FragCoord is at texel centres
  ivec2 cell = u_transpose != 0 ? px.yx : px;  // (column, row) of the matrix
  if (u_empty != 0) { frag_colour = vec4(u_empty_colour, 1.0); return; }
  float x = texelFetch(u_data, cell, 0).r;
  vec3 c;
  if (isnan(x)) c = u_map == 2 ? kNaN : u_empty_colour;  // NaN in HBM = a row not written yet
  else if (isinf(x)) c = x < 0.0 ? kNegInf : vec3(1.0);
  else if (u_map == 0) c = diverging(clamp(0.5 + 0.5 * x / max(u_hi, 1e-30), 0.0, 1.0));
  else if (u_map == 1) c = sequential(clamp((x - u_lo) / max(u_hi - u_lo, 1e-30), 0.0, 1.0));
  else c = sequential(clamp((log(max(abs(x), 1e-38)) / log(10.0) - u_lo) / max(u_hi - u_lo, 1e-30), 0.0, 1.0));
  frag_colour = vec4(c, 1.0);
}
