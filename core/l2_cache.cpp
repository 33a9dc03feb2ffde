#include "core/l2_cache.h"

#include "core/schedule_registry.h"
#include "core/trace.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <unordered_map>

namespace flashstep {

// ---------------------------------------------------------------------------------------------
// GPUs and sizes

// NVIDIA's published figures (CUDA C++ Programming Guide, compute capabilities 8.0 and 9.0;
// the H100/H200 and A100 data sheets): the L2 size enabled on the chip (the H200's die has
// 60 MB of L2, 50 MiB of it enabled; cudaGetDeviceProperties' l2CacheSize on the machine is
// the check), the shared memory per SM that resident blocks can share, and the 1 KiB the
// driver reserves of it per resident block.
static const GpuSpec kGpus[] = {
    {"h200", 132, int64_t(50) << 20, 228 << 10, 1 << 10, 32},
    {"a100", 108, int64_t(40) << 20, 164 << 10, 1 << 10, 32},
};

const GpuSpec& find_gpu(const std::string& name) {
  for (const GpuSpec& g : kGpus)
    if (name == g.name) return g;
  throw InputError("unknown GPU '" + name + "' for --gpu (expected h200 or a100)");
}

int64_t parse_byte_size(const std::string& text, const std::string& flag) {
  const std::string bad = flag + " must be a size in bytes, or with KiB, MiB or GiB (e.g. 50MiB), got '" + text + "'";
  if (!text.empty() && text[0] == '-') throw InputError(flag + " must not be negative, got '" + text + "'");
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) throw InputError(bad);
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str() || errno == ERANGE) throw InputError(bad);
  const std::string unit(end);
  int shift = 0;
  if (unit == "KiB") shift = 10;
  else if (unit == "MiB") shift = 20;
  else if (unit == "GiB") shift = 30;
  else if (!unit.empty()) throw InputError(bad);
  constexpr unsigned long long kMax = 1ull << 40;
  if (n > (kMax >> shift)) throw InputError(flag + " is over 1 TiB: '" + text + "'");
  return int64_t(n << shift);
}

std::optional<L2Config> l2_config_from_flags(const std::string& l2, const std::string& gpu,
                                             int64_t heads, bool heads_given, bool ncu) {
  if (l2.empty() && gpu.empty()) {
    if (heads_given || ncu)
      throw InputError(std::string(heads_given ? "--heads" : "--ncu") +
                       " is for the L2 model: give --l2 SIZE or --gpu NAME too");
    return std::nullopt;
  }
  L2Config c;
  c.ncu = ncu;
  if (!gpu.empty()) c.gpu = gpu;
  const GpuSpec& g = find_gpu(c.gpu);
  c.bytes = l2.empty() ? g.l2_bytes : parse_byte_size(l2, "--l2");
  if (heads < 1 || heads > L2Config::kMaxHeads)
    throw InputError("--heads must be between 1 and " + std::to_string(L2Config::kMaxHeads) + ", got " +
                     std::to_string(heads));
  c.heads = heads;
  return c;
}

// ---------------------------------------------------------------------------------------------
// Concurrency

L2Plan plan_l2(const L2Config& cfg, int64_t tile_bytes) {
  const GpuSpec& g = find_gpu(cfg.gpu);
  L2Plan plan;
  // A block holds the four d-wide tiles in shared memory; more blocks fit on an SM while
  // their tiles (and the reserved KiB each) fit.
  plan.blocks_per_sm =
      std::clamp<int64_t>(g.smem_per_sm_bytes / (tile_bytes + g.smem_per_block_reserved), 1,
                          g.max_blocks_per_sm);
  plan.slots = g.sms * plan.blocks_per_sm;
  return plan;
}

// ---------------------------------------------------------------------------------------------
// Replay order

namespace {

using OrderKey = L2OrderKey;

// Where step k of head h falls in the GPU's order: the schedule's own rule (ScheduleInfo::
// l2_order). The grids are (Tr, heads) with i fastest, so block b = h Tr + i, and blocks are
// dispatched in that order, `slots` at a time.
OrderKey order_key(const AccessLog::StepTag& t, int64_t k, int64_t h, Schedule s, int64_t Tr,
                   int64_t Tc, int64_t slots) {
  return schedule_info(s).l2_order(L2StepPlace{t.line, t.i, t.j, k, h, Tr, Tc, slots});
}

// ---------------------------------------------------------------------------------------------
// The cache

// Which bytes of a 128-byte line: two 64-bit words.
struct ByteMask {
  uint64_t w[2] = {0, 0};
  static ByteMask range(int lo, int hi) {  // bytes [lo, hi)
    ByteMask m;
    for (int k = 0; k < 2; ++k) {
      const int a = std::clamp(lo - 64 * k, 0, 64), b = std::clamp(hi - 64 * k, 0, 64);
      if (b > a) m.w[k] = (b - a == 64 ? ~uint64_t(0) : ((uint64_t(1) << (b - a)) - 1) << a);
    }
    return m;
  }
  int64_t count() const { return __builtin_popcountll(w[0]) + __builtin_popcountll(w[1]); }
  ByteMask minus(const ByteMask& o) const { return {{w[0] & ~o.w[0], w[1] & ~o.w[1]}}; }
  void add(const ByteMask& o) {
    w[0] |= o.w[0];
    w[1] |= o.w[1];
  }
};
static_assert(L2Config::kLineBytes == 128, "ByteMask covers 128 bytes");

// Fully associative LRU, write-back, write-allocate (a store never reads DRAM).
class LruL2 {
 public:
  explicit LruL2(int64_t lines) : capacity_(lines) {
    where_.reserve(size_t(std::min<int64_t>(lines, int64_t(1) << 22)));
  }

