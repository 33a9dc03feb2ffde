// Snapshot folders (core/snapshot.h): the problem's identity, the CPU engine's snapshots from
// a recorded trace, the all-or-nothing writer and the validating reader.
#include "core/snapshot.h"

#include "core/checked.h"
#include "core/schedules/decode/decode.h"
#include "core/input_files.h"
#include "core/npy.h"
#include "core/output_files.h"
#include "core/schedule_registry.h"
#include "core/tolerance.h"
#include "core/trace_align.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

namespace flashstep {

using nlohmann::json;

namespace {

constexpr int64_t kNpyHeaderBytes = 128;  // at most, for the shapes written here (npy.cpp)

// FNV-1a, 64 bit, over the bytes of each matrix in turn.
std::string fnv1a_hex(std::initializer_list<const Mat*> mats) {
  uint64_t h = 1469598103934665603ull;
  for (const Mat* m : mats) {
    const auto* b = reinterpret_cast<const unsigned char*>(m->data());
    for (size_t k = 0; k < size_t(m->size()) * sizeof(float); ++k) h = (h ^ b[k]) * 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)h);
  return buf;
}

std::string num(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

}  // namespace

// [SECTION] The problem's identity

SnapshotProblem snapshot_problem(const Problem& p, const Tiling& t, const Mat* dO) {
  SnapshotProblem s;
  s.nq = p.nq;
  s.nk = p.nk;
  s.d = p.d;
  s.M = p.M;
  s.Br = t.Br;
  s.Bc = t.Bc;
  s.Tr = t.Tr;
  s.Tc = t.Tc;
  s.schedule = p.schedule;
  s.dtype = p.dtype;
  s.p_dtype = p.p_dtype;
  s.seed = p.seed;
  s.pattern = p.pattern;
  s.scale = p.scale;
  s.dropout = p.dropout;
  s.mask = p.mask;
  s.splits = std::max<int64_t>(1, t.S);
  s.backward = dO != nullptr;
  s.inputs_hash = dO ? fnv1a_hex({&p.Q, &p.K, &p.V, dO}) : fnv1a_hex({&p.Q, &p.K, &p.V});
  return s;
}

std::string first_difference(const SnapshotProblem& a, const SnapshotProblem& b, const char* an, const char* bn) {
  auto differ = [&](const char* field, const std::string& x, const std::string& y) {
    return std::string(field) + " (" + x + " " + an + ", " + y + " " + bn + ")";
  };
  auto i = [](int64_t v) { return std::to_string(v); };
  const std::pair<const char*, std::pair<int64_t, int64_t>> sizes[] = {
      {"nq", {a.nq, b.nq}}, {"nk", {a.nk, b.nk}}, {"d", {a.d, b.d}}, {"M", {a.M, b.M}},
      {"Br", {a.Br, b.Br}}, {"Bc", {a.Bc, b.Bc}}, {"Tr", {a.Tr, b.Tr}}, {"Tc", {a.Tc, b.Tc}},
      {"splits", {a.splits, b.splits}},
      {"mask.window_left", {a.mask.window_left, b.mask.window_left}},
      {"mask.window_right", {a.mask.window_right, b.mask.window_right}},
      {"mask.kv_len", {a.mask.kv_len, b.mask.kv_len}}};
  if (a.schedule != b.schedule) return differ("schedule", schedule_name(a.schedule), schedule_name(b.schedule));
  for (const auto& [field, v] : sizes)
    if (v.first != v.second) return differ(field, i(v.first), i(v.second));
  if (a.mask.causal != b.mask.causal)
    return differ("mask.causal", a.mask.causal ? "true" : "false", b.mask.causal ? "true" : "false");
  if (a.dtype != b.dtype) return differ("dtype", dtype_name(a.dtype), dtype_name(b.dtype));
  if (a.p_dtype != b.p_dtype) return differ("p_dtype", dtype_name(a.p_dtype), dtype_name(b.p_dtype));
  if (a.scale != b.scale) return differ("scale", num(a.scale), num(b.scale));
  if (a.dropout != b.dropout) return differ("dropout", num(a.dropout), num(b.dropout));
  if (a.backward != b.backward)
    return differ("backward", a.backward ? "true" : "false", b.backward ? "true" : "false");
  if (a.pattern != b.pattern) return differ("pattern", a.pattern, b.pattern);
  if (a.seed != b.seed) return differ("seed", std::to_string(a.seed), std::to_string(b.seed));
  if (a.inputs_hash != b.inputs_hash) return differ("inputs_hash", a.inputs_hash, b.inputs_hash);
  return "";
}

// [SECTION] What each snapshot holds

const char* snapshot_phase_name(SnapshotPhase p) {
  switch (p) {
    case SnapshotPhase::forward: return "forward";
    case SnapshotPhase::backward: return "backward";
    case SnapshotPhase::partials: return "partials";
    case SnapshotPhase::final: return "final";
  }
  return "?";
}

bool has_per_j(const SnapshotProblem& p, SnapshotPhase phase) {
  const ScheduleInfo& info = schedule_info(p.schedule);
  if (phase == SnapshotPhase::forward) return info.forward_snapshots != nullptr;
  return phase == SnapshotPhase::backward && p.backward && info.backward_snapshots;
}

int64_t snapshot_count(const SnapshotProblem& p, SnapshotPhase phase) {
  if (phase == SnapshotPhase::partials) return schedule_splits_kv(p.schedule) && p.splits >= 2 ? p.splits : 0;
  if (phase == SnapshotPhase::final) return 0;
  return has_per_j(p, phase) ? p.Tc : 0;
}

std::vector<TensorSpec> snapshot_tensors(const SnapshotProblem& p, SnapshotPhase phase) {
  if (phase == SnapshotPhase::partials) return {{"O", p.nq, p.d, false}, {"lse", p.nq, 1, true}};
  if (phase == SnapshotPhase::forward) return {{"O", p.nq, p.d, false}, {"l", p.nq, 1, true}, {"m", p.nq, 1, true}};
  if (phase == SnapshotPhase::backward) return {{"dQ", p.nq, p.d, false}};
  std::vector<TensorSpec> f = {{"O", p.nq, p.d, false}, {"lse", p.nq, 1, true}};
  if (p.backward) f.push_back({"dQ", p.nq, p.d, false});
  return f;
}

int64_t snapshot_bytes(const SnapshotProblem& p) {
  auto phase_bytes = [&](SnapshotPhase phase) {
    int64_t b = 0;
    for (const TensorSpec& t : snapshot_tensors(p, phase))
      b = checked::add(b, checked::add(kNpyHeaderBytes, checked::mul(checked::mul(t.rows, t.cols, "snapshot size"),
                                                                     int64_t(sizeof(float)), "snapshot size"),
                                       "snapshot size"),
                       "snapshot size");
    return b;
  };
  int64_t total = phase_bytes(SnapshotPhase::final);
  for (SnapshotPhase phase : kListedPhases)
    if (const int64_t n = snapshot_count(p, phase))
      total = checked::add(total, checked::mul(n, phase_bytes(phase), "snapshot size"), "snapshot size");
  return total;
}

void check_snapshot_size(const SnapshotProblem& p) {
  const int64_t b = snapshot_bytes(p);
  if (b > kMaxSnapshotBytes)
    throw InputError("the snapshots of this problem would take " + std::to_string((b + (1 << 20) - 1) >> 20) +
                     " MiB (Tc = " + std::to_string(p.Tc) + " snapshots of Nq x d = " + std::to_string(p.nq) +
                     " x " + std::to_string(p.d) + "), over the cap of " + std::to_string(kMaxSnapshotBytes >> 20) +
                     " MiB; use larger blocks (--M, --bc) or a smaller problem");
}

const Mat* SnapshotEntry::find(const std::string& name) const {
  for (const SnapshotTensor& t : tensors)
    if (t.name == name) return &t.data;
  return nullptr;
}

std::vector<const SnapshotEntry*> SnapshotSet::phase(SnapshotPhase ph) const {
  std::vector<const SnapshotEntry*> out;
  for (const SnapshotEntry& s : snapshots)
    if (s.phase == ph) out.push_back(&s);
  return out;
}

// [SECTION] The CPU engine's snapshots

namespace {

SnapshotEntry empty_snapshot(const SnapshotProblem& sp, SnapshotPhase phase, int64_t j) {
  SnapshotEntry s;
  s.phase = phase;
  s.j = j;
  for (const TensorSpec& ts : snapshot_tensors(sp, phase)) s.tensors.push_back({ts.name, "", Mat::Zero(ts.rows, ts.cols)});
  return s;
}

}  // namespace

std::vector<SnapshotEntry> partial_snapshots(const SnapshotProblem& p, const std::vector<float>& O_part,
                                             const std::vector<float>& lse_part) {
  std::vector<SnapshotEntry> out;
  const int64_t S = snapshot_count(p, SnapshotPhase::partials);
  if (int64_t(O_part.size()) < S * p.nq * p.d || int64_t(lse_part.size()) < S * p.nq)
    throw std::logic_error("partial_snapshots: buffers smaller than S Nq (d + 1)");
  for (int64_t s = 0; s < S; ++s)
    out.push_back({SnapshotPhase::partials, -1,
                   {{"O", "", Eigen::Map<const Mat>(O_part.data() + s * p.nq * p.d, p.nq, p.d)},
                    {"lse", "", Eigen::Map<const Mat>(lse_part.data() + s * p.nq, p.nq, 1)}},
                   s});
  return out;
}

bool snapshots_need_record(const Problem& p) {
  return schedule_info(p.schedule).forward_snapshots != nullptr || (schedule_splits_kv(p.schedule) && p.splits >= 2);
}

double snapshot_dq_floor(const Problem& p, const Mat& dO) {
  return grad_scale_floor(p.scale, p.d, dO.cwiseAbs().maxCoeff(), p.V.cwiseAbs().maxCoeff(), p.K.cwiseAbs().maxCoeff());
}

SnapshotSet cpu_snapshots(const Trace& tr, const Mat* dO) {
  const Problem& p = tr.problem;
  const Tiling& t = tr.tiling;
  SnapshotSet out;
  out.source = "cpu";
  out.device = "CPU engine (float32)";
  out.problem = snapshot_problem(p, t, tr.has_backward ? dO : nullptr);
  if (tr.has_backward && !dO) throw std::logic_error("cpu_snapshots: a backward trace needs its dO");
  const SnapshotProblem& sp = out.problem;
  if ((has_per_j(sp, SnapshotPhase::forward) || snapshot_count(sp, SnapshotPhase::partials) > 0) && tr.steps.empty())
    throw InputError("snapshots need a recorded trace, and this one was not recorded");
  if (const auto fill = schedule_info(p.schedule).forward_snapshots) {  // the schedule's state after each j
    for (int64_t j = 0; j < t.Tc; ++j) out.snapshots.push_back(empty_snapshot(sp, SnapshotPhase::forward, j));
    fill(tr, out.snapshots);
  }
  if (has_per_j(sp, SnapshotPhase::backward)) {
    // dQ in HBM after the last step of K/V block j (the backwards loop over j outside).
    const std::vector<size_t> at = fa1_backward_steps_after_each_j(tr);
    Cursor c(tr);
    for (int64_t j = 0; j < t.Tc; ++j) {
      c.seek(at[size_t(j)]);
      out.snapshots.push_back({SnapshotPhase::backward, j, {{"dQ", "", c.hbm(Tensor::dQ)}}});
    }
  }
  if (const int64_t S = snapshot_count(sp, SnapshotPhase::partials)) {
    // decode: the partials O^(s), lse^(s) as phase 1 left them in HBM (split s at rows s Nq ..).
    Cursor c(tr);
    c.run_to_end();
    const Mat& Op = c.hbm(Tensor::Op);
    const Mat& Lp = c.hbm(Tensor::Lp);
    for (int64_t s = 0; s < S; ++s)
      out.snapshots.push_back({SnapshotPhase::partials, -1,
                               {{"O", "", Op.middleRows(s * p.nq, p.nq)}, {"lse", "", Lp.middleRows(s * p.nq, p.nq)}},
                               s});
  }
  out.final_state = {SnapshotPhase::final, -1, {{"O", "", tr.O}, {"lse", "", Mat(tr.lse)}}};
  if (tr.has_backward) {
    out.final_state.tensors.push_back({"dQ", "", tr.dQ});
    out.dq_scale_floor = snapshot_dq_floor(p, *dO);
  }
  return out;
}

// [SECTION] Writer

namespace {

json problem_to_json(const SnapshotProblem& p) {
  return {{"nq", p.nq},
          {"nk", p.nk},
          {"d", p.d},
          {"M", p.M},
          {"Br", p.Br},
          {"Bc", p.Bc},
          {"Tr", p.Tr},
          {"Tc", p.Tc},
          {"splits", p.splits},
          {"dtype", dtype_name(p.dtype)},
          {"p_dtype", dtype_name(p.p_dtype)},
          {"seed", p.seed},
          {"pattern", p.pattern},
          {"scale", p.scale},
          {"dropout", p.dropout},
          {"mask",
           {{"causal", p.mask.causal},
            {"window_left", p.mask.window_left},
            {"window_right", p.mask.window_right},
            {"kv_len", p.mask.kv_len}}},
          {"backward", p.backward},
          {"inputs_hash", p.inputs_hash}};
}

std::string file_name(const SnapshotEntry& s, const std::string& tensor, int64_t Tc) {
  const std::string phase = snapshot_phase_name(s.phase);
  if (s.phase == SnapshotPhase::final) return phase + "_" + tensor + ".npy";
  // forward_j0012_O.npy, partials_s0003_lse.npy (at least four digits, as many as Tc - 1 has;
  // S <= Tc)
  const bool split = s.phase == SnapshotPhase::partials;
  const int width = std::max(4, int(std::to_string(std::max<int64_t>(Tc - 1, 0)).size()));
  char k[32];
  std::snprintf(k, sizeof k, "%0*lld", width, (long long)(split ? s.split : s.j));
  return phase + (split ? "_s" : "_j") + k + "_" + tensor + ".npy";
}

// Adds one snapshot's tensors to the folder and returns its manifest entry.
json stage(const SnapshotEntry& s, const SnapshotProblem& p, OutputFolder& out) {
  json files = json::object();
  for (const TensorSpec& ts : snapshot_tensors(p, s.phase)) {
    const Mat* m = s.find(ts.name);
    if (!m || m->rows() != ts.rows || m->cols() != ts.cols)
      throw std::logic_error(std::string("write_snapshots: ") + snapshot_phase_name(s.phase) + " j = " + std::to_string(s.j) +
                             " s = " + std::to_string(s.split) + ": tensor " + ts.name +
                             " missing or of the wrong shape");
    const std::string name = file_name(s, ts.name, p.Tc);
    out.add(name) = npy_bytes(m->data(), ts.vector ? std::vector<int64_t>{ts.rows} : std::vector<int64_t>{ts.rows, ts.cols});
    files[ts.name] = name;
  }
  json e = {{"phase", snapshot_phase_name(s.phase)}};
  if (s.phase == SnapshotPhase::partials) e["s"] = s.split;
  else if (s.phase != SnapshotPhase::final) e["j"] = s.j;
  e["files"] = files;
  return e;
}

}  // namespace

// Whether `run --snapshots` may replace an existing folder: its manifest.json is this format's,
// and it holds nothing but files the writer makes (a folder that also holds a web page, or the
// run's own inputs, is refused rather than emptied). "" when it may, else why not.
static std::string not_a_snapshot_folder(const std::string& dir) {
  const std::string manifest = dir + "/" + kSnapshotManifest;
  try {
    const json m = parse_json_input(read_input_file(manifest, "the manifest"), manifest);
    if (!m.is_object() || !m.contains("format") || m["format"] != kSnapshotFormat)
      return "its " + std::string(kSnapshotManifest) + " is not a flashstep snapshot manifest";
  } catch (const InputError& e) {
    return std::string("its manifest is not readable (") + e.what() + ")";
  }
  // forward_j0012_O.npy, partials_s0003_lse.npy, final_lse.npy
  const auto written_name = [](const std::string& n) {
    for (const char* t : {"O", "lse", "dQ"})
      if (n == std::string("final_") + t + ".npy") return true;
    for (const char* phase : {"forward_j", "backward_j", "partials_s"}) {
      const size_t len = std::strlen(phase);
      if (n.compare(0, len, phase) != 0) continue;
      size_t k = len;
      while (k < n.size() && std::isdigit(static_cast<unsigned char>(n[k]))) ++k;
      if (k - len < 4) return false;
      for (const char* t : {"O", "l", "m", "dQ", "lse"})
        if (n.compare(k, std::string::npos, std::string("_") + t + ".npy") == 0) return true;
    }
    return false;
  };
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(dir, ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!it->is_regular_file(ec) || it->is_symlink(ec))
      return "it holds " + excerpt(name) + ", which is not a regular file";
    if (name != kSnapshotManifest && !written_name(name))
      return "it holds " + excerpt(name) + ", which is not a file of a snapshot folder";
  }
  if (ec) return "cannot read the folder: " + ec.message();
  return "";
}

