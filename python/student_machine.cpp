#include "student_machine.h"

#include "core/run.h"
#include "core/schedule_registry.h"
#include "core/trace_file.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace flashstep {

namespace {

struct NameInfo {
  const char* name;
  Tensor tensor;
  Slot slot;
  bool charged;  // a tile charged to M (else on-chip scratch: the row statistics)
  // Which loop index a load of it names: 'i', its row blocks are Q blocks; 'j', K/V blocks; 's',
  // Q blocks within each split's Nq rows; 0, neither.
  char loop;
};
// The puzzles' names: the paper's, plus x and y (one softmax row, stored as a column) and
// Op, Lp (flash-decoding's partials O^(s), lse^(s), stacked by split: row s Nq + r).
const NameInfo kNames[] = {
    {"Q", Tensor::Q, Slot::Qi, true, 'i'},     {"K", Tensor::K, Slot::Kj, true, 'j'},
    {"V", Tensor::V, Slot::Vj, true, 'j'},     {"O", Tensor::O, Slot::Oi, true, 'i'},
    {"l", Tensor::l, Slot::li, false, 'i'},    {"m", Tensor::m, Slot::mi, false, 'i'},
    {"L", Tensor::L, Slot::Li, false, 'i'},    {"dO", Tensor::dO, Slot::dOi, true, 'i'},
    {"dK", Tensor::dK, Slot::dKj, true, 'j'},  {"dV", Tensor::dV, Slot::dVj, true, 'j'},
    {"D", Tensor::D, Slot::Di, false, 'i'},    {"x", Tensor::S, Slot::Sij, true, 0},
    {"y", Tensor::P, Slot::Pij, true, 0},      {"Op", Tensor::Op, Slot::Ops, true, 's'},
    {"Lp", Tensor::Lp, Slot::Lps, false, 's'},
};
const NameInfo* find_name(const std::string& name) {
  for (const NameInfo& n : kNames)
    if (name == n.name) return &n;
  return nullptr;
}
const NameInfo& info_of(Tensor t) {
  for (const NameInfo& n : kNames)
    if (n.tensor == t) return n;
  throw std::logic_error("student machine: tensor without a name");
}
std::string range(int64_t a, int64_t b) { return std::to_string(a) + ":" + std::to_string(b); }

}  // namespace

StudentMachine::StudentMachine(Problem problem, Tiling tiling, int64_t capacity_elems)
    : problem_(std::move(problem)), tiling_(tiling), capacity_(capacity_elems), hbm_(problem_.dtype),
      sram_(0, problem_.dtype) {}

std::vector<std::string> StudentMachine::tensor_names() {
  std::vector<std::string> out;
  for (const NameInfo& n : kNames) out.push_back(n.name);
  return out;
}

Tensor StudentMachine::tensor_of(const std::string& name) const {
  const NameInfo* n = find_name(name);
  if (!n || !present_.count(name)) {
    std::string have;
    for (const auto& [k, v] : present_) have += (have.empty() ? "" : ", ") + k;
    throw InputError("no tensor '" + name + "' in this puzzle's HBM (it holds " + have + ")");
  }
  return n->tensor;
}

uint64_t StudentMachine::seal() {
  if (seal_) throw InputError("the machine is sealed already");
  std::random_device rd;
  do seal_ = (uint64_t(rd()) << 32) ^ rd();
  while (seal_ == 0);
  return seal_;
}

void StudentMachine::unseal(uint64_t token) {
  if (!seal_ || token != seal_) throw InputError("the machine is not unsealed by this token");
  seal_ = 0;
}

namespace {
InputError sealed_error(const char* what, const std::string& name) {
  return InputError(std::string(what) + "('" + name + "') while your function runs: HBM moves only through m.load "
                    "and m.store, whose bytes are counted");
}
}  // namespace

