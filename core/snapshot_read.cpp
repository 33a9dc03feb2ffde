// Reading a snapshot folder (core/snapshot.h): every field of the manifest checked for
// presence, type and range, the sizes against the tiling, the problem against what run
// accepts, the list of snapshots against what the schedule writes, each file name, and each
// .npy file's presence, type and shape. Any problem is one InputError naming the manifest field
// or the file.
#include "core/checked.h"
#include "core/schedules/decode/decode.h"
#include "core/input_files.h"
#include "core/npy.h"
#include "core/output_files.h"
#include "core/problem.h"
#include "core/snapshot.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <initializer_list>
#include <set>
#include <sys/stat.h>

namespace flashstep {

using nlohmann::json;

namespace {

constexpr size_t kMaxManifestText = 256;  // device and pattern: drawn by the app and printed

// The manifest's fields, each checked where it is read; `where` is "DIR/manifest.json".
class Fields {
 public:
  explicit Fields(std::string where) : where_(std::move(where)) {}
  [[noreturn]] void fail(const std::string& field, const std::string& why) const {
    throw InputError(where_ + ": " + field + ": " + why);
  }
  const json& get(const json& obj, const std::string& key, const std::string& field) const {
    if (!obj.is_object()) fail(field, "must be an object");
    const auto it = obj.find(key);
    if (it == obj.end()) fail(field + key, "missing");
    return *it;
  }
  std::string str(const json& obj, const std::string& key, const std::string& field) const {
    const json& v = get(obj, key, field);
    if (!v.is_string()) fail(field + key, "must be a string (got " + json_excerpt(v) + ")");
    const std::string& text = v.get_ref<const std::string&>();
    if (text.size() > kMaxManifestText)  // every text field is short; the app draws some of them
      fail(field + key, "is " + std::to_string(text.size()) + " characters long; at most " + std::to_string(kMaxManifestText));
    return text;
  }
  int64_t integer(const json& obj, const std::string& key, const std::string& field, int64_t lo, int64_t hi) const {
    const json& v = get(obj, key, field);
    if (!v.is_number_integer()) fail(field + key, "must be a whole number (got " + json_excerpt(v) + ")");
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)) fail(field + key, "out of range");
    const int64_t x = v.get<int64_t>();
    if (x < lo || x > hi)
      fail(field + key, "must be in " + std::to_string(lo) + ".." + std::to_string(hi) + " (got " + std::to_string(x) + ")");
    return x;
  }
  double real(const json& obj, const std::string& key, const std::string& field) const {
    const json& v = get(obj, key, field);
    if (!v.is_number()) fail(field + key, "must be a number (got " + json_excerpt(v) + ")");
    return v.get<double>();
  }
  bool boolean(const json& obj, const std::string& key, const std::string& field) const {
    const json& v = get(obj, key, field);
    if (!v.is_boolean()) fail(field + key, "must be true or false (got " + json_excerpt(v) + ")");
    return v.get<bool>();
  }
  // Every key of obj must be one of `known`: a field this reader does not know is refused, not
  // skipped (a misspelt or invented field would otherwise pass unread, and compare say PASS).
  void only(const json& obj, const std::string& field, std::initializer_list<const char*> known) const {
    if (!obj.is_object()) return;  // the field's own read says what it must be
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      bool ok = false;
      for (const char* k : known) ok = ok || it.key() == k;
      if (ok) continue;
      std::string list;
      for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      fail(field + excerpt(it.key()), "is not a field of " + (field.empty() ? std::string("the manifest") : field.substr(0, field.size() - 1)) +
                                          " (its fields: " + list + ")");
    }
  }
  template <class Parse>
  auto parsed(const json& obj, const std::string& key, const std::string& field, Parse parse) const {
    const std::string text = str(obj, key, field);
    try {
      return parse(text);
    } catch (const InputError& e) {
      fail(field + key, e.what());
    }
  }

 private:
  std::string where_;
};

json read_manifest(const std::string& dir, const std::string& path) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) throw InputError(dir + ": cannot open the snapshot folder: " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) throw InputError(dir + ": is " + file_kind(st.st_mode) + ", not a snapshot folder");
  if (::stat(path.c_str(), &st) != 0)
    throw InputError(path + ": cannot open the manifest (" + std::strerror(errno) + "); is " + dir + " a snapshot folder?");
  return parse_json_input(read_input_file(path, "the manifest"), path);
}

