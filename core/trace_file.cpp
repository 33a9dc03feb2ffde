#include "core/trace_file.h"

#include "core/export.h"
#include "core/input_files.h"
#include "core/schedule_registry.h"

#include <cmath>
#include <limits>

namespace flashstep {

using nlohmann::json;

namespace {

constexpr const char* kFormat = "flashstep-trace-replay";
constexpr int kVersion = 1;
constexpr int64_t kMaxTraceFileBytes = int64_t(512) << 20;

// Numbers as JSON numbers; -inf, inf and nan as strings (JSON has none), as export.cpp does.
json number_json(float x) {
  if (std::isfinite(x)) return x;
  return x < 0 ? "-inf" : (x > 0 ? "inf" : "nan");
}
// A matrix as {"rows", "cols", "data": row-major numbers}; an empty one as null.
json mat_json(const Mat& m) {
  if (m.size() == 0) return nullptr;
  json data = json::array();
  for (int64_t k = 0; k < m.size(); ++k) data.push_back(number_json(m.data()[k]));
  return {{"rows", m.rows()}, {"cols", m.cols()}, {"data", std::move(data)}};
}
json vec_json(const Vec& v) {
  json a = json::array();
  for (int64_t k = 0; k < v.size(); ++k) a.push_back(number_json(v(k)));
  return a;
}
template <size_t N>
json counts_json(const std::array<int64_t, N>& a) {
  return json(std::vector<int64_t>(a.begin(), a.end()));
}

// [SECTION] reading: every access checked, every failure one line naming the field
struct Reader {
  const std::string& source;
  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw InputError(source + ": " + field + " " + what);
  }
  const json& member(const json& o, const char* key, const std::string& where) const {
    if (!o.is_object()) fail(where, "is not an object");
    auto it = o.find(key);
    if (it == o.end()) fail(where + "." + key, "is missing");
    return *it;
  }
  int64_t integer(const json& o, const char* key, const std::string& where) const {
    const json& v = member(o, key, where);
    if (!v.is_number_integer()) fail(where + "." + key, "is not an integer (" + json_excerpt(v) + ")");
    return v.get<int64_t>();
  }
  int64_t integer_or(const json& o, const char* key, const std::string& where, int64_t dflt) const {
    return o.is_object() && o.contains(key) ? integer(o, key, where) : dflt;
  }
  std::string text(const json& o, const char* key, const std::string& where) const {
    const json& v = member(o, key, where);
    if (!v.is_string()) fail(where + "." + key, "is not a string (" + json_excerpt(v) + ")");
    return v.get<std::string>();
  }
  float number(const json& v, const std::string& where) const {
    if (v.is_number()) {
      const double x = v.get<double>();
      if (std::isfinite(x) && std::abs(x) > double(std::numeric_limits<float>::max()))
        fail(where, "is beyond float32's range (" + json_excerpt(v) + ")");
      return float(x);
    }
    if (v.is_string()) {
      const std::string s = v.get<std::string>();
      if (s == "-inf") return -std::numeric_limits<float>::infinity();
      if (s == "inf") return std::numeric_limits<float>::infinity();
      if (s == "nan") return std::numeric_limits<float>::quiet_NaN();
    }
    fail(where, "is not a number (" + json_excerpt(v) + ")");
  }
  Vec vec(const json& v, const std::string& where) const {
    if (!v.is_array()) fail(where, "is not an array");
    Vec out(int64_t(v.size()));
    for (size_t k = 0; k < v.size(); ++k) out(int64_t(k)) = number(v[k], where + "[" + std::to_string(k) + "]");
    return out;
  }
  Mat mat(const json& v, const std::string& where) const {
    if (v.is_null()) return Mat();
    const int64_t rows = integer(v, "rows", where), cols = integer(v, "cols", where);
    const json& data = member(v, "data", where);
    if (rows < 0 || cols < 0 || !data.is_array() || double(rows) * double(cols) != double(data.size()))
      fail(where, "has " + std::to_string(data.is_array() ? data.size() : 0) + " numbers for " +
                      std::to_string(rows) + " x " + std::to_string(cols));
    Mat m(rows, cols);
    for (size_t k = 0; k < data.size(); ++k) m.data()[k] = number(data[k], where + ".data[" + std::to_string(k) + "]");
    return m;
  }
  Mat mat_shaped(const json& v, const std::string& where, int64_t rows, int64_t cols) const {
    Mat m = mat(v, where);
    if (m.rows() != rows || m.cols() != cols)
      fail(where, "is " + std::to_string(m.rows()) + " x " + std::to_string(m.cols()) + ", the problem needs " +
                      std::to_string(rows) + " x " + std::to_string(cols));
    return m;
  }
  template <size_t N>
  void counts(const json& o, const char* key, const std::string& where, std::array<int64_t, N>& out) const {
    const json& v = member(o, key, where);
    if (!v.is_array() || v.size() != N) fail(where + "." + key, "is not an array of " + std::to_string(N) + " counts");
    for (size_t k = 0; k < N; ++k) {
      if (!v[k].is_number_integer()) fail(where + "." + key, "holds a value that is not an integer");
      out[k] = v[k].get<int64_t>();
    }
  }
};

Totals totals_from(const Reader& r, const json& o, const std::string& where) {
  Totals T;
  T.hbm_read_bytes = r.integer(o, "hbm_read_bytes", where);
  T.hbm_write_bytes = r.integer(o, "hbm_write_bytes", where);
  T.flops = r.integer(o, "flops", where);
  T.peak_sram_bytes = r.integer(o, "peak_sram_bytes", where);
  T.peak_tile_bytes = r.integer(o, "peak_tile_bytes", where);
  T.steps = r.integer(o, "steps", where);
  T.dram_read_bytes = r.integer_or(o, "dram_read_bytes", where, T.hbm_read_bytes);
  T.dram_write_bytes = r.integer_or(o, "dram_write_bytes", where, T.hbm_write_bytes);
  return T;
}

json writes_json(const std::vector<HbmWrite>& writes) {
  json out = json::array();
  for (const HbmWrite& w : writes)
    out.push_back({{"tensor", tensor_name(w.tensor)}, {"row0", w.row0}, {"data", mat_json(w.data)}});
  return out;
}

// HBM writes as writes_json has them, each checked against its tensor's shape in the problem.
std::vector<HbmWrite> writes_from(const Reader& r, const json& writes, const std::string& where, const Problem& p) {
  if (!writes.is_array()) r.fail(where, "is not an array");
  std::vector<HbmWrite> out;
  for (size_t n = 0; n < writes.size(); ++n) {
    const std::string ww = where + "[" + std::to_string(n) + "]";
    const std::string name = r.text(writes[n], "tensor", ww);
    int tensor = 0;
    while (tensor < kTensors && name != tensor_name(Tensor(tensor))) ++tensor;
    if (tensor == kTensors) r.fail(ww + ".tensor", "is not a tensor of flashstep (" + excerpt(name) + ")");
    HbmWrite hw{Tensor(tensor), r.integer(writes[n], "row0", ww), r.mat(r.member(writes[n], "data", ww), ww + ".data")};
    const int64_t rows = tensor_rows(hw.tensor, p.nq, p.nk, p.splits), cols = tensor_cols(hw.tensor, p.nk, p.d);
    if (hw.row0 < 0 || hw.data.cols() != cols || hw.row0 + hw.data.rows() > rows)
      r.fail(ww, "does not fit tensor " + name + " (" + std::to_string(rows) + " x " + std::to_string(cols) + ")");
    out.push_back(std::move(hw));
  }
  return out;
}

json traffic_json(const Traffic& t) { return {{"read", counts_json(t.read)}, {"written", counts_json(t.written)}}; }

}  // namespace