void StudentMachine::put(const std::string& name, Mat value) {
  if (seal_) throw sealed_error("put", name);
  const NameInfo* n = find_name(name);
  if (!n) throw InputError("no tensor named '" + name + "'");
  // What the puzzle places beyond the inputs is the trace's hbm_before: the app shows it from
  // the first step on (Q, K, V are the problem's own inputs).
  if (n->tensor != Tensor::Q && n->tensor != Tensor::K && n->tensor != Tensor::V) {
    before_.erase(std::remove_if(before_.begin(), before_.end(),
                                 [&](const HbmWrite& w) { return w.tensor == n->tensor; }),
                  before_.end());
    before_.push_back({n->tensor, 0, value});
  }
  hbm_.put(n->tensor, std::move(value));
  present_[name] = true;
}

bool StudentMachine::has(const std::string& name) const { return present_.count(name) > 0; }
const Mat& StudentMachine::peek(const std::string& name) const {
  if (seal_) throw sealed_error("peek", name);
  return hbm_.get(tensor_of(name));
}

void StudentMachine::open_step_if_none() {
  if (steps_.empty()) step("(no m.step yet)", std::nullopt, std::nullopt);
}

void StudentMachine::step(const std::string& label, std::optional<int64_t> i, std::optional<int64_t> j) {
  if (label.empty()) throw InputError("m.step needs a label, such as \"Alg1 L9\"");
  auto check = [&](std::optional<int64_t> value, const char* name, int64_t blocks, const char* what) {
    if (value && (*value < 0 || *value >= blocks))
      throw InputError("m.step('" + label + "', " + name + "=" + std::to_string(*value) + "): " + name + " is " + what +
                       ", 0 .. " + std::to_string(blocks - 1) + " (left out: the blocks loaded)");
  };
  check(i, "i", tiling_.Tr, "a Q block's index");
  check(j, "j", tiling_.Tc, "a K/V block's index");
  // "i, j default to the blocks loaded" (docs/python.md): those the step loads, else the last
  // ones loaded or named, so that a compute step (Alg1 L9) after the loads of its (i, j) is
  // there; at a line of core's, only the loops in scope there (FA2fwd L14, after the j loop,
  // has no j, as in core's own trace).
  if (i) last_i_ = *i;
  if (j) last_j_ = *j;
  Line line;
  const LineBlocks scope = line_from_label(label, line) ? line_scope(line) : LineBlocks{true, true};
  StudentStep s;
  s.label = label;
  s.i = i || scope.i ? last_i_ : -1;
  s.j = j || scope.j ? last_j_ : -1;
  steps_.push_back(std::move(s));
  writes_.emplace_back();
  infer_i_ = !i;
  infer_j_ = !j;
  read_before_ = read_bytes();
  write_before_ = write_bytes();
  update_sram();
}

void StudentMachine::update_sram() {
  if (steps_.empty()) return;
  StudentStep& s = steps_.back();
  s.read = read_bytes() - read_before_;
  s.write = write_bytes() - write_before_;
  s.tensor_read = hbm_.traffic().read;
  s.tensor_written = hbm_.traffic().written;
  s.slot_elems.fill(0);
  for (const auto& [id, t] : tiles_) s.slot_elems[int(info_of(t.tensor).slot)] += t.elems;
  const int64_t charged = charged_elems_ * hbm_.bytes(Tensor::Q), all = charged + scratch_elems_ * 4;
  s.charged_bytes = charged;
  s.sram_bytes = all;
  peak_charged_ = std::max(peak_charged_, charged);
  peak_sram_ = std::max(peak_sram_, all);
}

