// The simulated memory hierarchy: HBM holds named tensors, SRAM holds named slots.
//
// Data moves only through Sram::load (HBM -> SRAM, counted as HBM bytes read) and
// Hbm::store (SRAM -> HBM, counted as HBM bytes written). The traffic figures in a trace are
// a consequence of those calls: a schedule that forgets a load has wrong numbers.
//
// SRAM accounting rule (documented in docs/algorithm.md, "How SRAM is counted"):
//   * The four d-wide tiles Q_i, K_j, V_j, O_i are charged to the SRAM budget M. This is where
//     the 4 in Bc = ceil(M/4d) comes from: each tile gets a quarter of SRAM. Because the paper
//     rounds up, the tiles may need up to 4d-4 elements more than M; the budget they are
//     checked against is therefore M rounded up to whole tile rows, 4d*ceil(M/4d), which
//     equals M whenever 4d divides M.
//   * The score tile S_ij / P~_ij (Br x Bc) and the Br-long row statistics (l_i, m_i, m~_ij,
//     l~_ij, m_i^new, l_i^new) are on-chip scratch: registers on a real GPU. They are
//     tracked (peak_sram_bytes includes them) but not charged to M. Br <= d keeps the score
//     tile no larger than one d-wide tile (Br*Bc <= M/4 when 4d divides M).
//   * Standard attention (Algorithm 0) is not tiled against M; its peak shows how far its
//     row blocks of S and P overshoot SRAM.
#pragma once
#include "core/types.h"

#include <array>
#include <vector>

namespace flashstep {

struct AccessLog;  // l2_cache.h

// L: lse (FlashAttention-2). The backward pass adds dO (its input), the gradients dQ, dK, dV,
// D = rowsum(dO o O) (FA2's backward) and standard attention's dP and dS.
// Flash-decoding (--schedule decode) adds the float32 partials of its S splits, stacked:
// Op = O^(s) ((S Nq) x d, split s at rows s Nq ..) and Lp = lse^(s) ((S Nq) x 1); with a paged
// KV cache (--page-size, core/paged_kv.h) BT is the block table, one int32 per logical page.
// --dtype fp8 adds the float32 scales of Q, K, V (core/fp8.h): sQ, sK, sV, a column of one
// scale per tensor or one per tile (Q block of Br rows, K/V block of Bc rows).
enum class Tensor : uint8_t { Q, K, V, O, l, m, S, P, L, dO, dQ, dK, dV, D, dP, dS, Op, Lp, BT, sQ, sK, sV, count };
constexpr int kTensors = static_cast<int>(Tensor::count);
const char* tensor_name(Tensor t);

enum class Slot : uint8_t {
  Qi, Kj, Vj, Oi,                 // d-wide tiles, charged to M
  li, mi, Sij, mt, lt, mnew, lnew,  // scratch: S_ij doubles as P~_ij after line 10
  Li,                               // FlashAttention-2's logsumexp block, on chip
  dOi, dQi, dKj, dVj,               // backward d-wide tiles (dK~_j, dV~_j), charged to 2M
  Pij, Pdij, dPij, dSij, Di,        // backward scratch (Pdij: P_ij^dropped)
  Ops, Lps,                         // decode's combine: O_i^(s) (a d-wide tile, float32), lse_i^(s)
  count
};
constexpr int kSlots = static_cast<int>(Slot::count);
const char* slot_name(Slot s);  // paper notation: "Q_i", "S_ij", "m~_ij", ...
bool slot_is_tile(Slot s);
// Bytes per element of a slot: tiles hold the storage type (dQ_i, like dQ in HBM, float32),
// scratch is float32.
inline int slot_elem_bytes(Slot s, int tile_bytes) {
  return slot_is_tile(s) && s != Slot::dQi && s != Slot::Ops ? tile_bytes : 4;
}

struct Traffic {
  std::array<int64_t, kTensors> read{}, written{};  // bytes
  int64_t total_read() const;
  int64_t total_written() const;
};

// An HBM write as it happened: enough to replay the HBM state at any step.
struct HbmWrite {
  Tensor tensor;
  int64_t row0;
  Mat data;
};

// Whether a tensor is stored in the problem's dtype (Q, K, V, O, S, P, dO, dK, dV, dP, dS) or
// in float32: the statistics l, m, L, D, and dQ, which the backward accumulates over every
// K/V block (FlashAttention keeps it in a float32 buffer for the same reason: Tc roundings
// to fp16 would swamp the gradient).
inline bool tensor_uses_dtype(Tensor t) {
  return !(t == Tensor::l || t == Tensor::m || t == Tensor::L || t == Tensor::D || t == Tensor::dQ ||
           t == Tensor::Op || t == Tensor::Lp || t == Tensor::BT || t == Tensor::sQ || t == Tensor::sK ||
           t == Tensor::sV);
}
// The type a tensor is stored in under storage type `storage`: float32 for the statistics and
// scales; Q, K, V in the storage type; the rest (O, ...) in output_dtype(storage), which differs
// from the storage type only for fp8 (O in bf16).
inline Dtype tensor_dtype(Tensor t, Dtype storage) {
  if (!tensor_uses_dtype(t)) return Dtype::fp32;
  return t == Tensor::Q || t == Tensor::K || t == Tensor::V ? storage : output_dtype(storage);
}
// Rows and columns of a tensor in HBM (splits: decode's S, which stacks its partials).
inline int64_t tensor_rows(Tensor t, int64_t nq, int64_t nk, int64_t splits = 1) {
  if (t == Tensor::Op || t == Tensor::Lp) return splits * nq;
  return (t == Tensor::K || t == Tensor::V || t == Tensor::dK || t == Tensor::dV) ? nk : nq;
}
inline int64_t tensor_cols(Tensor t, int64_t nk, int64_t d) {
  if (t == Tensor::l || t == Tensor::m || t == Tensor::L || t == Tensor::D || t == Tensor::Lp || t == Tensor::BT ||
      t == Tensor::sQ || t == Tensor::sK || t == Tensor::sV)
    return 1;
  if (t == Tensor::S || t == Tensor::P || t == Tensor::dP || t == Tensor::dS) return nk;
  return d;
}

class Hbm {
 public:
  explicit Hbm(Dtype dtype = Dtype::fp32) : dtype_(dtype) {}
  // Places an input in HBM, rounded to the storage type (not counted: inputs start in HBM).
  void put(Tensor t, Mat value) {
    round_in_place(tensor_dtype(t, dtype_), value.data(), value.size());
    data_[idx(t)] = std::move(value);
  }
  const Mat& get(Tensor t) const { return data_[idx(t)]; }
  // Alg1 L2-style allocation: a tensor of this shape exists in HBM; contents written by store.
  void allocate(Tensor t, int64_t rows, int64_t cols) { data_[idx(t)].resize(rows, cols); }
  // SRAM -> HBM: writes `block` at rows [row0, row0 + block.rows()), rounded to the storage
  // type. Counted.
  template <typename Expr>
  void store(Tensor t, int64_t row0, const Expr& block) {
    auto dst = data_[idx(t)].middleRows(row0, block.rows());
    dst = block;
    if (tensor_dtype(t, dtype_) != Dtype::fp32)
      for (int64_t r = 0; r < dst.rows(); ++r) round_in_place(tensor_dtype(t, dtype_), &dst(r, 0), dst.cols());
    traffic_.written[idx(t)] += int64_t(block.size()) * bytes(t);
    if (log_) log_write(t, row0, block.rows());
    if (access_log_) log_access(t, true, row0, block.rows());
  }
  // HBM -> registers: rows [row0, row0 + rows) of t, counted as read (the block-table
  // entries a paged load reads, 4 bytes each: core/paged_kv.h).
  Mat read(Tensor t, int64_t row0, int64_t rows) {
    traffic_.read[idx(t)] += rows * int64_t(data_[idx(t)].cols()) * bytes(t);
    if (access_log_) log_access(t, false, row0, rows);
    return data_[idx(t)].middleRows(row0, rows);
  }
  // While set, every load and store is also appended here, for the L2 model (l2_cache.h).
  void set_access_log(AccessLog* log) { access_log_ = log; }
  void log_access(Tensor t, bool store, int64_t row0, int64_t rows);
  // While set, every store is also appended here (the Recorder uses it to replay HBM state).
  void set_write_log(std::vector<HbmWrite>* log) { log_ = log; }
  const Traffic& traffic() const { return traffic_; }
  Traffic& traffic_mut() { return traffic_; }
  int bytes(Tensor t) const { return dtype_bytes(tensor_dtype(t, dtype_)); }
  Dtype dtype() const { return dtype_; }
  int64_t footprint_bytes() const;

