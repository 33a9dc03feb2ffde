#include "app/gui/row_state.h"

#include "core/checked.h"

#include <algorithm>
#include <cstdio>
#include <tuple>

namespace flashstep::gui {

// The lesson beside the row runs on every row a trace file may hold.
static_assert(size_t(kMaxRowLength) <= kMaxLessonValues, "a row trace's x longer than the lesson takes");

std::unique_ptr<RowView> make_row_view(RowTrace trace, const std::string& path) {
  auto v = std::make_unique<RowView>();
  v->path = path;
  std::vector<double> values(size_t(trace.n()));
  for (int64_t k = 0; k < trace.n(); ++k) values[size_t(k)] = double(trace.x(k));
  v->lesson = run_lesson(values, size_t(trace.block));
  v->trace = std::move(trace);
  return v;
}

bool row_tensor_judged(RowTensor t) { return t == RowTensor::x || t == RowTensor::y; }

RowBytes row_judged_bytes(const RowStep& s) {
  RowBytes b;
  for (const RowLoad& l : s.loads) (row_tensor_judged(l.tensor) ? b.read : b.diagnostic) += (l.end - l.begin) * kRowElemBytes;
  for (const RowWrite& w : s.stores) (row_tensor_judged(w.tensor) ? b.written : b.diagnostic) += w.data.size() * kRowElemBytes;
  return b;
}

namespace {
void add_row_bytes(RowBytes& to, const RowBytes& b) {
  to.read += b.read;
  to.written += b.written;
  to.diagnostic += b.diagnostic;
}
}  // namespace

RowAt row_at(const RowView& v, size_t k) {
  const RowTrace& t = v.trace;
  RowAt a;
  a.k = std::min(k, t.steps.size());
  a.hbm = row_hbm_after(t, a.k);
  a.x_loaded.assign(size_t(t.n()), Seen::no);
  a.y_written.assign(size_t(t.n()), Seen::no);
  a.blocks.assign(v.lesson.blocks.size(), RowBlockAt{});
  size_t m_stores = 0, l_stores = 0;
  for (const RowStep& st : t.steps) add_row_bytes(a.whole_run, row_judged_bytes(st));
  for (size_t s = 0; s < a.k; ++s) {
    const RowStep& st = t.steps[s];
    const bool now = s + 1 == a.k;
    add_row_bytes(a.so_far, row_judged_bytes(st));
    if (now) a.this_step = row_judged_bytes(st);
    for (const RowLoad& l : st.loads) {
      a.read[size_t(l.tensor)] += (l.end - l.begin) * kRowElemBytes;
      if (now) a.read_now[size_t(l.tensor)] = true;
      if (l.tensor != RowTensor::x) continue;
      for (int64_t e = l.begin; e < l.end; ++e) {
        a.x_loaded[size_t(e)] = now ? Seen::now : Seen::before;
        a.blocks[size_t(e / t.block)].reached = true;
      }
      if (now) a.current_block = int((l.end - 1) / t.block);
    }
    for (const RowWrite& w : st.stores) {
      const int64_t n = w.data.size();
      a.written[size_t(w.tensor)] += n * kRowElemBytes;
      if (now) a.written_now[size_t(w.tensor)] = true;
      if (w.tensor == RowTensor::y)
        for (int64_t e = w.begin; e < w.begin + n; ++e) a.y_written[size_t(e)] = now ? Seen::now : Seen::before;
      // The b-th store of m (of l) is the value after block b; stores beyond the blocks are ignored.
      if (w.tensor == RowTensor::m && m_stores < a.blocks.size()) {
        a.blocks[m_stores].m_stored = true;
        a.blocks[m_stores++].m = w.data(n - 1);
      }
      if (w.tensor == RowTensor::l && l_stores < a.blocks.size()) {
        a.blocks[l_stores].l_stored = true;
        a.blocks[l_stores++].l = w.data(n - 1);
      }
    }
  }
  return a;
}

std::string row_explain(const RowView& v, size_t k) {
  const RowTrace& t = v.trace;
  char buf[160];
  if (k == 0 || k > t.steps.size()) {
    std::snprintf(buf, sizeof buf, "Before the first step: HBM holds the row x (N = %lld) and y = 0, m = -inf, l = 0, "
                  "as the puzzle placed them.", (long long)t.n());
    return buf;
  }
  const RowStep& s = t.steps[k - 1];
  std::string text = "Your step '" + s.label + "'";
  auto list = [&](const char* verb, auto& items, auto range) {
    if (items.empty()) return;
    text += std::string(text.back() == '\'' ? ": " : "; ") + verb + " ";
    for (size_t n = 0; n < items.size(); ++n) {
      const auto [name, a, b] = range(items[n]);
      std::snprintf(buf, sizeof buf, "%s%s[%lld:%lld]", n ? ", " : "", name, (long long)a, (long long)b);
      text += buf;
    }
  };
  list("loads", s.loads, [](const RowLoad& l) { return std::make_tuple(row_tensor_name(l.tensor), l.begin, l.end); });
  list("stores", s.stores, [](const RowWrite& w) {
    return std::make_tuple(row_tensor_name(w.tensor), w.begin, w.begin + int64_t(w.data.size()));
  });
  const RowBytes b = row_judged_bytes(s);
  std::snprintf(buf, sizeof buf, " (%lld B read, %lld B written%s).", (long long)b.read, (long long)b.written,
                b.diagnostic ? "; m, l: diagnostics, not counted" : "");
  return text + (s.loads.empty() && s.stores.empty() ? ": no HBM traffic." : buf);
}

}  // namespace flashstep::gui