int64_t StudentMachine::load(const std::string& name, int64_t r0, int64_t r1, int64_t c0, int64_t c1, Mat& out) {
  const Tensor t = tensor_of(name);
  const NameInfo& n = info_of(t);
  const Mat& src = hbm_.get(t);
  if (c1 < 0) c1 = src.cols();
  if (r0 < 0 || r1 > src.rows() || r0 >= r1 || c0 < 0 || c1 > src.cols() || c0 >= c1)
    throw InputError("m.load('" + name + "', " + std::to_string(r0) + ", " + std::to_string(r1) + ", " +
                     std::to_string(c0) + ", " + std::to_string(c1) + "): rows " + range(r0, r1) + ", columns " +
                     range(c0, c1) + " are not inside " + name + " (" + std::to_string(src.rows()) + " x " +
                     std::to_string(src.cols()) + ")");
  const int64_t elems = (r1 - r0) * (c1 - c0);
  if (n.charged && charged_elems_ + elems > capacity_) {
    // The common case: the previous block of the same tensor is still held, because the variable
    // that holds it is rebound only after this load returns (Qi = m.load("Q", ...) in a loop).
    // Otherwise the tiles held, by name: a tile of another tensor left unfreed is the usual cause.
    std::string held, same, all;
    int listed = 0;
    for (const auto& [id, tile] : tiles_) {
      if (!tile.charged) continue;
      const std::string t = tile.name + "[" + range(tile.r0, tile.r1) + "]";
      if (tile.name == name && same.empty()) same = t;
      if (listed < 6) all += (listed ? ", " : "") + t;
      else if (listed == 6) all += ", ...";
      ++listed;
    }
    const char* const rule = "a tile stays in SRAM until m.free(tile) or the end of the with m.sram(): block that "
                             "loaded it; rebinding, deleting or copying its array frees nothing";
    if (!same.empty()) held = "; " + same + " is still held: " + rule;
    else if (listed > 0) held = "; held: " + all + " (" + rule + ")";
    if (reserved_ > 0)
      held += "; " + std::to_string(reserved_) + " of M are " + reserved_what_ + ", on chip throughout";
    throw InputError("SRAM full: loading " + name + "[" + range(r0, r1) + "] (" + std::to_string(elems) +
                     " elements) while holding " + std::to_string(charged_elems_) + " would need " +
                     std::to_string(charged_elems_ + elems) + " of M = " + std::to_string(capacity_) + held +
                     "; free a tile first (m.free(tile) or a with m.sram(): block)");
  }
  open_step_if_none();
  // Through core's memory model: the gathered block is charged to `t` as HBM bytes read.
  out = sram_.load_gathered(n.slot, hbm_, t, src.block(r0, c0, r1 - r0, c1 - c0));
  sram_.release(n.slot);
  steps_.back().loads.push_back({name, r0, r1, c0, c1});
  const int64_t id = next_id_++;
  tiles_[id] = {name, t, r0, r1, elems, n.charged};
  (n.charged ? charged_elems_ : scratch_elems_) += elems;
  if (n.loop == 'i' && infer_i_ && tiling_.Br > 0) steps_.back().i = last_i_ = r0 / tiling_.Br;
  if (n.loop == 's' && infer_i_ && tiling_.Br > 0) steps_.back().i = last_i_ = r0 % problem_.nq / tiling_.Br;
  if (n.loop == 'j' && infer_j_ && tiling_.Bc > 0) steps_.back().j = last_j_ = r0 / tiling_.Bc;
  update_sram();
  return id;
}

void StudentMachine::store(const std::string& name, int64_t r0, int64_t r1, int64_t c0, const Mat& tile) {
  const Tensor t = tensor_of(name);
  const Mat& dst = hbm_.get(t);
  const std::string where = "m.store('" + name + "', " + std::to_string(r0) + ", " + std::to_string(r1) + ", ...)";
  if (r0 < 0 || r1 > dst.rows() || r0 >= r1)
    throw InputError(where + ": rows " + range(r0, r1) + " are not inside " + name + " (" +
                     std::to_string(dst.rows()) + " rows)");
  if (tile.rows() != r1 - r0 || c0 < 0 || c0 + tile.cols() > dst.cols())
    throw InputError(where + ": a tile of " + std::to_string(tile.rows()) + " x " + std::to_string(tile.cols()) +
                     " does not fit rows " + range(r0, r1) + ", columns from " + std::to_string(c0) + " of " + name +
                     " (" + std::to_string(dst.rows()) + " x " + std::to_string(dst.cols()) + ")");
  // A store writes what is on chip: more elements than SRAM holds cannot have been there at once.
  if (tile.size() > capacity_)
    throw InputError(where + ": " + std::to_string(tile.size()) + " elements in one store, more than SRAM holds (M = " +
                     std::to_string(capacity_) + "); a store writes a tile from SRAM: store block by block");
  open_step_if_none();
  // Whole rows go through Hbm::store; a column slice is written into the rows as they stand
  // and only its own bytes are charged (core's store counts whole rows).
  Mat rows = dst.middleRows(r0, r1 - r0);
  rows.block(0, c0, tile.rows(), tile.cols()) = tile;
  hbm_.store(t, r0, rows);
  const int64_t unwritten = (rows.cols() - tile.cols()) * rows.rows() * hbm_.bytes(t);
  hbm_.traffic_mut().written[int(t)] -= unwritten;
  writes_.back().push_back({t, r0, hbm_.get(t).middleRows(r0, r1 - r0)});
  StudentStep& s = steps_.back();
  s.stores.push_back({name, r0, c0, s.i, s.j, hbm_.get(t).block(r0, c0, tile.rows(), tile.cols())});
  update_sram();
}