  // Dirty bytes written back to DRAM: all of them, and those of head 0's lines.
  struct Written {
    int64_t all = 0, head0 = 0;
    void add(uint64_t line, int64_t bytes) {
      all += bytes;
      if ((line >> 52) == 0) head0 += bytes;
    }
  };

  // Returns the DRAM bytes read; write-backs of evicted lines go to `written`.
  int64_t load(uint64_t line, const ByteMask& m, Written& written, int64_t* hit) {
    Entry& e = touch(line, written);
    const int64_t missed = m.minus(e.valid).count();
    if (hit) *hit += m.count() - missed;
    e.valid.add(m);
    return missed;
  }
  void store(uint64_t line, const ByteMask& m, Written& written) {
    Entry& e = touch(line, written);
    e.valid.add(m);
    if (!e.dirty.count()) ++dirty_lines_;
    e.dirty.add(m);
  }
  int64_t lines() const { return int64_t(where_.size()); }
  int64_t dirty_lines() const { return dirty_lines_; }
  // Every line still dirty is written back once; with `invalidate`, the cache is emptied.
  Written flush(bool invalidate) {
    Written w;
    for (int32_t n = head_; n >= 0; n = nodes_[n].next) w.add(nodes_[n].line, nodes_[n].dirty.count());
    if (invalidate) {
      nodes_.clear();
      where_.clear();
      head_ = tail_ = -1;
      dirty_lines_ = 0;
    }
    return w;
  }

 private:
  struct Entry {
    uint64_t line = 0;
    int32_t prev = -1, next = -1;
    ByteMask valid, dirty;
  };

  // The line's entry, made most recently used; inserting evicts the least recently used.
  Entry& touch(uint64_t line, Written& written) {
    auto it = where_.find(line);
    int32_t n;
    if (it != where_.end()) {
      n = it->second;
      unlink(n);
    } else {
      if (int64_t(where_.size()) == capacity_) {
        n = tail_;
        written.add(nodes_[n].line, nodes_[n].dirty.count());
        if (nodes_[n].dirty.count()) --dirty_lines_;
        where_.erase(nodes_[n].line);
        unlink(n);
      } else {
        n = int32_t(nodes_.size());
        nodes_.emplace_back();
      }
      nodes_[n] = Entry{};
      nodes_[n].line = line;
      where_.emplace(line, n);
    }
    push_front(n);
    return nodes_[n];
  }
  void unlink(int32_t n) {
    Entry& e = nodes_[n];
    (e.prev >= 0 ? nodes_[e.prev].next : head_) = e.next;
    (e.next >= 0 ? nodes_[e.next].prev : tail_) = e.prev;
    e.prev = e.next = -1;
  }
  void push_front(int32_t n) {
    nodes_[n].next = head_;
    if (head_ >= 0) nodes_[head_].prev = n;
    head_ = n;
    if (tail_ < 0) tail_ = n;
  }

  int64_t capacity_;
  std::vector<Entry> nodes_;
  std::unordered_map<uint64_t, int32_t> where_;
  int32_t head_ = -1, tail_ = -1;
  int64_t dirty_lines_ = 0;
};

}  // namespace