// What `run --snapshots` could have written. Not fp8: run refuses --dtype fp8 with --snapshots
// (a folder holds an fp32, fp16 or bf16 run). The rest is run's own validate_sizes
// (core/problem.cpp), given the fields one at a time (first_refused_field) so that its first
// refusal names the field that made it: M at least 4d, Br and Bc within M, the scale a float32,
// the mask, dropout below 1 as a float32, P~'s type allowed beside the storage type (16-bit
// storage, a tiled schedule).
void check_as_run(const SnapshotProblem& p, const Fields& f) {
  if (p.dtype == Dtype::fp8)
    f.fail("problem.dtype", "fp8 is not a type of snapshot folders (run refuses --dtype fp8 with --snapshots; a folder "
                            "holds an fp32, fp16 or bf16 run)");
  ProblemSpec start = sizes_spec(p.nq, p.nk, p.d, kMaxSram);  // nq, nk, d: read within their limits
  start.schedule = p.schedule;
  const std::optional<RefusedField> refused = first_refused_field(start, {
      {"problem.M", [&](ProblemSpec& s) { s.M = p.M; }},
      {"problem.Br, Bc", [&](ProblemSpec& s) {  // together: Br alone may not fit beside the paper's Bc
         s.br = p.Br;
         s.bc = p.Bc;
       }},
      {"problem.scale", [&](ProblemSpec& s) { s.scale = p.scale; }},
      {"problem.mask", [&](ProblemSpec& s) { s.options.mask = p.mask; }},
      {"problem.dropout", [&](ProblemSpec& s) { s.options.dropout = p.dropout; }},
      {"problem.dtype", [&](ProblemSpec& s) { s.options.dtype = p.dtype; }},
      {"problem.p_dtype", [&](ProblemSpec& s) { s.options.p_dtype = p.p_dtype; }}});
  if (refused) f.fail(refused->name, "a problem run refuses (" + refused->reason + ")");
}

SnapshotProblem read_problem(const json& m, const Fields& f, int64_t version) {
  SnapshotProblem p;
  p.schedule = f.parsed(m, "schedule", "", parse_schedule);
  const json& j = f.get(m, "problem", "");
  const std::string pf = "problem.";
  if (version >= 2)
    f.only(j, pf, {"nq", "nk", "d", "M", "Br", "Bc", "Tr", "Tc", "splits", "dtype", "p_dtype", "seed", "pattern", "scale",
                   "dropout", "mask", "backward", "inputs_hash"});
  else if (!(j.is_object() && j.contains("splits")))  // version 1's splits: refused below, by name
    f.only(j, pf, {"nq", "nk", "d", "M", "Br", "Bc", "Tr", "Tc", "dtype", "p_dtype", "seed", "pattern", "scale",
                   "dropout", "mask", "backward", "inputs_hash"});
  p.nq = f.integer(j, "nq", pf, 1, kMaxSeq);
  p.nk = f.integer(j, "nk", pf, 1, kMaxSeq);
  p.d = f.integer(j, "d", pf, 1, kMaxHeadDim);
  p.M = f.integer(j, "M", pf, 1, kMaxSram);
  p.Br = f.integer(j, "Br", pf, 1, kMaxSeq);
  p.Bc = f.integer(j, "Bc", pf, 1, kMaxSeq);
  p.Tr = f.integer(j, "Tr", pf, 1, kMaxSeq);
  p.Tc = f.integer(j, "Tc", pf, 1, kMaxSeq);
  if (p.Tr != checked::ceil_div(p.nq, p.Br, "Tr"))
    f.fail("problem.Tr", std::to_string(p.Tr) + " is not ceil(nq / Br) = " + std::to_string(checked::ceil_div(p.nq, p.Br, "Tr")));
  if (p.Tc != checked::ceil_div(p.nk, p.Bc, "Tc"))
    f.fail("problem.Tc", std::to_string(p.Tc) + " is not ceil(nk / Bc) = " + std::to_string(checked::ceil_div(p.nk, p.Bc, "Tc")));
  // Version 2: decode's S (1 for the others). Version 1 did not record it: 1, or for decode 0
  // ("not recorded": such a folder compares only with another version 1 folder).
  if (version >= 2) {
    p.splits = f.integer(j, "splits", pf, 1, p.Tc);
    if (!schedule_splits_kv(p.schedule) && p.splits != 1)
      f.fail("problem.splits", "must be 1 for " + std::string(schedule_name(p.schedule)) + " (got " +
                                   std::to_string(p.splits) + ")");
  } else {
    if (j.is_object() && j.contains("splits")) f.fail("problem.splits", "is not a field of version 1");
    p.splits = schedule_splits_kv(p.schedule) ? 0 : 1;
  }
  p.dtype = f.parsed(j, "dtype", pf, parse_dtype);
  p.p_dtype = f.parsed(j, "p_dtype", pf, parse_dtype);
  const json& seed = f.get(j, "seed", pf);
  if (!seed.is_number_unsigned() && !(seed.is_number_integer() && seed.get<int64_t>() >= 0))
    f.fail("problem.seed", "must be a whole number >= 0 (got " + json_excerpt(seed) + ")");
  p.seed = seed.get<uint64_t>();
  p.pattern = f.str(j, "pattern", pf);
  p.scale = f.real(j, "scale", pf);
  if (!std::isfinite(p.scale)) f.fail("problem.scale", "must be finite");
  p.dropout = f.real(j, "dropout", pf);
  if (!(p.dropout >= 0 && p.dropout < 1)) f.fail("problem.dropout", "must be in [0, 1) (got " + json_excerpt(j["dropout"]) + ")");
  const json& mk = f.get(j, "mask", pf);
  const std::string mf = "problem.mask.";
  f.only(mk, mf, {"causal", "window_left", "window_right", "kv_len"});
  p.mask.causal = f.boolean(mk, "causal", mf);
  p.mask.window_left = f.integer(mk, "window_left", mf, -1, kMaxSeq);
  p.mask.window_right = f.integer(mk, "window_right", mf, -1, kMaxSeq);
  p.mask.kv_len = f.integer(mk, "kv_len", mf, -1, p.nk);
  p.mask.offset = p.nk - p.nq;
  p.backward = f.boolean(j, "backward", pf);
  p.inputs_hash = f.str(j, "inputs_hash", pf);
  if (p.inputs_hash.size() != 16 || p.inputs_hash.find_first_not_of("0123456789abcdef") != std::string::npos)
    f.fail("problem.inputs_hash", "must be 16 lower-case hex digits (got '" + excerpt(excerpt(p.inputs_hash)) + "')");
  check_as_run(p, f);
  return p;
}