void StudentMachine::note(const std::string& name, const Mat& value) {
  static const char* const kValues[] = {"m_tilde", "l_tilde", "m_old", "l_old", "m_new", "l_new", "alpha", "beta", "D"};
  static const char* const kTiles[] = {"S", "P", "dP", "dS", "dV", "dK"};
  open_step_if_none();
  StudentStep& s = steps_.back();
  // The step's blocks, where it has them: a noted value must be the shape the app draws there.
  const int64_t rows_i = s.i >= 0 && s.i < tiling_.Tr ? std::min(tiling_.Br, problem_.nq - s.i * tiling_.Br) : -1;
  const int64_t cols_j = s.j >= 0 && s.j < tiling_.Tc ? std::min(tiling_.Bc, problem_.nk - s.j * tiling_.Bc) : -1;
  auto check_shape = [&](int64_t rows, int64_t cols, const char* what) {
    if ((rows >= 0 && value.rows() != rows) || (cols >= 0 && value.cols() != cols))
      throw InputError("m.note(" + name + "=...): " + std::to_string(value.rows()) + " x " +
                       std::to_string(value.cols()) + " where the step's blocks (i = " + std::to_string(s.i) +
                       ", j = " + std::to_string(s.j) + ") make " + what + " " +
                       (rows >= 0 ? std::to_string(rows) : std::string("any")) + " x " +
                       (cols >= 0 ? std::to_string(cols) : std::string("any")));
  };
  for (const char* t : kTiles)
    if (name == t) {
      const bool accumulator = name == "dV" || name == "dK";  // K/V block rows x d
      check_shape(accumulator ? cols_j : rows_i, accumulator ? problem_.d : cols_j, "the tile");
      s.tile = value;
      s.tile_name = name;
      return;
    }
  for (const char* v : kValues)
    if (name == v) {
      if (value.cols() != 1) throw InputError("m.note('" + name + "', ...): a row statistic is a 1-D array");
      check_shape(rows_i, 1, "a row statistic (one per row of Q_i):");
      s.values[name] = value.col(0);
      return;
    }
  throw InputError("m.note: '" + name + "' is not a value the trace holds (S, P, m_tilde, l_tilde, m_old, l_old, "
                   "m_new, l_new, alpha, beta; in a backward P, dP, dS, dV, dK, D)");
}

void StudentMachine::free(int64_t tile_id) {
  auto it = tiles_.find(tile_id);
  if (it == tiles_.end()) throw InputError("m.free: this tile is not held in SRAM (freed already, or not from m.load)");
  (it->second.charged ? charged_elems_ : scratch_elems_) -= it->second.elems;
  tiles_.erase(it);
  update_sram();
}

void StudentMachine::reserve(int64_t elems, const std::string& what) {
  if (sealed()) throw InputError("reserve while the student's function runs");
  if (elems < 0 || charged_elems_ + elems > capacity_)
    throw InputError("reserve: " + std::to_string(elems) + " elements do not fit M = " + std::to_string(capacity_));
  reserved_ += elems;
  reserved_what_ = what;
  charged_elems_ += elems;
}