L2Replay replay_l2(const AccessLog& log, int64_t capacity_bytes, Schedule s, int64_t Tr,
                   int64_t Tc, int64_t heads, int64_t slots, bool flush_per_kernel) {
  constexpr int64_t kLine = L2Config::kLineBytes;
  L2Replay r;
  r.step_read.assign(log.steps.size(), 0);
  r.step_write.assign(log.steps.size(), 0);
  r.step_hit.assign(log.steps.size(), 0);
  r.step_lines.assign(log.steps.size(), -1);
  r.step_dirty_lines.assign(log.steps.size(), -1);
  slots = std::max<int64_t>(slots, 1);

  // Every (head, access) pair, sorted into the GPU's order; ties keep program order.
  struct Issue {
    OrderKey key;
    int64_t head, access;
  };
  std::vector<Issue> order;
  order.reserve(size_t(heads) * log.accesses.size());
  std::vector<OrderKey> keys(log.steps.size());
  for (int64_t h = 0; h < heads; ++h) {
    for (size_t k = 0; k < keys.size(); ++k) keys[k] = order_key(log.steps[k], int64_t(k), h, s, Tr, Tc, slots);
    for (size_t a = 0; a < log.accesses.size(); ++a)
      order.push_back({keys[log.accesses[a].step], h, int64_t(a)});
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const Issue& x, const Issue& y) { return x.key < y.key; });

  const int64_t lines = capacity_bytes / kLine;
  LruL2 cache(lines);
  int64_t kernel = order.empty() ? 0 : order.front().key.kernel;
  for (const Issue& is : order) {
    if (flush_per_kernel && is.key.kernel != kernel) {
      const int64_t flushed = cache.flush(true).all;
      r.outside_kernels_write += flushed;
      r.all_write += flushed;
      kernel = is.key.kernel;
    }
    const MemAccess& a = log.accesses[is.access];
    const bool head0 = is.head == 0;
    int64_t read = 0, hit = 0;
    LruL2::Written written;
    if (lines == 0) {  // nothing can be held: every byte goes to DRAM as it is moved
      (a.store ? written.all : read) += a.bytes;
      written.head0 = head0 ? written.all : 0;
    } else {
      // Each head's tensors live in separate, line-aligned address ranges.
      const uint64_t base = (uint64_t(is.head) << 52) | (uint64_t(a.tensor) << 44);
      for (int64_t pos = a.offset; pos < a.offset + a.bytes;) {
        const int64_t line = pos / kLine, lo = pos - line * kLine;
        const int64_t hi = std::min(kLine, a.offset + a.bytes - line * kLine);
        const ByteMask m = ByteMask::range(int(lo), int(hi));
        if (a.store) cache.store(base + uint64_t(line), m, written);
        else read += cache.load(base + uint64_t(line), m, written, &hit);
        pos = (line + 1) * kLine;
      }
    }
    r.all_read += read;
    r.all_write += written.all;
    if (head0) {
      r.step_read[a.step] += read;
      r.step_hit[a.step] += hit;
      r.hit += hit;
      r.step_lines[a.step] = lines ? cache.lines() : 0;
      r.step_dirty_lines[a.step] = lines ? cache.dirty_lines() : 0;
    }
    r.step_write[a.step] += written.head0;  // head 0's lines, evicted by whichever head
  }
  const LruL2::Written flushed = cache.flush(false);
  r.final_writeback = flushed.head0;
  r.all_write += flushed.all;
  r.outside_kernels_write += flushed.all;
  for (size_t k = 0; k < r.step_read.size(); ++k) {
    r.read += r.step_read[k];
    r.write += r.step_write[k];
  }
  r.write += r.final_writeback;
  return r;
}

void apply_l2_model(Trace& tr, const AccessLog& log) {
  const Problem& p = tr.problem;
  const Tiling& t = tr.tiling;
  L2Totals& l2 = tr.totals.l2;
  const int64_t tile_bytes = (2 * t.Br + 2 * t.Bc) * p.d * p.bytes_per_elem;  // Q_i, K_j, V_j, O_i
  l2.plan = plan_l2(l2.config, tile_bytes);
  // The replay holds every (head, access) pair (48 bytes each) and touches every line each
  // head moves: refuse sizes that would take gigabytes or hours rather than thrash.
  const double issues = double(l2.config.heads) * double(log.accesses.size());
  const double line_ops = double(l2.config.heads) *
                          double(tr.totals.hbm_read_bytes + tr.totals.hbm_write_bytes) / L2Config::kLineBytes;
  if (issues > double(int64_t(1) << 25) || line_ops > double(int64_t(1) << 31))
    throw InputError("the L2 model would replay " + std::to_string(int64_t(issues)) + " accesses over " +
                     std::to_string(int64_t(line_ops)) + " cache lines (limits 2^25 and 2^31); use " +
                     "fewer --heads or a smaller problem");
  const L2Replay r = replay_l2(log, l2.config.bytes, p.schedule, t.Tr, t.Tc, l2.config.heads,
                               l2.plan.slots, false);
  if (l2.config.ncu) {
    const L2Replay n = replay_l2(log, l2.config.bytes, p.schedule, t.Tr, t.Tc, l2.config.heads,
                                 l2.plan.slots, true);
    l2.ncu_read_bytes = n.all_read;
    l2.ncu_write_bytes = n.all_write - n.outside_kernels_write;
  }
  l2.hit_bytes = r.hit;
  l2.all_heads_read_bytes = r.all_read;
  l2.all_heads_write_bytes = r.all_write;
  l2.final_writeback_bytes = r.final_writeback;
  tr.totals.dram_read_bytes = r.read;
  tr.totals.dram_write_bytes = r.write;
  if (tr.steps.empty()) return;  // fast path: totals only
  if (tr.steps.size() != log.steps.size()) throw std::logic_error("L2 model: steps and log differ");
  int64_t read = 0, write = 0, hit = 0, held = 0, dirty = 0;
  for (size_t k = 0; k < tr.steps.size(); ++k) {
    Step& s = tr.steps[k];
    s.dram_read = r.step_read[k];
    s.dram_write = r.step_write[k];
    s.dram_read_total = read += s.dram_read;
    s.dram_write_total = write += s.dram_write;
    s.l2_hit_total = hit += r.step_hit[k];
    if (r.step_lines[k] >= 0) {
      held = r.step_lines[k];
      dirty = r.step_dirty_lines[k];
    }
    s.l2_lines = held;
    s.l2_dirty_lines = dirty;
  }
}

}  // namespace flashstep