bool line_from_label(const std::string& label, Line& out) {
  for (const ScheduleInfo* s : schedules())
    for (const AlgorithmInfo* a : {s->forward_lines, s->backward_lines})
      if (a)
        for (size_t k = 0; k < a->n_lines; ++k)
          if (label == a->lines[k].label) {
            out = a->lines[k].line;
            return true;
          }
  return false;
}

json trace_to_replay_json(const Trace& t) {
  json doc = trace_to_json(t);
  const Problem& p = t.problem;
  json steps = json::array();
  for (const Step& s : t.steps) {
    json writes = writes_json(s.writes);
    json st = {{"split", s.split},
               {"flops_total", s.flops_total},
               {"sram_elems", counts_json(s.sram_elems)},
               {"tensor_read", counts_json(s.tensor_read)},
               {"tensor_written", counts_json(s.tensor_written)},
               {"masked", s.masked},
               {"tile", mat_json(s.tile)},
               {"O_i", mat_json(s.O_i)},
               {"dropout_keep", mat_json(s.dropout_keep)},
               {"writes", std::move(writes)}};
    for (const auto& [key, v] : {std::pair<const char*, const Vec*>{"m_tilde", &s.m_tilde}, {"l_tilde", &s.l_tilde},
                                 {"m_old", &s.m_old}, {"l_old", &s.l_old}, {"m_new", &s.m_new}, {"l_new", &s.l_new},
                                 {"alpha", &s.alpha}, {"beta", &s.beta}, {"D_i", &s.D_i}})
      if (v->size()) st[key] = vec_json(*v);
    if (!s.pages.empty()) st["pages"] = s.pages;
    steps.push_back(std::move(st));
  }
  doc["replay"] = {
      {"format", kFormat},
      {"version", kVersion},
      {"mask",
       {{"causal", p.mask.causal}, {"window_left", p.mask.window_left}, {"window_right", p.mask.window_right},
        {"kv_len", p.mask.kv_len}}},
      {"dropout", p.dropout},
      {"tiling", {{"S", t.tiling.S}, {"P", t.tiling.P}, {"tile_capacity", t.tiling.tile_capacity},
                  {"overridden", t.tiling.overridden}, {"br", p.br}, {"bc", p.bc}}},
      {"Q", mat_json(p.Q)},
      {"K", mat_json(p.K)},
      {"V", mat_json(p.V)},
      {"O", mat_json(t.O)},
      {"lse", vec_json(t.lse)},
      {"traffic", traffic_json(t.totals.traffic)},
      {"hbm_before", writes_json(t.hbm_before)},
      {"steps", std::move(steps)}};
  return doc;
}