int64_t StudentMachine::tensor_read(const std::string& name) const {
  return hbm_.traffic().read[int(tensor_of(name))];
}
int64_t StudentMachine::tensor_written(const std::string& name) const {
  return hbm_.traffic().written[int(tensor_of(name))];
}

namespace {

// The tile a backward line computes on chip, as m.note names it ("" for a line that computes none).
const char* backward_tile_of(LineRole role) {
  switch (role) {
    case LineRole::recompute_scores:
    case LineRole::mask_scores: return "S";
    case LineRole::recompute_probs:
    case LineRole::dropout: return "P";
    case LineRole::grad_p: return "dP";
    case LineRole::grad_s: return "dS";
    case LineRole::grad_v: return "dV";
    case LineRole::grad_k: return "dK";
    default: return "";
  }
}

template <size_t N>
std::array<int64_t, N> plus(std::array<int64_t, N> a, const std::array<int64_t, N>& b) {
  for (size_t k = 0; k < N; ++k) a[k] += b[k];
  return a;
}

// The trace holds the inputs: written while the student's function runs, it would read HBM
// past the counted loads, as peek would.
InputError sealed_trace_error() {
  return InputError("save_trace while your function runs: the trace holds the puzzle's inputs (Q, K, V or the row "
                    "x), and HBM moves only through m.load and m.store, whose bytes are counted; save the trace that "
                    "check returns instead (r.trace.save(path))");
}

}  // namespace