bool plain_npy_name(const std::string& n) {
  if (n.size() < 5 || n.size() > 200 || n.compare(n.size() - 4, 4, ".npy") != 0 || n[0] == '.') return false;
  for (char c : n)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
  return true;
}

// One snapshot's entry: its files object names exactly the phase's tensors; each file is read
// and its shape checked.
SnapshotEntry read_entry(const json& e, const std::string& field, SnapshotPhase phase, int64_t j,
                    const SnapshotProblem& p, const std::string& dir, const Fields& f, std::set<std::string>& names) {
  SnapshotEntry s;
  s.phase = phase;
  s.j = j;
  const json& files = f.get(e, "files", field);
  if (!files.is_object()) f.fail(field + "files", "must be an object");
  const std::vector<TensorSpec> specs = snapshot_tensors(p, phase);
  if (files.size() != specs.size()) {
    std::string want;
    for (const TensorSpec& ts : specs) want += (want.empty() ? "" : ", ") + ts.name;
    f.fail(field + "files", "must name exactly " + want + " for a " + snapshot_phase_name(phase) + " snapshot of this problem");
  }
  for (const TensorSpec& ts : specs) {
    const std::string name = f.str(files, ts.name, field + "files.");
    if (!plain_npy_name(name))
      f.fail(field + "files." + ts.name, "'" + excerpt(excerpt(name)) + "' is not a plain .npy file name inside the folder");
    if (!names.insert(name).second) f.fail(field + "files." + ts.name, "'" + excerpt(name) + "' is named twice");
    const std::string path = dir + "/" + name;
    NpyArray a = read_npy(path);  // InputError names the file: missing, truncated, not float
    const std::vector<int64_t> want = ts.vector ? std::vector<int64_t>{ts.rows} : std::vector<int64_t>{ts.rows, ts.cols};
    if (a.shape != want) {
      auto text = [](const std::vector<int64_t>& v) {
        std::string t = "(";
        for (size_t k = 0; k < v.size(); ++k) t += (k ? ", " : "") + std::to_string(v[k]);
        return t + (v.size() == 1 ? ",)" : ")");
      };
      throw InputError(path + ": shape " + text(a.shape) + " disagrees with the manifest's problem, which needs " +
                       text(want) + " for " + ts.name);
    }
    Mat data = Eigen::Map<const Mat>(a.data.data(), ts.rows, ts.cols);
    s.tensors.push_back({ts.name, name, std::move(data)});
  }
  return s;
}

}  // namespace

