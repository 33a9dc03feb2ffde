// libFuzzer target: the trace files `flashstep gui --trace` opens (core/trace_file.h), of either
// kind: an attention run with its replay section, or a softmax row from a puzzle. Any input must
// give a trace or an InputError, never a crash (ASan/UBSan watch); a softmax row's running byte
// totals are the sums of its steps', its loads lie inside their tensors, and its HBM can be
// rebuilt after every step.
#include "core/row_trace.h"
#include "core/trace_file.h"
#include "core/types.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace flashstep;
  const nlohmann::json doc = nlohmann::json::parse(data, data + size, nullptr, false);
  if (doc.is_discarded()) return 0;
  try {
    const TraceFile f = trace_file_from_json(doc, "fuzz.json");
    if (f.kind == TraceKind::softmax_row) {
      const RowTrace& r = f.row;
      int64_t read = 0, write = 0;
      for (const RowStep& s : r.steps) {
        read += s.read;
        write += s.write;
        if (s.read_total != read || s.write_total != write) std::abort();
        for (const RowLoad& l : s.loads)
          if (l.begin < 0 || l.end < l.begin || l.end > row_tensor_size(l.tensor, r.n())) std::abort();
      }
      for (size_t k = 0; k <= r.steps.size(); ++k) {
        const auto hbm = row_hbm_after(r, k);
        for (int t = 0; t < kRowTensors; ++t)
          if (hbm[size_t(t)].size() != row_tensor_size(RowTensor(t), r.n())) std::abort();
      }
    } else if (f.trace.has_backward && f.trace.backward_first_step > f.trace.steps.size()) {
      std::abort();  // the backward's first step lies inside the trace
    }
  } catch (const InputError&) {
  }
  return 0;
}