Trace StudentMachine::to_trace() const {
  if (seal_) throw sealed_trace_error();
  // Every label a line of core's tables; a backward's steps all of the schedule's backward, a
  // forward's all of its forward (the app shows the trace beside the schedule's own listing).
  std::vector<Line> lines(steps_.size());
  bool backward = false;
  for (size_t k = 0; k < steps_.size(); ++k) {
    if (!line_from_label(steps_[k].label, lines[k]))
      throw InputError("step " + std::to_string(k) + " is labelled '" + steps_[k].label +
                       "', which is no pseudocode line of flashstep; the app opens traces whose steps are "
                       "labelled as core's lines (\"Alg1 L9\", \"FA2fwd L8\", \"FA2b L12\", ...)");
    backward = backward || is_backward_line(lines[k]);
  }
  const AlgorithmInfo* bwd_lines = schedule_info(problem_.schedule).backward_lines;
  const AlgorithmInfo& fwd_lines = *schedule_info(problem_.schedule).forward_lines;
  for (size_t k = 0; k < steps_.size() && !backward; ++k)
    if (&line_algorithm(lines[k]) != &fwd_lines)
      throw InputError("step " + std::to_string(k) + " is labelled '" + steps_[k].label + "', a line of " +
                       line_algorithm(lines[k]).title + "; this puzzle's run is " + fwd_lines.title +
                       ": label its steps with that listing's lines (\"" + fwd_lines.lines[0].label + "\" .. \"" +
                       fwd_lines.lines[fwd_lines.n_lines - 1].label + "\")");
  if (backward) {
    if (!bwd_lines)
      throw InputError(std::string("the trace has backward lines, but ") + schedule_name(problem_.schedule) +
                       " has no backward pass");
    for (size_t k = 0; k < steps_.size(); ++k)
      if (&line_algorithm(lines[k]) != bwd_lines)
        throw InputError("step " + std::to_string(k) + " ('" + steps_[k].label + "') is not a line of " +
                         bwd_lines->title + ": a backward's trace holds the backward's lines only (its forward "
                         "is core's run)");
  }

  Trace tr;
  std::array<int64_t, kTensors> read0{}, written0{};
  int64_t read_total = 0, write_total = 0;
  if (backward) {
    // The backward runs on what the forward left in HBM: core's own recorded forward of the
    // same problem comes first, so that the app steps through both passes as for a run.
    RunOptions opt;
    opt.record = true;
    tr = run_problem(problem_, tiling_, opt);
    for (const HbmWrite& w : before_) {
      const bool differs = (w.tensor == Tensor::O && !(w.data == tr.O)) ||
                           (w.tensor == Tensor::L && !(w.data.cols() == 1 && w.data.col(0) == tr.lse));
      if (differs)
        throw InputError(std::string("the ") + tensor_name(w.tensor) + " placed in HBM before the backward is not "
                         "what core's forward of this problem writes: the trace cannot show the forward it ran on");
      if (w.tensor != Tensor::O && w.tensor != Tensor::L) tr.hbm_before.push_back(w);  // the forward writes O, L
    }
    if (!has("dO")) throw InputError("a backward's trace needs dO in HBM (the backward's input)");
    for (const HbmWrite& w : before_)
      if (w.tensor == Tensor::dO) tr.dO = w.data;
    tr.has_backward = true;
    tr.backward_first_step = tr.steps.size();
    tr.forward_totals = tr.totals;
    read0 = tr.totals.traffic.read;
    written0 = tr.totals.traffic.written;
    read_total = tr.totals.hbm_read_bytes;
    write_total = tr.totals.hbm_write_bytes;
  } else {
    tr.problem = problem_;
    tr.tiling = tiling_;
    tr.hbm_before = before_;
  }
  const int64_t flops0 = tr.totals.flops;
  for (size_t k = 0; k < steps_.size(); ++k) {
    const StudentStep& s = steps_[k];
    Step st;
    st.line = lines[k];
    if (!s.tile_name.empty() && s.tile_name != "S" && s.tile_name != "P" && !is_backward_line(st.line))
      throw InputError("step " + std::to_string(k) + " ('" + s.label + "') notes " + s.tile_name +
                       ", a backward's tile, at a forward line");
    if (backward && !s.tile_name.empty() && s.tile_name != backward_tile_of(line_role(st.line)))
      throw InputError("step " + std::to_string(k) + " ('" + s.label + "') notes " + s.tile_name +
                       ", which its line does not compute: note each tile at its own line (S, P, dP, dS, dV, dK "
                       "at the lines that compute them, as in " + bwd_lines->title + ")");
    st.i = int32_t(s.i);  // inside the tiling: step() and load() keep them there
    st.j = int32_t(s.j);
    st.hbm_read = st.dram_read = s.read;
    st.hbm_write = st.dram_write = s.write;
    read_total += s.read;
    write_total += s.write;
    st.hbm_read_total = st.dram_read_total = read_total;
    st.hbm_write_total = st.dram_write_total = write_total;
    st.flops_total = flops0;  // the student's NumPy arithmetic is not counted
    st.sram_elems = s.slot_elems;
    st.sram_bytes = s.sram_bytes;
    st.tensor_read = plus(s.tensor_read, read0);
    st.tensor_written = plus(s.tensor_written, written0);
    st.tile = s.tile;
    const std::pair<const char*, Vec*> values[] = {{"m_tilde", &st.m_tilde}, {"l_tilde", &st.l_tilde},
                                                   {"m_old", &st.m_old},     {"l_old", &st.l_old},
                                                   {"m_new", &st.m_new},     {"l_new", &st.l_new},
                                                   {"alpha", &st.alpha},     {"beta", &st.beta},
                                                   {"D", &st.D_i}};
    for (const auto& [name, dst] : values) {
      auto it = s.values.find(name);
      if (it != s.values.end()) *dst = it->second;
    }
    st.writes = writes_[k];
    // What the trace reader would refuse, refused here with the step's own name (a compute step
    // before any block was loaded or named, a note at a step without blocks).
    if (const std::string bad = step_placement_error(st, tiling_); !bad.empty())
      throw InputError("step " + std::to_string(k) + " ('" + s.label + "') " + bad +
                       ": name its blocks, m.step(label, i=..., j=...), or load them before");
    tr.steps.push_back(std::move(st));
  }
  Totals mine;  // the student's steps alone
  mine.hbm_read_bytes = mine.dram_read_bytes = read_bytes();
  mine.hbm_write_bytes = mine.dram_write_bytes = write_bytes();
  mine.peak_sram_bytes = peak_sram_;
  mine.peak_tile_bytes = peak_charged_;
  mine.steps = int64_t(steps_.size());
  mine.traffic = hbm_.traffic();
  if (backward) {
    tr.backward_totals = mine;
    Totals& T = tr.totals;
    T.hbm_read_bytes = T.dram_read_bytes = read_total;
    T.hbm_write_bytes = T.dram_write_bytes = write_total;
    T.peak_sram_bytes = std::max(T.peak_sram_bytes, mine.peak_sram_bytes);
    T.peak_tile_bytes = std::max(T.peak_tile_bytes, mine.peak_tile_bytes);
    T.steps = int64_t(tr.steps.size());
    T.traffic.read = plus(T.traffic.read, mine.traffic.read);
    T.traffic.written = plus(T.traffic.written, mine.traffic.written);
    tr.dK = has("dK") ? hbm_.get(Tensor::dK) : Mat::Zero(problem_.nk, problem_.d);
    tr.dV = has("dV") ? hbm_.get(Tensor::dV) : Mat::Zero(problem_.nk, problem_.d);
    if (has("dQ")) tr.dQ = hbm_.get(Tensor::dQ);
    return tr;  // O and lse: the forward's
  }
  tr.totals = mine;
  tr.O = has("O") ? hbm_.get(Tensor::O) : Mat::Zero(problem_.nq, problem_.d);
  if (has("L")) {
    tr.lse = hbm_.get(Tensor::L).col(0);
  } else if (has("l") && has("m")) {  // lse = m + log l, the definition (core/trace.h)
    tr.lse = (hbm_.get(Tensor::m).col(0).array() + hbm_.get(Tensor::l).col(0).array().log()).matrix();
  } else {
    tr.lse = Vec::Zero(problem_.nq);
  }
  return tr;
}