std::unique_ptr<OutputFolder> snapshot_folder(const std::string& dir) {
  auto out = std::make_unique<OutputFolder>(dir, "--snapshots", kSnapshotManifest);
  out->recognise(not_a_snapshot_folder);
  return out;
}

void check_snapshot_target(const std::string& dir) { snapshot_folder(dir)->check(); }

void stage_snapshots(OutputFolder& out, const SnapshotSet& s) {
  const SnapshotProblem& p = s.problem;
  check_snapshot_size(p);
  out.check();
  json list = json::array();
  for (const SnapshotEntry& sn : s.snapshots) list.push_back(stage(sn, p, out));
  json m = {{"format", kSnapshotFormat},
            {"version", kSnapshotVersion},
            {"source", s.source},
            {"device", s.device},
            {"schedule", schedule_name(p.schedule)},
            {"problem", problem_to_json(p)},
            {"dq_scale_floor", s.dq_scale_floor},
            {"snapshots", list},
            {"final", stage(s.final_state, p, out)}};
  out.add(kSnapshotManifest) = m.dump(1) + "\n";
}

void write_snapshots(const std::string& dir, const SnapshotSet& s) {
  const std::unique_ptr<OutputFolder> out = snapshot_folder(dir);
  stage_snapshots(*out, s);
  out->commit();
}

double snapshot_tolerance(const SnapshotProblem& p, SnapshotPhase phase, const std::string& tensor) {
  if (tensor == "dQ") return kGradTiledTol;
  if (tensor != "O") return kTiledTol;                                       // l, m, lse: float32
  // decode's partials: float32 in HBM whatever the storage type, made by the same row block on
  // both sides (verify --schedule decode's rule)
  if (phase == SnapshotPhase::partials) return kTiledTol;
  if (phase == SnapshotPhase::forward && schedule_info(p.schedule).forward_snapshot_on_chip) return kTiledTol;  // float32 on chip
  return tiled_o_tol(p.schedule, p.dtype);                                   // O as stored in HBM
}

}  // namespace flashstep
