#include "core/memory.h"

namespace flashstep {

const char* tensor_name(Tensor t) {
  static const char* names[] = {"Q", "K", "V", "O", "l", "m", "S", "P", "L"};
  return names[static_cast<int>(t)];
}

const char* slot_name(Slot s) {
  static const char* names[] = {"Q_i",   "K_j",   "V_j",  "O_i",      "l_i",     "m_i",
                                "S_ij", "m~_ij", "l~_ij", "m_i^new", "l_i^new", "L_i"};
  return names[static_cast<int>(s)];
}

bool slot_is_tile(Slot s) {
  return s == Slot::Qi || s == Slot::Kj || s == Slot::Vj || s == Slot::Oi;
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

void Hbm::store(Tensor t, int64_t row0, const Mat& block) { store_expr(t, row0, block); }

int64_t Hbm::footprint_bytes() const {
  int64_t sum = 0;
  for (auto& m : data_) sum += int64_t(m.size()) * bytes_per_elem_;
  return sum;
}

Mat& Sram::load(Slot s, Hbm& hbm, Tensor t, int64_t row0, int64_t rows) {
  const Mat& src = hbm.get(t);
  Mat& dst = buf_[idx(s)];
  dst = src.middleRows(row0, rows);  // no reallocation when the slot keeps its shape
  hbm.traffic_mut().read[static_cast<int>(t)] += int64_t(dst.size()) * bytes_per_elem_;
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
  for (auto e : elems_) sum += e;
  return sum * bytes_per_elem_;
}

int64_t Sram::tile_bytes() const {
  int64_t sum = 0;
  for (int k = 0; k < kSlots; ++k)
    if (slot_is_tile(Slot(k))) sum += elems_[k];
  return sum * bytes_per_elem_;
}

void Sram::occupy(Slot s, int64_t elems) {
  elems_[idx(s)] = elems;
  const int64_t tiles = tile_bytes();
  // make_tiling refuses block sizes that do not fit, so this is a bug in a schedule.
  if (tile_capacity_ > 0 && tiles > tile_capacity_ * bytes_per_elem_)
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