void StudentMachine::set_row_block(int64_t block) {
  if (block < 1) throw InputError("the row's block size must be at least 1 (got " + std::to_string(block) + ")");
  row_block_ = block;
}

RowTrace StudentMachine::to_row_trace() const {
  if (seal_) throw sealed_trace_error();
  auto row_tensor = [](const std::string& name, const std::string& where) {
    RowTensor t;
    if (!row_tensor_from_name(name, t))
      throw InputError(where + " is '" + name + "', not a tensor of the row (x, y, m, l)");
    return t;
  };
  RowTrace t;
  for (const HbmWrite& w : before_) {
    const RowTensor rt = row_tensor(info_of(w.tensor).name, "a tensor placed in HBM");
    if (rt == RowTensor::x) t.x = w.data.col(0);
    else t.hbm_before.push_back({rt, w.row0, w.data.col(0)});
  }
  if (t.x.size() == 0) throw InputError("no row x in this machine's HBM: its trace is an attention trace");
  if (row_block_ < 1 || row_block_ > t.n())
    throw InputError("the row's block size is not set (set_row_block, 1..N = " + std::to_string(t.n()) + ")");
  t.block = row_block_;
  int64_t read_total = 0, write_total = 0;
  for (size_t k = 0; k < steps_.size(); ++k) {
    const StudentStep& s = steps_[k];
    const std::string where = "step " + std::to_string(k);
    RowStep rs;
    rs.label = s.label;
    check_row_label(rs.label, where + "'s label");
    rs.read = s.read;
    rs.write = s.write;
    rs.read_total = read_total += s.read;
    rs.write_total = write_total += s.write;
    for (const StudentLoad& l : s.loads) rs.loads.push_back({row_tensor(l.tensor, where + " loads a tensor that"), l.r0, l.r1});
    for (const StudentStore& st : s.stores)
      rs.stores.push_back({row_tensor(st.tensor, where + " stores a tensor that"), st.r0, st.data.col(0)});
    t.steps.push_back(std::move(rs));
  }
  t.peak_sram_bytes = peak_charged_;
  return t;
}

}  // namespace flashstep