SnapshotSet read_snapshots(const std::string& dir_in) {
  std::string dir = dir_in;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (dir.empty()) throw InputError("--snapshots: empty folder name");
  const std::string where = dir + "/" + kSnapshotManifest;
  const json m = read_manifest(dir, where);
  const Fields f(where);
  if (!m.is_object()) f.fail("(top level)", "must be a JSON object");
  if (f.str(m, "format", "") != kSnapshotFormat) f.fail("format", std::string("must be \"") + kSnapshotFormat + "\"");
  const int64_t version = f.integer(m, "version", "", 0, INT64_MAX);
  if (version < 1 || version > kSnapshotVersion)
    f.fail("version", std::to_string(version) + " is not supported (this flashstep reads versions 1 to " +
                          std::to_string(kSnapshotVersion) + ")");
  f.only(m, "", {"format", "version", "source", "device", "schedule", "problem", "dq_scale_floor", "snapshots", "final"});
  SnapshotSet s;
  s.source = f.str(m, "source", "");
  if (s.source != "cpu" && s.source != "gpu") f.fail("source", "must be \"cpu\" or \"gpu\" (got \"" + excerpt(s.source) + "\")");
  s.device = f.str(m, "device", "");
  s.problem = read_problem(m, f, version);
  const SnapshotProblem& p = s.problem;
  check_snapshot_size(p);  // before reading any .npy: a manifest may claim any size
  // Checked as part of the format, but not kept: a tolerance never comes from a file (a
  // folder claiming a huge floor would make any dQ pass). compare recomputes it.
  const double floor = f.real(m, "dq_scale_floor", "");
  if (!(floor >= 0 && std::isfinite(floor))) f.fail("dq_scale_floor", "must be a finite number >= 0");
  s.dq_scale_floor = 0;

  // The list: forward j = 0..Tc-1, then backward j = 0..Tc-1, then partials s = 0..S-1, where
  // the problem has them (version 1 has no partials: its splits are 0 or 1).
  const json& list = f.get(m, "snapshots", "");
  if (!list.is_array()) f.fail("snapshots", "must be an array");
  const int64_t fwd = snapshot_count(p, SnapshotPhase::forward), bwd = snapshot_count(p, SnapshotPhase::backward);
  const int64_t parts = snapshot_count(p, SnapshotPhase::partials);
  if (int64_t(list.size()) != fwd + bwd + parts)
    f.fail("snapshots", "has " + std::to_string(list.size()) + " entries; a " + schedule_name(p.schedule) +
                            " problem with Tc = " + std::to_string(p.Tc) + ", S = " + std::to_string(p.splits) +
                            " has " + std::to_string(fwd) + " forward snapshots, " + std::to_string(bwd) +
                            " backward ones and " + std::to_string(parts) + " partials");
  std::set<std::string> names;
  for (size_t k = 0; k < list.size(); ++k) {
    const std::string field = "snapshots[" + std::to_string(k) + "].";
    const json& e = list[k];
    const int64_t n = int64_t(k);
    const SnapshotPhase phase = n < fwd         ? SnapshotPhase::forward
                                : n < fwd + bwd ? SnapshotPhase::backward
                                                : SnapshotPhase::partials;
    const std::string phase_name = snapshot_phase_name(phase);
    const std::string got = f.str(e, "phase", field);
    if (got != phase_name) f.fail(field + "phase", "must be \"" + phase_name + "\" here (got \"" + excerpt(got) + "\")");
    if (phase == SnapshotPhase::partials) {  // indexed by the split s, not by j
      const int64_t sp = n - fwd - bwd;
      if (e.is_object() && e.contains("j")) f.fail(field + "j", "a partials snapshot has s, not j");
      f.only(e, field, {"phase", "s", "files"});
      const int64_t gs = f.integer(e, "s", field, 0, p.splits - 1);
      if (gs != sp) f.fail(field + "s", "must be " + std::to_string(sp) + " here (partials in order of s)");
      SnapshotEntry x = read_entry(e, field, phase, -1, p, dir, f, names);
      x.split = sp;
      s.snapshots.push_back(std::move(x));
      continue;
    }
    const int64_t j = n < fwd ? n : n - fwd;
    if (e.is_object() && e.contains("s")) f.fail(field + "s", "only a partials snapshot has s");
    f.only(e, field, {"phase", "j", "files"});
    const int64_t gj = f.integer(e, "j", field, 0, p.Tc - 1);
    if (gj != j) f.fail(field + "j", "must be " + std::to_string(j) + " here (snapshots in order of j)");
    s.snapshots.push_back(read_entry(e, field, phase, j, p, dir, f, names));
  }
  const json& fin = f.get(m, "final", "");
  f.only(fin, "final.", {"phase", "files"});
  s.final_state = read_entry(fin, "final.", SnapshotPhase::final, -1, p, dir, f, names);
  return s;
}

}  // namespace flashstep