Trace trace_from_replay_json(const json& doc, const std::string& source) {
  const Reader r{source};
  if (!doc.is_object() || !doc.contains("problem") || !doc.contains("steps"))
    throw InputError(source + ": not a flashstep trace (no \"problem\" and \"steps\")");
  if (!doc.contains("replay"))
    throw InputError(source + ": a trace without its \"replay\" section (inputs and HBM writes); write it with "
                              "flashstep's Python module (result.save_trace) or a puzzle's trace.save");
  const json& rp = doc["replay"];
  if (r.text(rp, "format", "replay") != kFormat) r.fail("replay.format", "is not \"" + std::string(kFormat) + "\"");
  if (r.integer(rp, "version", "replay") != kVersion) r.fail("replay.version", "is not " + std::to_string(kVersion));

  Trace t;
  Problem& p = t.problem;
  const json& pj = r.member(doc, "problem", "trace");
  p.nq = r.integer(pj, "nq", "problem");
  p.nk = r.integer(pj, "nk", "problem");
  p.d = r.integer(pj, "d", "problem");
  p.M = r.integer(pj, "M", "problem");
  if (p.nq < 1 || p.nk < 1 || p.d < 1 || p.M < 1) r.fail("problem", "has a size below 1");
  p.scale = r.number(r.member(pj, "scale", "problem"), "problem.scale");
  p.schedule = parse_schedule(r.text(pj, "schedule", "problem"));
  p.dtype = parse_dtype(r.text(pj, "dtype", "problem"));
  p.p_dtype = parse_dtype(r.text(pj, "p_dtype", "problem"));
  p.bytes_per_elem = dtype_bytes(p.dtype);
  p.seed = uint64_t(r.integer(pj, "seed", "problem"));
  p.pattern = r.text(pj, "pattern", "problem");
  p.splits = r.integer_or(pj, "splits", "problem", 1);
  p.page_size = r.integer_or(pj, "page_size", "problem", 0);
  if (r.member(pj, "backward", "problem") != false)
    r.fail("problem.backward", "is true: a trace with the backward pass cannot be opened from a file");
  const json& mj = r.member(rp, "mask", "replay");
  p.mask.causal = r.member(mj, "causal", "replay.mask") == true;
  p.mask.window_left = r.integer(mj, "window_left", "replay.mask");
  p.mask.window_right = r.integer(mj, "window_right", "replay.mask");
  p.mask.kv_len = r.integer(mj, "kv_len", "replay.mask");
  p.mask.offset = p.nk - p.nq;
  p.dropout = r.number(r.member(rp, "dropout", "replay"), "replay.dropout");
  validate_options(p.options(), p.nk);
  p.Q = r.mat_shaped(r.member(rp, "Q", "replay"), "replay.Q", p.nq, p.d);
  p.K = r.mat_shaped(r.member(rp, "K", "replay"), "replay.K", p.nk, p.d);
  p.V = r.mat_shaped(r.member(rp, "V", "replay"), "replay.V", p.nk, p.d);

  Tiling& tl = t.tiling;
  const json& tj = r.member(rp, "tiling", "replay");
  tl.Br = r.integer(pj, "Br", "problem");
  tl.Bc = r.integer(pj, "Bc", "problem");
  tl.Tr = r.integer(pj, "Tr", "problem");
  tl.Tc = r.integer(pj, "Tc", "problem");
  if (tl.Br < 1 || tl.Bc < 1 || tl.Tr != (p.nq + tl.Br - 1) / tl.Br || tl.Tc != (p.nk + tl.Bc - 1) / tl.Bc)
    r.fail("problem", "has block sizes that do not tile Nq x Nk (Br, Bc, Tr, Tc)");
  tl.M = p.M;
  tl.S = r.integer(tj, "S", "replay.tiling");
  tl.P = r.integer(tj, "P", "replay.tiling");
  tl.tile_capacity = r.integer(tj, "tile_capacity", "replay.tiling");
  tl.overridden = r.member(tj, "overridden", "replay.tiling") == true;
  p.br = r.integer(tj, "br", "replay.tiling");
  p.bc = r.integer(tj, "bc", "replay.tiling");

  t.O = r.mat_shaped(r.member(rp, "O", "replay"), "replay.O", p.nq, p.d);
  t.lse = r.vec(r.member(rp, "lse", "replay"), "replay.lse");
  if (t.lse.size() != p.nq) r.fail("replay.lse", "does not hold Nq values");
  t.totals = totals_from(r, r.member(doc, "totals", "trace"), "totals");
  const json& traffic = r.member(rp, "traffic", "replay");
  r.counts(traffic, "read", "replay.traffic", t.totals.traffic.read);
  r.counts(traffic, "written", "replay.traffic", t.totals.traffic.written);

  const json& steps = doc["steps"];
  const json& extra = r.member(rp, "steps", "replay");
  if (!steps.is_array() || !extra.is_array() || steps.size() != extra.size())
    r.fail("replay.steps", "does not have one entry per step");
  t.steps.resize(steps.size());
  for (size_t k = 0; k < steps.size(); ++k) {
    const std::string w = "steps[" + std::to_string(k) + "]", wx = "replay." + w;
    const json& sj = steps[k];
    const json& xj = extra[k];
    Step& s = t.steps[k];
    const std::string label = r.text(sj, "label", w);
    if (!line_from_label(label, s.line)) r.fail(w + ".label", "is not a pseudocode line of flashstep (" + excerpt(label) + ")");
    if (is_backward_line(s.line)) r.fail(w + ".label", "is a line of a backward pass, which a trace file cannot hold");
    s.i = int32_t(r.integer(sj, "i", w));
    s.j = int32_t(r.integer(sj, "j", w));
    if (s.i < -1 || s.i >= tl.Tr || s.j < -1 || s.j >= tl.Tc) r.fail(w, "has i or j outside the tiling");
    s.split = int32_t(r.integer(xj, "split", wx));
    s.hbm_read = r.integer(sj, "hbm_read_bytes", w);
    s.hbm_write = r.integer(sj, "hbm_write_bytes", w);
    s.hbm_read_total = r.integer(sj, "hbm_read_total", w);
    s.hbm_write_total = r.integer(sj, "hbm_write_total", w);
    s.dram_read = r.integer_or(sj, "dram_read_bytes", w, s.hbm_read);
    s.dram_write = r.integer_or(sj, "dram_write_bytes", w, s.hbm_write);
    s.dram_read_total = r.integer_or(sj, "dram_read_total", w, s.hbm_read_total);
    s.dram_write_total = r.integer_or(sj, "dram_write_total", w, s.hbm_write_total);
    s.flops = r.integer(sj, "flops", w);
    s.flops_total = r.integer(xj, "flops_total", wx);
    s.sram_bytes = r.integer(sj, "sram_bytes", w);
    r.counts(xj, "sram_elems", wx, s.sram_elems);
    r.counts(xj, "tensor_read", wx, s.tensor_read);
    r.counts(xj, "tensor_written", wx, s.tensor_written);
    s.masked = r.member(xj, "masked", wx) == true;
    s.tile = r.mat(r.member(xj, "tile", wx), wx + ".tile");
    s.O_i = r.mat(r.member(xj, "O_i", wx), wx + ".O_i");
    s.dropout_keep = r.mat(r.member(xj, "dropout_keep", wx), wx + ".dropout_keep");
    for (const auto& [key, v] : {std::pair<const char*, Vec*>{"m_tilde", &s.m_tilde}, {"l_tilde", &s.l_tilde},
                                 {"m_old", &s.m_old}, {"l_old", &s.l_old}, {"m_new", &s.m_new}, {"l_new", &s.l_new},
                                 {"alpha", &s.alpha}, {"beta", &s.beta}, {"D_i", &s.D_i}})
      if (xj.contains(key)) *v = r.vec(xj[key], wx + "." + key);
    s.writes = writes_from(r, r.member(xj, "writes", wx), wx + ".writes", p);
  }
  // What HBM held before the first step (a puzzle's setup); a file without it starts empty.
  if (rp.contains("hbm_before")) t.hbm_before = writes_from(r, rp["hbm_before"], "replay.hbm_before", p);
  return t;
}

Trace read_trace_file(const std::string& path) {
  const std::string text = read_input_file(path, "trace", kMaxTraceFileBytes);
  return trace_from_replay_json(parse_json_input(text, path), path);
}

}  // namespace flashstep