 private:
  static int idx(Tensor t) { return static_cast<int>(t); }
  void log_write(Tensor t, int64_t row0, int64_t rows);
  std::array<Mat, kTensors> data_;
  Traffic traffic_;
  std::vector<HbmWrite>* log_ = nullptr;
  AccessLog* access_log_ = nullptr;
  Dtype dtype_;
};

class Sram {
 public:
  // tile_capacity: elements the four d-wide tiles may use together; <= 0 means unlimited.
  // The tiles hold the storage type (O_i: the output type, bf16 under fp8); scratch (S_ij,
  // statistics) is float32.
  Sram(int64_t tile_capacity, Dtype dtype = Dtype::fp32)
      : tile_capacity_(tile_capacity), tile_bytes_per_elem_(dtype_bytes(dtype)),
        out_bytes_per_elem_(dtype_bytes(output_dtype(dtype))) {}
  int slot_bytes(Slot s) const {
    return slot_elem_bytes(s, s == Slot::Oi ? out_bytes_per_elem_ : tile_bytes_per_elem_);
  }
  // HBM -> SRAM: copies rows [row0, row0+rows) of tensor t into slot s. Counted as HBM read.
  Mat& load(Slot s, Hbm& hbm, Tensor t, int64_t row0, int64_t rows);
  // HBM -> SRAM of rows the caller gathered from t's physical pages (a paged KV cache,
  // core/paged_kv.h): counted as HBM reads of t, as load does.
  Mat& load_gathered(Slot s, Hbm& hbm, Tensor t, const Mat& rows);
  // An on-chip buffer that holds a result (S_ij, m~_ij, O_i^new, ...). Not HBM traffic.
  Mat& scratch(Slot s, int64_t rows, int64_t cols);
  Mat& at(Slot s) { return buf_[idx(s)]; }
  const Mat& at(Slot s) const { return buf_[idx(s)]; }
  void release(Slot s);
  int64_t resident_elems(Slot s) const { return elems_[idx(s)]; }
  const std::array<int64_t, kSlots>& resident() const { return elems_; }
  int64_t resident_bytes() const;
  int64_t tile_bytes() const;
  int64_t tile_elems() const;
  int64_t peak_bytes() const { return peak_bytes_; }
  int64_t peak_tile_bytes() const { return peak_tile_bytes_; }

 private:
  static int idx(Slot s) { return static_cast<int>(s); }
  void occupy(Slot s, int64_t elems);
  std::array<Mat, kSlots> buf_;
  std::array<int64_t, kSlots> elems_{};
  int64_t tile_capacity_;
  int tile_bytes_per_elem_, out_bytes_per_elem_;
  int64_t peak_bytes_ = 0, peak_tile_bytes_ = 0;
};

}  // namespace flashstep
