#include "core/memory.h"

#include "core/fp8.h"
#include "core/l2_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace flashstep {

const char* tensor_name(Tensor t) {
  static const char* names[] = {"Q", "K", "V", "O", "l", "m", "S", "P", "L",
                                "dO", "dQ", "dK", "dV", "D", "dP", "dS", "O^(s)", "lse^(s)", "block table",
                                "s_Q", "s_K", "s_V"};
  return names[static_cast<int>(t)];
}

const char* slot_name(Slot s) {
  static const char* names[] = {"Q_i",   "K_j",   "V_j",  "O_i",      "l_i",     "m_i",
                                "S_ij", "m~_ij", "l~_ij", "m_i^new", "l_i^new", "L_i",
                                "dO_i", "dQ_i",  "dK~_j", "dV~_j",   "P_ij",    "P^dropped_ij", "dP_ij",
                                "dS_ij", "D_i", "O_i^(s)", "lse_i^(s)"};
  return names[static_cast<int>(s)];
}

bool slot_is_tile(Slot s) {
  return s == Slot::Qi || s == Slot::Kj || s == Slot::Vj || s == Slot::Oi || s == Slot::dOi ||
         s == Slot::dQi || s == Slot::dKj || s == Slot::dVj || s == Slot::Ops;
}

int64_t Traffic::total_read() const {
  int64_t sum = 0;
  for (auto b : read) sum += b;
  return sum;
}
int64_t Traffic::total_written() const {
  int64_t sum = 0;
  for (auto b : written) sum += b;
  return sum;
}

int64_t Hbm::footprint_bytes() const {
  int64_t sum = 0;
  for (int k = 0; k < kTensors; ++k) sum += int64_t(data_[k].size()) * bytes(Tensor(k));
  return sum;
}

void Hbm::log_access(Tensor t, bool store, int64_t row0, int64_t rows) {
  if (!access_log_) return;
  const int64_t row_bytes = int64_t(data_[idx(t)].cols()) * bytes(t);
  access_log_->add(t, store, row0 * row_bytes, rows * row_bytes);
}

Mat& Sram::load(Slot s, Hbm& hbm, Tensor t, int64_t row0, int64_t rows) {
  const Mat& src = hbm.get(t);
  Mat& dst = buf_[idx(s)];
  dst = src.middleRows(row0, rows);  // no reallocation when the slot keeps its shape
  hbm.traffic_mut().read[static_cast<int>(t)] += int64_t(dst.size()) * hbm.bytes(t);
  hbm.log_access(t, false, row0, rows);
  occupy(s, dst.size());
  return dst;
}

Mat& Sram::load_gathered(Slot s, Hbm& hbm, Tensor t, const Mat& rows) {
  Mat& dst = buf_[idx(s)];
  dst = rows;
  hbm.traffic_mut().read[static_cast<int>(t)] += int64_t(dst.size()) * hbm.bytes(t);
  occupy(s, dst.size());
  return dst;
}

Mat& Sram::scratch(Slot s, int64_t rows, int64_t cols) {
  Mat& dst = buf_[idx(s)];
  dst.resize(rows, cols);
  occupy(s, rows * cols);
  return dst;
}

void Sram::release(Slot s) { elems_[idx(s)] = 0; }

int64_t Sram::resident_bytes() const {
  int64_t sum = 0;
  for (int k = 0; k < kSlots; ++k) sum += elems_[k] * slot_bytes(Slot(k));
  return sum;
}

int64_t Sram::tile_bytes() const {
  int64_t sum = 0;
  for (int k = 0; k < kSlots; ++k)
    if (slot_is_tile(Slot(k))) sum += elems_[k] * slot_bytes(Slot(k));
  return sum;
}

int64_t Sram::tile_elems() const {
  int64_t sum = 0;
  for (int k = 0; k < kSlots; ++k)
    if (slot_is_tile(Slot(k))) sum += elems_[k];
  return sum;
}

void Sram::occupy(Slot s, int64_t elems) {
  elems_[idx(s)] = elems;
  const int64_t tiles = tile_bytes();
  // make_tiling refuses block sizes that do not fit, so this is a bug in a schedule. The
  // budget is in elements, as M is (the backward's float32 dQ_i counts as one element).
  if (tile_capacity_ > 0 && tile_elems() > tile_capacity_)
    throw std::logic_error(std::string("SRAM overflow loading ") + slot_name(s));
  peak_tile_bytes_ = std::max(peak_tile_bytes_, tiles);
  peak_bytes_ = std::max(peak_bytes_, resident_bytes());
}

}  // namespace flashstep

namespace flashstep {
void Hbm::log_write(Tensor t, int64_t row0, int64_t rows) {
  log_->push_back(HbmWrite{t, row0, data_[idx(t)].middleRows(row0, rows)});
}
}  // namespace flashstep

namespace flashstep {

const char* dtype_name(Dtype t) {
  switch (t) {
    case Dtype::fp32: return "fp32";
    case Dtype::fp16: return "fp16";
    case Dtype::bf16: return "bf16";
    case Dtype::fp8: return "fp8";
  }
  return "?";
}

// bf16 keeps float32's top 16 bits; round to nearest, ties to even (inputs are finite).
static float round_bf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  bits &= 0xFFFF0000u;
  std::memcpy(&x, &bits, 4);
  return x;
}

// IEEE binary16, round to nearest even, without _Float16 (clang 14 has none on x86-64): the
// quantum is 2^(e-10) for |x| in [2^e, 2^(e+1)), and 2^-24 below fp16's normal range; scaling by
// a power of two is exact in double, and rint rounds to nearest even.
static float round_fp16(float x) {
  if (!std::isfinite(x)) return x;
  int e = 0;
  std::frexp(x, &e);  // |x| in [2^(e-1), 2^e)
  const double q = std::ldexp(1.0, std::max(e - 11, -24));
  const double r = std::rint(double(x) / q) * q;
  return std::fabs(r) > 65504.0 ? std::copysign(INFINITY, x) : float(r);
}

float round_to(Dtype t, float x) {
  switch (t) {
    case Dtype::fp32: return x;
    case Dtype::fp16: return round_fp16(x);
    case Dtype::bf16: return round_bf16(x);
    case Dtype::fp8: return round_e4m3(x);
  }
  return x;
}

void round_in_place(Dtype t, float* data, int64_t n) {
  if (t == Dtype::fp32) return;
  for (int64_t k = 0; k < n; ++k) data[k] = round_to(t, data[k]);
}

}  // namespace flashstep
