#include "core/row_trace.h"

#include "core/input_files.h"

namespace flashstep {

namespace {
const char* const kRowNames[kRowTensors] = {"x", "y", "m", "l"};
}

const char* row_tensor_name(RowTensor t) { return kRowNames[int(t)]; }

bool row_tensor_from_name(const std::string& name, RowTensor& out) {
  for (int k = 0; k < kRowTensors; ++k)
    if (name == kRowNames[k]) {
      out = RowTensor(k);
      return true;
    }
  return false;
}

int64_t row_tensor_size(RowTensor t, int64_t n) { return t == RowTensor::x || t == RowTensor::y ? n : 1; }

void check_row_label(const std::string& label, const std::string& where) {
  if (label.empty()) throw InputError(where + " is empty (a step needs a label, such as \"block 0\")");
  if (label.size() > kMaxRowLabel)
    throw InputError(where + " is longer than " + std::to_string(kMaxRowLabel) + " bytes (" + excerpt(label) + ")");
}

void check_row_access(RowTensor t, int64_t begin, int64_t end, int64_t n, const std::string& where) {
  const int64_t size = row_tensor_size(t, n);
  if (begin < 0 || end > size || begin >= end)
    throw InputError(where + " [" + std::to_string(begin) + ":" + std::to_string(end) + "] is not inside " +
                     row_tensor_name(t) + " (" + std::to_string(size) + (size == 1 ? " value)" : " values)"));
}

std::array<Vec, kRowTensors> row_hbm_after(const RowTrace& t, size_t k) {
  std::array<Vec, kRowTensors> hbm;
  for (int k = 0; k < kRowTensors; ++k) hbm[size_t(k)] = Vec::Zero(row_tensor_size(RowTensor(k), t.n()));
  hbm[int(RowTensor::x)] = t.x;
  auto apply = [&](const RowWrite& w) { hbm[int(w.tensor)].segment(w.begin, w.data.size()) = w.data; };
  for (const RowWrite& w : t.hbm_before) apply(w);
  for (size_t s = 0; s < k && s < t.steps.size(); ++s)
    for (const RowWrite& w : t.steps[s].stores) apply(w);
  return hbm;
}

}  // namespace flashstep
