#include "core/trace_file.h"

#include "core/checked.h"
#include "core/export.h"
#include "core/input_files.h"
#include "core/schedule_registry.h"

#include <cmath>
#include <limits>
#include <tuple>

namespace flashstep {

using nlohmann::json;

namespace {

constexpr const char* kFormat = "flashstep-trace-replay";
constexpr int kVersion = 1;
// What the file traces: an attention problem (a file without "kind" too) or one softmax row.
constexpr const char* kKindAttention = "attention";
constexpr const char* kKindRow = "softmax-row";
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
  // 0 .. 2^64 - 1 (a seed): a negative number is refused, not wrapped round.
  uint64_t unsigned_integer(const json& o, const char* key, const std::string& where) const {
    const json& v = member(o, key, where);
    if (!v.is_number_unsigned()) fail(where + "." + key, "is not a whole number from 0 to 2^64 - 1 (" + json_excerpt(v) + ")");
    return v.get<uint64_t>();
  }
  int64_t integer_or(const json& o, const char* key, const std::string& where, int64_t dflt) const {
    return o.is_object() && o.contains(key) ? integer(o, key, where) : dflt;
  }
  // A JSON true or false: "yes", 1 or null are refused, not read as false.
  bool boolean(const json& o, const char* key, const std::string& where) const {
    const json& v = member(o, key, where);
    if (!v.is_boolean()) fail(where + "." + key, "is not true or false (" + json_excerpt(v) + ")");
    return v.get<bool>();
  }
  std::string text(const json& o, const char* key, const std::string& where) const {
    const json& v = member(o, key, where);
    if (!v.is_string()) fail(where + "." + key, "is not a string (" + json_excerpt(v) + ")");
    return v.get<std::string>();
  }
  // A name through its parser (parse_schedule, parse_dtype), whose refusal follows the field.
  template <class Parse>
  auto parsed(const json& o, const char* key, const std::string& where, Parse parse) const {
    const std::string name = text(o, key, where);
    try {
      return parse(name);
    } catch (const InputError& e) {
      fail(where + "." + key, std::string("is refused: ") + e.what());
    }
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

std::string step_placement_error(const Step& s, const Tiling& t) {
  const std::string at = "has i = " + std::to_string(s.i) + ", j = " + std::to_string(s.j);
  if (s.i < -1 || s.i >= t.Tr || s.j < -1 || s.j >= t.Tc)
    return at + ", outside the tiling (Q blocks 0.." + std::to_string(t.Tr - 1) + ", K/V blocks 0.." +
           std::to_string(t.Tc - 1) + "; -1 for none)";
  const LineBlocks need = line_blocks(s.line);
  if ((need.i && s.i < 0) || (need.j && s.j < 0))
    return at + ", but " + line_label(s.line) + " (" + role_name(line_role(s.line)) + ") works on " +
           (need.i && need.j ? "a block pair (i, j)" : need.i ? "a Q block i" : "a K/V block j");
  if (s.i < 0) {
    const std::pair<const char*, bool> values[] = {
        {"a tile", s.tile.size() > 0}, {"O_i", s.O_i.size() > 0}, {"a dropout mask", s.dropout_keep.size() > 0},
        {"m_tilde", s.m_tilde.size() > 0}, {"l_tilde", s.l_tilde.size() > 0}, {"m_old", s.m_old.size() > 0},
        {"l_old", s.l_old.size() > 0}, {"m_new", s.m_new.size() > 0}, {"l_new", s.l_new.size() > 0},
        {"alpha", s.alpha.size() > 0}, {"beta", s.beta.size() > 0}, {"D_i", s.D_i.size() > 0}};
    for (const auto& [name, present] : values)
      if (present) return at + ": on-chip values (" + std::string(name) + ") without a Q block to draw them at";
  }
  return "";
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
      {"kind", kKindAttention},
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
  if (t.has_backward) {  // the backward's input and gradients, each pass's traffic (the phases)
    json& rp = doc["replay"];
    rp["dO"] = mat_json(t.dO);
    rp["dQ"] = mat_json(t.dQ);
    rp["dK"] = mat_json(t.dK);
    rp["dV"] = mat_json(t.dV);
    rp["forward_traffic"] = traffic_json(t.forward_totals.traffic);
    rp["backward_traffic"] = traffic_json(t.backward_totals.traffic);
  }
  return doc;
}

namespace {

// The problem as `run` would make it, checked by run's own validate_sizes (core/problem.cpp):
// each size within its limit, M at least 4d, the block sizes within M, decode's S and page size,
// a finite float32 scale, the mask, dropout below 1 as a float32, the storage type the schedule
// has, P~'s type allowed beside it, the fp8 scales and rotation only with fp8 (the rotation
// with d a power of two). The fields join the spec one at a time, each after those it depends on
// (first_refused_field, core/problem.h), so that the first refusal is that of the field it
// names; the reason is run's.
void check_as_run(const Reader& r, const Problem& p) {
  // S = 0 is run's "the default S" (--splits not given): a trace records the S it ran with.
  if (p.splits < 1) r.fail("problem.splits", "is " + std::to_string(p.splits) + ", below 1");
  ProblemSpec start = sizes_spec(1, 1, 1, kMaxSram);  // a problem run accepts, before any field
  start.schedule = p.schedule;
  const std::optional<RefusedField> refused = first_refused_field(start, {
      {"problem.nq", [&](ProblemSpec& s) { s.nq = p.nq; }},
      {"problem.nk", [&](ProblemSpec& s) { s.nk = p.nk; }},
      {"problem.d", [&](ProblemSpec& s) { s.d = p.d; }},
      {"problem.M", [&](ProblemSpec& s) { s.M = p.M; }},
      {"replay.tiling.br, bc", [&](ProblemSpec& s) {
         s.br = p.br;
         s.bc = p.bc;
       }},
      // decode's S as run --splits gives it; 1 (the file's default) for every other schedule
      {"problem.splits", [&](ProblemSpec& s) { s.splits = p.splits == 1 && p.schedule != Schedule::decode ? 0 : p.splits; }},
      {"problem.page_size", [&](ProblemSpec& s) { if (p.page_size != 0) s.page_size = p.page_size; }},
      {"problem.scale", [&](ProblemSpec& s) { s.scale = p.scale; }},
      {"replay.mask", [&](ProblemSpec& s) { s.options.mask = p.mask; }},
      {"replay.dropout", [&](ProblemSpec& s) { s.options.dropout = p.dropout; }},
      {"problem.dtype", [&](ProblemSpec& s) { s.options.dtype = p.dtype; }},
      {"problem.p_dtype", [&](ProblemSpec& s) { s.options.p_dtype = p.p_dtype; }},
      {"problem.fp8_scale", [&](ProblemSpec& s) { s.options.fp8_scale = p.fp8_scale; }},
      {"problem.rotate", [&](ProblemSpec& s) { s.options.rotate = p.rotate; }}});
  if (refused) r.fail(refused->name, "makes a problem that run refuses: " + refused->reason);
}

// A step's counts are never negative, and each running total (hbm_read_total, ..., as
// trace.h has them) is the previous step's plus this step's bytes, as every run and a puzzle's
// save record them: the app shows them as the bytes moved so far.
void check_step_bytes(const Reader& r, const Step& s, const std::string& w, const Step* before) {
  const std::pair<const char*, int64_t> counts[] = {
      {"hbm_read_bytes", s.hbm_read},   {"hbm_write_bytes", s.hbm_write}, {"dram_read_bytes", s.dram_read},
      {"dram_write_bytes", s.dram_write}, {"flops", s.flops},           {"sram_bytes", s.sram_bytes}};
  for (const auto& [key, v] : counts)
    if (v < 0) r.fail(w + "." + key, "is " + std::to_string(v) + ", below 0");
  const std::tuple<const char*, int64_t, int64_t, int64_t> totals[] = {
      {"hbm_read", s.hbm_read, s.hbm_read_total, before ? before->hbm_read_total : 0},
      {"hbm_write", s.hbm_write, s.hbm_write_total, before ? before->hbm_write_total : 0},
      {"dram_read", s.dram_read, s.dram_read_total, before ? before->dram_read_total : 0},
      {"dram_write", s.dram_write, s.dram_write_total, before ? before->dram_write_total : 0}};
  for (const auto& [name, bytes, total, earlier] : totals)  // earlier >= 0: checked at its step
    if (total < earlier || total - earlier != bytes)
      r.fail(w + "." + name + "_total", "is " + std::to_string(total) + ", not the running sum of the steps' " + name +
                                            "_bytes (" + std::to_string(earlier) + " so far plus this step's " +
                                            std::to_string(bytes) + ")");
}

// A pass's totals (`totals`, or one phase's) against its steps [begin, end), as run and a puzzle's
// save write them: no count below 0; `steps` the number of steps; each byte and FLOP count at
// least the steps' running sum over the pass (the steps' *_total at its last step, less
// `before`: the totals of the passes before it), and peak_sram_bytes at least every step's
// sram_bytes. At least, not equal: a writer may count what no step carries (with the L2 model,
// dram_write_bytes adds the final write-back of dirty lines). Totals below their steps would have
// the app show more bytes moved at a step than in the whole run.
// dram: whether the DRAM counts are checked too; not for phases.backward, whose DRAM counts
// (equal to its HBM bytes: the backward has no L2 model) earlier versions of run wrote as 0.
void check_totals(const Reader& r, const Totals& T, const std::string& where, const std::vector<Step>& steps,
                  size_t begin, size_t end, const Totals& before, bool dram = true) {
  const std::pair<const char*, int64_t> counts[] = {
      {"hbm_read_bytes", T.hbm_read_bytes},   {"hbm_write_bytes", T.hbm_write_bytes}, {"flops", T.flops},
      {"peak_sram_bytes", T.peak_sram_bytes}, {"peak_tile_bytes", T.peak_tile_bytes}, {"steps", T.steps},
      {"dram_read_bytes", T.dram_read_bytes}, {"dram_write_bytes", T.dram_write_bytes}};
  for (const auto& [key, v] : counts)
    if (v < 0) r.fail(where + "." + key, "is " + std::to_string(v) + ", below 0");
  if (T.steps != int64_t(end - begin))
    r.fail(where + ".steps", "is " + std::to_string(T.steps) + " where the pass has " + std::to_string(end - begin) +
                                 " steps");
  if (begin == end) return;
  const Step& last = steps[end - 1];
  const std::string at = "steps[" + std::to_string(end - 1) + "]";
  const std::tuple<const char*, int64_t, const char*, int64_t, int64_t> sums[] = {
      {"hbm_read_bytes", T.hbm_read_bytes, "hbm_read_total", last.hbm_read_total, before.hbm_read_bytes},
      {"hbm_write_bytes", T.hbm_write_bytes, "hbm_write_total", last.hbm_write_total, before.hbm_write_bytes},
      {"dram_read_bytes", T.dram_read_bytes, "dram_read_total", last.dram_read_total, before.dram_read_bytes},
      {"dram_write_bytes", T.dram_write_bytes, "dram_write_total", last.dram_write_total, before.dram_write_bytes},
      {"flops", T.flops, "flops_total", last.flops_total, before.flops}};
  for (const auto& [key, v, step_key, total, earlier] : sums)  // v, earlier >= 0: checked above
    if ((dram || std::string(key).rfind("dram", 0) != 0) && total > earlier && v < total - earlier)
      r.fail(where + "." + key, "is " + std::to_string(v) + ", below the steps' running sum (" + at + "." + step_key +
                                    " = " + std::to_string(total) +
                                    (earlier ? " less the earlier pass's " + std::to_string(earlier) : std::string()) +
                                    ")");
  for (size_t k = begin; k < end; ++k)
    if (steps[k].sram_bytes > T.peak_sram_bytes)
      r.fail(where + ".peak_sram_bytes", "is " + std::to_string(T.peak_sram_bytes) + ", below steps[" +
                                             std::to_string(k) + "].sram_bytes = " + std::to_string(steps[k].sram_bytes));
}

// An attention trace: the problem, its steps (labelled with core's lines) and, when the
// backward follows, its phases, dO and gradients.
Trace attention_from(const Reader& r, const json& doc) {
  const json& rp = doc["replay"];
  Trace t;
  Problem& p = t.problem;
  const json& pj = r.member(doc, "problem", "trace");
  p.nq = r.integer(pj, "nq", "problem");
  p.nk = r.integer(pj, "nk", "problem");
  p.d = r.integer(pj, "d", "problem");
  p.M = r.integer(pj, "M", "problem");
  p.scale = r.number(r.member(pj, "scale", "problem"), "problem.scale");
  p.schedule = r.parsed(pj, "schedule", "problem", parse_schedule);
  p.dtype = r.parsed(pj, "dtype", "problem", parse_dtype);
  p.p_dtype = r.parsed(pj, "p_dtype", "problem", parse_dtype);
  p.bytes_per_elem = dtype_bytes(p.dtype);
  p.seed = r.unsigned_integer(pj, "seed", "problem");
  p.pattern = r.text(pj, "pattern", "problem");
  p.splits = r.integer_or(pj, "splits", "problem", 1);
  p.page_size = r.integer_or(pj, "page_size", "problem", 0);
  // --dtype fp8's scales and rotation (docs/fp8.md), which run writes for an fp8 problem only:
  // the app quantises the inputs again from them, so an fp8 trace without them is refused, not
  // read as per-tensor and unrotated. Another type's trace may carry them only as run accepts.
  if (p.dtype == Dtype::fp8 || pj.contains("fp8_scale"))
    p.fp8_scale = r.parsed(pj, "fp8_scale", "problem", parse_fp8_scale);
  if (p.dtype == Dtype::fp8 || pj.contains("rotate")) p.rotate = r.boolean(pj, "rotate", "problem");
  const bool backward = r.boolean(pj, "backward", "problem");
  const json& mj = r.member(rp, "mask", "replay");
  p.mask.causal = r.boolean(mj, "causal", "replay.mask");
  p.mask.window_left = r.integer(mj, "window_left", "replay.mask");
  p.mask.window_right = r.integer(mj, "window_right", "replay.mask");
  p.mask.kv_len = r.integer(mj, "kv_len", "replay.mask");
  p.mask.offset = p.nk - p.nq;
  p.dropout = r.number(r.member(rp, "dropout", "replay"), "replay.dropout");
  const json& tj = r.member(rp, "tiling", "replay");
  p.br = r.integer(tj, "br", "replay.tiling");
  p.bc = r.integer(tj, "bc", "replay.tiling");
  check_as_run(r, p);
  p.Q = r.mat_shaped(r.member(rp, "Q", "replay"), "replay.Q", p.nq, p.d);
  p.K = r.mat_shaped(r.member(rp, "K", "replay"), "replay.K", p.nk, p.d);
  p.V = r.mat_shaped(r.member(rp, "V", "replay"), "replay.V", p.nk, p.d);

  // The tiling as recorded, which must be the one run makes of the problem: the app draws the
  // blocks from it.
  Tiling& tl = t.tiling;
  tl = make_tiling(p);  // check_as_run has accepted it
  const std::pair<const json*, std::pair<const char*, int64_t*>> sizes[] = {
      {&pj, {"Br", &tl.Br}}, {&pj, {"Bc", &tl.Bc}}, {&pj, {"Tr", &tl.Tr}}, {&pj, {"Tc", &tl.Tc}},
      {&tj, {"S", &tl.S}},   {&tj, {"P", &tl.P}},   {&tj, {"tile_capacity", &tl.tile_capacity}}};
  for (const auto& [obj, field] : sizes) {
    const std::string where = obj == &pj ? "problem" : "replay.tiling";
    const int64_t got = r.integer(*obj, field.first, where);
    if (got != *field.second)
      r.fail(where + "." + field.first, "is " + std::to_string(got) + " where run's tiling of the problem has " +
                                            std::to_string(*field.second));
  }
  if (r.boolean(tj, "overridden", "replay.tiling") != tl.overridden)
    r.fail("replay.tiling.overridden", std::string("is ") + (tl.overridden ? "false" : "true") +
                                           " where replay.tiling.br and bc say " + (tl.overridden ? "true" : "false"));

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
  // The backward: its steps follow the forward's from phases.backward.first_step on, each pass
  // with its own totals and traffic; dO its input, dQ, dK, dV what it left in HBM (dQ may be
  // absent: a puzzle's backward of one K/V block computes dK_j, dV_j only).
  size_t first_backward = steps.size();
  if (backward) {
    const json& ph = r.member(doc, "phases", "trace");
    const json& fb = r.member(ph, "backward", "phases");
    const int64_t first = r.integer(fb, "first_step", "phases.backward");
    if (first < 0 || size_t(first) > steps.size()) r.fail("phases.backward.first_step", "is not a step of the trace");
    first_backward = size_t(first);
    t.has_backward = true;
    t.backward_first_step = first_backward;
    t.forward_totals = totals_from(r, r.member(ph, "forward", "phases"), "phases.forward");
    t.backward_totals = totals_from(r, fb, "phases.backward");
    for (const auto& [key, totals] : {std::pair<const char*, Totals*>{"forward_traffic", &t.forward_totals},
                                      {"backward_traffic", &t.backward_totals}}) {
      const json& tj = r.member(rp, key, "replay");
      r.counts(tj, "read", std::string("replay.") + key, totals->traffic.read);
      r.counts(tj, "written", std::string("replay.") + key, totals->traffic.written);
    }
    if (!schedule_info(p.schedule).backward_lines)
      r.fail("problem.schedule", "has no backward pass, but problem.backward is true");
    t.dO = r.mat_shaped(r.member(rp, "dO", "replay"), "replay.dO", p.nq, p.d);
    t.dK = r.mat_shaped(r.member(rp, "dK", "replay"), "replay.dK", p.nk, p.d);
    t.dV = r.mat_shaped(r.member(rp, "dV", "replay"), "replay.dV", p.nk, p.d);
    if (!r.member(rp, "dQ", "replay").is_null()) t.dQ = r.mat_shaped(rp["dQ"], "replay.dQ", p.nq, p.d);
  }
  t.steps.resize(steps.size());
  for (size_t k = 0; k < steps.size(); ++k) {
    const std::string w = "steps[" + std::to_string(k) + "]", wx = "replay." + w;
    const json& sj = steps[k];
    const json& xj = extra[k];
    Step& s = t.steps[k];
    const std::string label = r.text(sj, "label", w);
    if (!line_from_label(label, s.line)) r.fail(w + ".label", "is not a pseudocode line of flashstep (" + excerpt(label) + ")");
    if (k < first_backward && is_backward_line(s.line))
      r.fail(w + ".label", backward ? "is a line of a backward pass before phases.backward.first_step"
                                    : "is a line of a backward pass in a trace without one (problem.backward is false)");
    if (k >= first_backward && &line_algorithm(s.line) != schedule_info(p.schedule).backward_lines)
      r.fail(w + ".label", "is not a line of " + std::string(schedule_info(p.schedule).backward_lines->title));
    // The app shows each step's sentence beside the schedule's own listing: another algorithm's
    // line would highlight a line of the same number that says something else.
    if (k < first_backward && !is_backward_line(s.line) &&
        &line_algorithm(s.line) != schedule_info(p.schedule).forward_lines)
      r.fail(w + ".label", "is not a line of " + std::string(schedule_info(p.schedule).forward_lines->title) + " (" +
                               excerpt(label) + ")");
    s.i = int32_t(r.integer(sj, "i", w));
    s.j = int32_t(r.integer(sj, "j", w));
    if (s.i < -1 || s.i >= tl.Tr || s.j < -1 || s.j >= tl.Tc) r.fail(w, step_placement_error(s, tl));
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
    check_step_bytes(r, s, w, k == 0 ? nullptr : &t.steps[k - 1]);
    r.counts(xj, "sram_elems", wx, s.sram_elems);
    r.counts(xj, "tensor_read", wx, s.tensor_read);
    r.counts(xj, "tensor_written", wx, s.tensor_written);
    s.masked = r.boolean(xj, "masked", wx);
    s.tile = r.mat(r.member(xj, "tile", wx), wx + ".tile");
    s.O_i = r.mat(r.member(xj, "O_i", wx), wx + ".O_i");
    s.dropout_keep = r.mat(r.member(xj, "dropout_keep", wx), wx + ".dropout_keep");
    for (const auto& [key, v] : {std::pair<const char*, Vec*>{"m_tilde", &s.m_tilde}, {"l_tilde", &s.l_tilde},
                                 {"m_old", &s.m_old}, {"l_old", &s.l_old}, {"m_new", &s.m_new}, {"l_new", &s.l_new},
                                 {"alpha", &s.alpha}, {"beta", &s.beta}, {"D_i", &s.D_i}})
      if (xj.contains(key)) *v = r.vec(xj[key], wx + "." + key);
    if (const std::string bad = step_placement_error(s, tl); !bad.empty()) r.fail(w, bad);
    // What the app draws at the step's blocks: a row statistic has a value per row of Q_i, O_i is
    // Q_i's rows by d, and a tile has Q_i's or K_j's rows and at most Nk columns (S_ij, a row
    // block of S, an accumulator of K_j's rows by d).
    if (s.i >= 0) {
      const int64_t rows = tl.rows_in_q_block(s.i, p.nq);
      for (const auto& [key, v] : {std::pair<const char*, const Vec*>{"m_tilde", &s.m_tilde}, {"l_tilde", &s.l_tilde},
                                   {"m_old", &s.m_old}, {"l_old", &s.l_old}, {"m_new", &s.m_new}, {"l_new", &s.l_new},
                                   {"alpha", &s.alpha}, {"beta", &s.beta}, {"D_i", &s.D_i}})
        if (v->size() && v->size() != rows)
          r.fail(wx + "." + key, "has " + std::to_string(v->size()) + " values where Q block " + std::to_string(s.i) +
                                     " has " + std::to_string(rows) + " rows");
      if (s.O_i.size() && (s.O_i.rows() != rows || s.O_i.cols() > std::max(p.d, p.nk)))
        r.fail(wx + ".O_i", "is not Q block " + std::to_string(s.i) + "'s rows by at most max(d, Nk) columns");
      const int64_t kv_rows = s.j >= 0 ? tl.rows_in_kv_block(s.j, p.nk) : -1;
      if (s.tile.size() && ((s.tile.rows() != rows && s.tile.rows() != kv_rows) || s.tile.cols() > std::max(p.d, p.nk)))
        r.fail(wx + ".tile", "is " + std::to_string(s.tile.rows()) + " x " + std::to_string(s.tile.cols()) +
                                 ", not a tile of the step's blocks (i = " + std::to_string(s.i) + ", j = " +
                                 std::to_string(s.j) + ")");
    }
    s.writes = writes_from(r, r.member(xj, "writes", wx), wx + ".writes", p);
  }
  check_totals(r, t.totals, "totals", t.steps, 0, t.steps.size(), Totals{});
  if (backward) {
    check_totals(r, t.forward_totals, "phases.forward", t.steps, 0, first_backward, Totals{});
    check_totals(r, t.backward_totals, "phases.backward", t.steps, first_backward, t.steps.size(), t.forward_totals,
                 false);
  }
  // What HBM held before the first step (a puzzle's setup); a file without it starts empty.
  if (rp.contains("hbm_before")) t.hbm_before = writes_from(r, rp["hbm_before"], "replay.hbm_before", p);
  return t;
}

// [SECTION] a softmax row (core/row_trace.h)

json row_writes_json(const std::vector<RowWrite>& writes) {
  json out = json::array();
  for (const RowWrite& w : writes)
    out.push_back({{"tensor", row_tensor_name(w.tensor)}, {"row0", w.begin}, {"data", vec_json(w.data)}});
  return out;
}

// The "tensor" of an access at `where`: one of the row's.
RowTensor row_tensor_at(const Reader& r, const json& access, const std::string& where) {
  const std::string name = r.text(access, "tensor", where);
  RowTensor t;
  if (!row_tensor_from_name(name, t)) r.fail(where + ".tensor", "is not x, y, m or l (" + excerpt(name) + ")");
  return t;
}

std::vector<RowWrite> row_writes_from(const Reader& r, const json& writes, const std::string& where, int64_t n) {
  if (!writes.is_array()) r.fail(where, "is not an array");
  std::vector<RowWrite> out;
  for (size_t k = 0; k < writes.size(); ++k) {
    const std::string ww = where + "[" + std::to_string(k) + "]";
    RowWrite w;
    w.tensor = row_tensor_at(r, writes[k], ww);
    w.begin = r.integer(writes[k], "row0", ww);
    const int64_t size = row_tensor_size(w.tensor, n);
    if (w.begin < 0 || w.begin >= size)  // before the sum below, which could overflow
      r.fail(ww + ".row0", "is " + std::to_string(w.begin) + ", outside " + row_tensor_name(w.tensor) + " (" +
                               std::to_string(size) + (size == 1 ? " value)" : " values)"));
    w.data = r.vec(r.member(writes[k], "data", ww), ww + ".data");
    check_row_access(w.tensor, w.begin, w.begin + w.data.size(), n, r.source + ": " + ww);
    out.push_back(std::move(w));
  }
  return out;
}

// The row's bytes are a consequence of its accesses: each step's bytes are checked against its
// loads and stores, and the totals against the steps'.
RowTrace row_from(const Reader& r, const json& doc) {
  const json& rp = doc["replay"];
  const json& rj = r.member(doc, "row", "trace");
  RowTrace t;
  const int64_t n = r.integer(rj, "n", "row");
  if (n < 1 || n > kMaxRowLength) r.fail("row.n", "must be in 1.." + std::to_string(kMaxRowLength) + " (got " + std::to_string(n) + ")");
  t.block = r.integer(rj, "block", "row");
  if (t.block < 1 || t.block > n) r.fail("row.block", "must be in 1..N = " + std::to_string(n) + " (got " + std::to_string(t.block) + ")");
  if (r.integer(rj, "bytes_per_elem", "row") != kRowElemBytes)
    r.fail("row.bytes_per_elem", "is not " + std::to_string(kRowElemBytes) + " (the row is float32)");
  t.x = r.vec(r.member(rp, "x", "replay"), "replay.x");
  if (t.x.size() != n) r.fail("replay.x", "holds " + std::to_string(t.x.size()) + " values where row.n is " + std::to_string(n));
  for (int64_t k = 0; k < n; ++k)
    if (!std::isfinite(t.x(k))) r.fail("replay.x[" + std::to_string(k) + "]", "is not finite (the lesson takes a finite row)");
  t.hbm_before = row_writes_from(r, r.member(rp, "hbm_before", "replay"), "replay.hbm_before", n);

  const json& steps = doc["steps"];
  const json& extra = r.member(rp, "steps", "replay");
  if (!steps.is_array() || !extra.is_array() || steps.size() != extra.size())
    r.fail("replay.steps", "does not have one entry per step");
  int64_t read_total = 0, write_total = 0;
  for (size_t k = 0; k < steps.size(); ++k) {
    const std::string w = "steps[" + std::to_string(k) + "]", wx = "replay." + w;
    RowStep s;
    s.label = r.text(steps[k], "label", w);
    check_row_label(s.label, r.source + ": " + w + ".label");
    s.read = r.integer(steps[k], "hbm_read_bytes", w);
    s.write = r.integer(steps[k], "hbm_write_bytes", w);
    s.read_total = r.integer(steps[k], "hbm_read_total", w);
    s.write_total = r.integer(steps[k], "hbm_write_total", w);
    const json& loads = r.member(extra[k], "loads", wx);
    if (!loads.is_array()) r.fail(wx + ".loads", "is not an array");
    int64_t loaded = 0, stored = 0;
    for (size_t a = 0; a < loads.size(); ++a) {
      const std::string wl = wx + ".loads[" + std::to_string(a) + "]";
      RowLoad l;
      l.tensor = row_tensor_at(r, loads[a], wl);
      l.begin = r.integer(loads[a], "begin", wl);
      l.end = r.integer(loads[a], "end", wl);
      check_row_access(l.tensor, l.begin, l.end, n, r.source + ": " + wl);
      loaded += l.end - l.begin;
      s.loads.push_back(l);
    }
    s.stores = row_writes_from(r, r.member(extra[k], "stores", wx), wx + ".stores", n);
    for (const RowWrite& st : s.stores) stored += st.data.size();
    if (s.read != loaded * kRowElemBytes)
      r.fail(w + ".hbm_read_bytes", "is " + std::to_string(s.read) + " where the step's loads move " +
                                        std::to_string(loaded * kRowElemBytes) + " bytes");
    if (s.write != stored * kRowElemBytes)
      r.fail(w + ".hbm_write_bytes", "is " + std::to_string(s.write) + " where the step's stores move " +
                                         std::to_string(stored * kRowElemBytes) + " bytes");
    read_total += s.read;
    write_total += s.write;
    if (s.read_total != read_total || s.write_total != write_total)
      r.fail(w, "has totals that are not the sum of the steps' bytes so far");
    t.steps.push_back(std::move(s));
  }
  const json& totals = r.member(doc, "totals", "trace");
  if (r.integer(totals, "hbm_read_bytes", "totals") != read_total || r.integer(totals, "hbm_write_bytes", "totals") != write_total)
    r.fail("totals", "do not equal the steps' bytes");
  t.peak_sram_bytes = r.integer(totals, "peak_sram_bytes", "totals");
  return t;
}

}  // namespace

json row_trace_to_replay_json(const RowTrace& t) {
  json steps = json::array(), extra = json::array();
  for (size_t k = 0; k < t.steps.size(); ++k) {
    const RowStep& s = t.steps[k];
    steps.push_back({{"index", k}, {"label", s.label}, {"hbm_read_bytes", s.read}, {"hbm_write_bytes", s.write},
                     {"hbm_read_total", s.read_total}, {"hbm_write_total", s.write_total}});
    json loads = json::array();
    for (const RowLoad& l : s.loads)
      loads.push_back({{"tensor", row_tensor_name(l.tensor)}, {"begin", l.begin}, {"end", l.end}});
    extra.push_back({{"loads", std::move(loads)}, {"stores", row_writes_json(s.stores)}});
  }
  const int64_t rd = t.steps.empty() ? 0 : t.steps.back().read_total;
  const int64_t wr = t.steps.empty() ? 0 : t.steps.back().write_total;
  return {{"row", {{"n", t.n()}, {"block", t.block}, {"blocks", (t.n() + t.block - 1) / t.block},
                   {"bytes_per_elem", kRowElemBytes}}},
          {"steps", std::move(steps)},
          {"totals", {{"hbm_read_bytes", rd}, {"hbm_write_bytes", wr}, {"peak_sram_bytes", t.peak_sram_bytes},
                      {"steps", t.steps.size()}}},
          {"replay", {{"format", kFormat},
                      {"version", kVersion},
                      {"kind", kKindRow},
                      {"x", vec_json(t.x)},
                      {"hbm_before", row_writes_json(t.hbm_before)},
                      {"steps", std::move(extra)}}}};
}

TraceFile trace_file_from_json(const json& doc, const std::string& source) {
  const Reader r{source};
  if (!doc.is_object() || !(doc.contains("problem") || doc.contains("row")) || !doc.contains("steps"))
    throw InputError(source + ": not a flashstep trace (no \"problem\" and \"steps\")");
  if (!doc.contains("replay"))
    throw InputError(source + ": a trace without its \"replay\" section (inputs and HBM writes); write it with "
                              "flashstep's Python module (result.save_trace) or a puzzle's trace.save");
  const json& rp = doc["replay"];
  if (r.text(rp, "format", "replay") != kFormat) r.fail("replay.format", "is not \"" + std::string(kFormat) + "\"");
  if (r.integer(rp, "version", "replay") != kVersion) r.fail("replay.version", "is not " + std::to_string(kVersion));
  const std::string kind = rp.is_object() && rp.contains("kind") ? r.text(rp, "kind", "replay") : kKindAttention;
  TraceFile f;
  if (kind == kKindRow) {
    f.kind = TraceKind::softmax_row;
    f.row = row_from(r, doc);
  } else if (kind == kKindAttention) {
    f.trace = attention_from(r, doc);
  } else {
    r.fail("replay.kind", "is not \"" + std::string(kKindAttention) + "\" or \"" + kKindRow + "\" (" + excerpt(kind) + ")");
  }
  return f;
}

Trace trace_from_replay_json(const json& doc, const std::string& source) {
  TraceFile f = trace_file_from_json(doc, source);
  if (f.kind != TraceKind::attention)
    throw InputError(source + ": a softmax row's trace (a puzzle's row), not an attention trace");
  return std::move(f.trace);
}

TraceFile read_any_trace_file(const std::string& path) {
  const std::string text = read_input_file(path, "trace", kMaxTraceFileBytes);
  return trace_file_from_json(parse_json_input(text, path), path);
}

Trace read_trace_file(const std::string& path) {
  const std::string text = read_input_file(path, "trace", kMaxTraceFileBytes);
  return trace_from_replay_json(parse_json_input(text, path), path);
}

}  // namespace flashstep
