// The L2 model (core/l2_cache.h, docs/l2-model.md): its exact properties, the concurrency plan
// and the command line's --l2, --gpu and --heads.
#include "core/export.h"
#include "core/l2_cache.h"
#include "test_helpers.h"

#include <catch2/catch.hpp>
#include <bitset>
#include <list>
#include <algorithm>
#include <random>

using namespace flashstep;

namespace {

Trace run_l2(const ProblemSpec& s, std::optional<L2Config> l2, bool record) {
  const Problem p = make_problem(s);
  const Tiling t = make_tiling(p.nq, p.nk, p.d, p.M, s.br, s.bc);
  RunOptions opt;
  opt.record = record;
  opt.l2 = std::move(l2);
  return run_problem(p, t, opt);
}

L2Config l2_of(int64_t bytes, int64_t heads = 1) {
  L2Config c;
  c.bytes = bytes;
  c.heads = heads;
  return c;
}

// Ragged blocks, Nq != Nk, small and d-multiple sizes, a mask, low precision.
ProblemSpec spec_case(int k, Schedule sched, uint64_t seed) {
  ProblemSpec s;
  s.schedule = sched;
  s.seed = seed;
  switch (k) {
    case 0: s.nq = 97; s.nk = 75; s.d = 16; s.M = 512; break;
    case 1: s.nq = 64; s.nk = 130; s.d = 8; s.M = 256; s.options.dtype = Dtype::bf16; break;
    case 2: s.nq = 100; s.nk = 100; s.d = 12; s.M = 384; s.options.mask.causal = true; break;
    default: s.nq = 33; s.nk = 200; s.d = 4; s.M = 64; s.options.dtype = Dtype::fp16; break;
  }
  return s;
}

// Bytes of the tensors each schedule writes (the distinct output bytes).
int64_t output_bytes(const Problem& p) {
  const int64_t e = p.bytes_per_elem, o = p.nq * p.d * e;
  switch (p.schedule) {
    case Schedule::fa1: return o + 2 * p.nq * 4;            // O, l, m
    case Schedule::fa2: return o + p.nq * 4;                // O, L
    case Schedule::standard: return o + 2 * p.nq * p.nk * e;  // S, P, O
    case Schedule::decode: break;  // the L2 model does not take decode
  }
  return -1;
}

}  // namespace

TEST_CASE("L2 0 or no L2 model: DRAM bytes equal HBM bytes, step by step", "[l2]") {
  const Schedule sched = GENERATE(Schedule::fa1, Schedule::fa2, Schedule::standard);
  const int k = GENERATE(0, 1, 2, 3);
  const ProblemSpec s = spec_case(k, sched, 11 + uint64_t(k));
  CAPTURE(schedule_name(sched), k);
  for (const std::optional<L2Config>& l2 : {std::optional<L2Config>(), std::optional(l2_of(0)),
                                            std::optional(l2_of(127))}) {  // 127 B: not one line
    const Trace tr = run_l2(s, l2, true);
    CHECK(tr.totals.l2.enabled == l2.has_value());
    CHECK(tr.totals.dram_read_bytes == tr.totals.hbm_read_bytes);
    CHECK(tr.totals.dram_write_bytes == tr.totals.hbm_write_bytes);
    for (const Step& st : tr.steps) {
      REQUIRE(st.dram_read == st.hbm_read);
      REQUIRE(st.dram_write == st.hbm_write);
      REQUIRE(st.dram_read_total == st.hbm_read_total);
      REQUIRE(st.dram_write_total == st.hbm_write_total);
    }
  }
}

TEST_CASE("an L2 larger than everything reads each input byte once and writes each output byte once", "[l2]") {
  const Schedule sched = GENERATE(Schedule::fa1, Schedule::fa2, Schedule::standard);
  const int k = GENERATE(0, 1, 3);  // unmasked: every Q, K, V byte is loaded at least once
  const int64_t heads = GENERATE(1, 32);
  const ProblemSpec s = spec_case(k, sched, 40 + uint64_t(k));
  CAPTURE(schedule_name(sched), k, heads);
  const Trace tr = run_l2(s, l2_of(int64_t(1) << 36, heads), true);  // 64 GiB / heads each
  const Problem& p = tr.problem;
  CHECK(tr.totals.dram_read_bytes == (p.nq + 2 * p.nk) * p.d * p.bytes_per_elem);
  CHECK(tr.totals.dram_write_bytes == output_bytes(p));
  CHECK(tr.totals.l2.final_writeback_bytes == output_bytes(p));  // nothing was ever evicted
  CHECK(tr.totals.l2.hit_bytes == tr.totals.hbm_read_bytes - tr.totals.dram_read_bytes);
  CHECK(tr.totals.hbm_read_bytes > tr.totals.dram_read_bytes);  // the paper counts re-reads
}

TEST_CASE("DRAM bytes never increase as the L2 grows (LRU inclusion)", "[l2]") {
  const Schedule sched = GENERATE(Schedule::fa1, Schedule::fa2, Schedule::standard);
  const int k = GENERATE(0, 1, 2, 3);
  const ProblemSpec s = spec_case(k, sched, 70 + uint64_t(k));
  CAPTURE(schedule_name(sched), k);
  int64_t prev_read = INT64_MAX, prev_write = INT64_MAX;
  int64_t first_read = -1, last_read = -1, changes = 0;
  for (int64_t bytes = 0; bytes <= (int64_t(1) << 22); bytes = bytes ? bytes * 3 / 2 + 1 : 100) {
    const Trace tr = run_l2(s, l2_of(bytes), false);
    CAPTURE(bytes);
    REQUIRE(tr.totals.dram_read_bytes <= prev_read);
    REQUIRE(tr.totals.dram_write_bytes <= prev_write);
    changes += tr.totals.dram_read_bytes < prev_read && prev_read != INT64_MAX;
    prev_read = tr.totals.dram_read_bytes;
    prev_write = tr.totals.dram_write_bytes;
    if (first_read < 0) first_read = prev_read;
    last_read = prev_read;
  }
  // The sweep spans the paper's count down to the compulsory bytes (fa2 in one jump, when
  // K_j and V_j fit: all its Q blocks are in flight together).
  CHECK(first_read > last_read);
  CHECK(changes >= (sched == Schedule::fa2 ? 1 : 2));
}

TEST_CASE("LRU inclusion on random access streams, straight through replay_l2", "[l2]") {
  std::mt19937_64 rng(GENERATE(1u, 2u, 3u));
  AccessLog log;
  for (int k = 0; k < 3000; ++k) {
    if (k % 5 == 0) log.begin_step(Line::A0_L1, k, -1);
    const Tensor t = Tensor(rng() % 4);
    const int64_t off = int64_t(rng() % 9000), bytes = 1 + int64_t(rng() % 700);
    log.add(t, rng() % 3 == 0, off, bytes);
  }
  int64_t prev_read = INT64_MAX, prev_write = INT64_MAX;
  for (int64_t bytes : {0, 128, 300, 1024, 4096, 9000, 20000, 40000, 1 << 20}) {
    const L2Replay r = replay_l2(log, bytes, Schedule::standard, 1, 1, 1, 1);
    CAPTURE(bytes);
    CHECK(r.read <= prev_read);
    CHECK(r.write <= prev_write);
    int64_t sum_read = 0, sum_write = 0;
    for (size_t k = 0; k < r.step_read.size(); ++k) {
      sum_read += r.step_read[k];
      sum_write += r.step_write[k];
    }
    CHECK(sum_read == r.read);
    CHECK(sum_write + r.final_writeback == r.write);
    prev_read = r.read;
    prev_write = r.write;
  }
}

namespace {

// A second LRU, written from docs/l2-model.md's rules alone and kept naive: lines of 128 bytes
// in a list, most recent first; a line remembers which of its bytes are valid and which dirty.
// A load reads from DRAM the bytes of its range that are not valid; a store makes its bytes
// valid and dirty without reading; a line evicted, or left at the end, writes back its dirty
// bytes.
struct NaiveLru {
  struct Held {
    uint64_t line;
    std::bitset<128> valid, dirty;
  };
  size_t capacity;
  std::list<Held> lines;
  int64_t read = 0, write = 0, hit = 0;
  Held& touch(uint64_t line) {
    for (auto it = lines.begin(); it != lines.end(); ++it)
      if (it->line == line) {
        lines.splice(lines.begin(), lines, it);
        return lines.front();
      }
    if (lines.size() == capacity) {
      write += int64_t(lines.back().dirty.count());
      lines.pop_back();
    }
    lines.push_front({line, {}, {}});
    return lines.front();
  }
  void access(uint64_t tensor, bool store, int64_t offset, int64_t bytes) {
    if (capacity == 0) {
      (store ? write : read) += bytes;
      return;
    }
    for (int64_t b = offset; b < offset + bytes;) {
      const int64_t line = b / 128, end = std::min(offset + bytes, (line + 1) * 128);
      Held& h = touch((tensor << 44) | uint64_t(line));
      for (int64_t x = b; x < end; ++x) {
        const size_t bit = size_t(x - line * 128);
        if (store) h.dirty.set(bit);
        else if (h.valid.test(bit)) ++hit;
        else ++read;
        h.valid.set(bit);
      }
      b = end;
    }
  }
  int64_t flush() {
    int64_t n = 0;
    for (const Held& h : lines) n += int64_t(h.dirty.count());
    return n;
  }
};

}  // namespace

TEST_CASE("replay_l2 equals a naive LRU on random access streams", "[l2]") {
  GENERATE(range(0, 3));  // three fresh streams
  const uint64_t seed = (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
  std::mt19937_64 rng(seed);
  AccessLog log;
  // Few tensors and short offsets, so lines are reused, partly and across tensors.
  for (int k = 0; k < 3000; ++k) {
    if (k % 5 == 0) log.begin_step(Line::A0_L1, k, -1);
    const Tensor t = Tensor(rng() % 4);
    const int64_t off = int64_t(rng() % 9000), bytes = 1 + int64_t(rng() % 700);
    log.add(t, rng() % 3 == 0, off, bytes);
  }
  for (int64_t bytes : {0, 128, 300, 1024, 4096, 9000, 20000, 40000, 1 << 20}) {
    CAPTURE(seed, bytes);
    NaiveLru lru{size_t(bytes / 128), {}};
    for (const MemAccess& a : log.accesses) lru.access(uint64_t(a.tensor), a.store, a.offset, a.bytes);
    const int64_t final_writeback = lru.flush();
    const L2Replay r = replay_l2(log, bytes, Schedule::standard, 1, 1, 1, 1);
    CHECK(r.read == lru.read);
    CHECK(r.hit == lru.hit);
    CHECK(r.final_writeback == final_writeback);
    CHECK(r.write == lru.write + final_writeback);
  }
}

TEST_CASE("fa2 with every Q block in flight: an L2 of one K_j and V_j serves all but the first load", "[l2]") {
  // Lockstep waves: at each j, the Q blocks in flight load K_j and V_j one after another.
  ProblemSpec s;
  s.schedule = Schedule::fa2;
  s.nq = 250, s.nk = 192, s.d = 16, s.M = 1024, s.seed = 9;  // Br = Bc = 16, Tr = 16, Tc = 12
  const Trace probe = run_l2(s, l2_of(0), false);
  const int64_t kv_tile = 2 * probe.tiling.Bc * s.d * 4;  // K_j and V_j: whole lines here
  REQUIRE(kv_tile % L2Config::kLineBytes == 0);
  const Trace tr = run_l2(s, l2_of(kv_tile), true);
  CHECK(tr.totals.l2.plan.slots >= tr.tiling.Tr);
  CHECK(tr.totals.dram_read_bytes == (s.nq + 2 * s.nk) * s.d * 4);
  // One line less and LRU thrashes: every K_j, V_j load misses again.
  const Trace small = run_l2(s, l2_of(kv_tile - L2Config::kLineBytes), false);
  CHECK(small.totals.dram_read_bytes == small.totals.hbm_read_bytes);
}

TEST_CASE("as Nsight Compute counts: the L2 is emptied before each kernel, dirty lines left behind are not counted", "[l2]") {
  // With an L2 larger than everything, nothing is evicted inside a kernel: no write counts.
  // fa2 is one kernel, so it still reads each input byte once; Algorithm 1's launches (one per
  // j) and standard attention's passes start cold, so every load they make reads DRAM.
  const Schedule sched = GENERATE(Schedule::fa1, Schedule::fa2, Schedule::standard);
  const int64_t heads = GENERATE(1, 3);
  ProblemSpec s = spec_case(GENERATE(0, 1), sched, 90);
  CAPTURE(schedule_name(sched), heads);
  L2Config c = l2_of(int64_t(1) << 36, heads);
  c.ncu = true;
  const Trace tr = run_l2(s, c, false);
  const Problem& p = tr.problem;
  CHECK(tr.totals.l2.ncu_write_bytes == 0);
  if (sched == Schedule::fa2)
    CHECK(tr.totals.l2.ncu_read_bytes == heads * (p.nq + 2 * p.nk) * p.d * p.bytes_per_elem);
  else
    CHECK(tr.totals.l2.ncu_read_bytes == heads * tr.totals.hbm_read_bytes);
  // The hardware's own count is unchanged by asking for the ncu view.
  const Trace plain = run_l2(s, l2_of(int64_t(1) << 36, heads), false);
  CHECK(tr.totals.l2.all_heads_read_bytes == plain.totals.l2.all_heads_read_bytes);
  CHECK(tr.totals.l2.all_heads_write_bytes == plain.totals.l2.all_heads_write_bytes);
  // With no L2 at all, ncu sees the paper's counts.
  c.bytes = 0;
  const Trace none = run_l2(s, c, false);
  CHECK(none.totals.l2.ncu_read_bytes == heads * none.totals.hbm_read_bytes);
  CHECK(none.totals.l2.ncu_write_bytes == heads * none.totals.hbm_write_bytes);
}

TEST_CASE("the L2 model is deterministic and leaves the paper's counts alone", "[l2]") {
  const Schedule sched = GENERATE(Schedule::fa1, Schedule::fa2, Schedule::standard);
  const ProblemSpec s = spec_case(2, sched, 5);
  const Trace plain = run_l2(s, std::nullopt, true);
  const Trace a = run_l2(s, l2_of(3000, 4), true), b = run_l2(s, l2_of(3000, 4), true);
  const Trace fast = run_l2(s, l2_of(3000, 4), false);
  CHECK(a.totals.hbm_read_bytes == plain.totals.hbm_read_bytes);
  CHECK(a.totals.hbm_write_bytes == plain.totals.hbm_write_bytes);
  CHECK(a.totals.dram_read_bytes == b.totals.dram_read_bytes);
  CHECK(a.totals.dram_write_bytes == b.totals.dram_write_bytes);
  CHECK(fast.totals.dram_read_bytes == a.totals.dram_read_bytes);
  CHECK(fast.totals.dram_write_bytes == a.totals.dram_write_bytes);
  REQUIRE(a.steps.size() == plain.steps.size());
  int64_t write_sum = 0;
  for (size_t k = 0; k < a.steps.size(); ++k) {
    REQUIRE(a.steps[k].hbm_read == plain.steps[k].hbm_read);
    REQUIRE(a.steps[k].dram_read == b.steps[k].dram_read);
    REQUIRE(a.steps[k].dram_read <= a.steps[k].hbm_read);  // a load reads at most its bytes
    write_sum += a.steps[k].dram_write;
  }
  CHECK(write_sum + a.totals.l2.final_writeback_bytes == a.totals.dram_write_bytes);
  const nlohmann::json j = trace_to_json(a);
  CHECK(j["totals"]["dram_read_bytes"] == a.totals.dram_read_bytes);
  CHECK(j["totals"]["l2"]["slots"] == a.totals.l2.plan.slots);
  CHECK(j["totals"]["l2"]["all_heads_dram_read_bytes"] == a.totals.l2.all_heads_read_bytes);
  CHECK(j["steps"][3]["dram_write_bytes"] == a.steps[3].dram_write);
}

TEST_CASE("the H200 plan: blocks per SM from the tiles' shared memory", "[l2]") {
  L2Config c = l2_of(int64_t(50) << 20, 32);
  // The problem, M = 128 KiB, d = 64: Br = 64, Bc = 128, tiles (2*64 + 2*128)*64*4 B
  // = 96 KiB, so 2 blocks per SM (228 KiB with 1 KiB reserved per block), 264 in flight.
  const L2Plan p = plan_l2(c, (2 * 64 + 2 * 128) * 64 * 4);
  CHECK(p.blocks_per_sm == 2);
  CHECK(p.slots == 264);
  CHECK(plan_l2(c, 200 * 1024).blocks_per_sm == 1);
  CHECK(plan_l2(c, 300 * 1024).blocks_per_sm == 1);  // larger than an SM: still one
  CHECK(plan_l2(c, 1024).blocks_per_sm == 32);       // the hardware's limit per SM
  c.gpu = "a100";
  CHECK(plan_l2(c, 80 * 1024).slots == 108 * 2);
}

TEST_CASE("heads share the L2: DRAM bytes per head grow with the heads in flight, and sum over heads", "[l2]") {
  // fa2: Tr = 16 Q blocks a head; with 1 head an L2 of 24 KiB keeps K, V (2 x 8 KiB) of it,
  // with 8 heads in the same wave K_j, V_j of every head compete for the lines.
  ProblemSpec s;
  s.schedule = GENERATE(Schedule::fa1, Schedule::fa2, Schedule::standard);
  s.nq = 256, s.nk = 128, s.d = 16, s.M = 1024, s.seed = 21;
  CAPTURE(schedule_name(s.schedule));
  int64_t prev = 0;
  for (int64_t heads : {1, 2, 8, 64}) {
    const Trace tr = run_l2(s, l2_of(24 << 10, heads), false);
    CAPTURE(heads);
    const L2Totals& l2 = tr.totals.l2;
    CHECK(tr.totals.dram_read_bytes >= prev);  // head 0's share of the L2 only shrinks
    prev = tr.totals.dram_read_bytes;
    CHECK(l2.all_heads_read_bytes >= (s.nq + 2 * s.nk) * s.d * 4 * heads);
    CHECK(l2.all_heads_read_bytes <= tr.totals.hbm_read_bytes * heads);
    CHECK(l2.all_heads_write_bytes <= tr.totals.hbm_write_bytes * heads);
    if (heads == 1) {
      CHECK(l2.all_heads_read_bytes == tr.totals.dram_read_bytes);
      CHECK(l2.all_heads_write_bytes == tr.totals.dram_write_bytes);
    }
  }
}

TEST_CASE("L2 model flags --l2 --gpu --heads: sizes, and one error line for bad values", "[l2][cli]") {
  CHECK(parse_byte_size("0", "--l2") == 0);
  CHECK(parse_byte_size("128KiB", "--l2") == 131072);
  CHECK(parse_byte_size("50MiB", "--l2") == 52428800);
  CHECK(parse_byte_size("1GiB", "--l2") == 1073741824);
  CHECK_THROWS_AS(parse_byte_size("2048GiB", "--l2"), InputError);
  CHECK_FALSE(l2_config_from_flags("", "", 1, false).has_value());
  CHECK(l2_config_from_flags("", "h200", 1, false)->bytes == int64_t(50) << 20);
  CHECK(l2_config_from_flags("", "a100", 1, false)->bytes == int64_t(40) << 20);

  const std::pair<std::string, std::string> cases[] = {
      {"--l2 -1", "--l2 must not be negative"},
      {"--l2 junk", "--l2 must be a size in bytes"},
      {"--l2 12MB", "--l2 must be a size in bytes"},
      {"--l2 99999999999999999999999", "--l2 must be a size in bytes"},
      {"--gpu unknown", "unknown GPU 'unknown'"},
      {"--l2 1MiB --gpu v100", "unknown GPU 'v100'"},
      {"--gpu h200 --heads 0", "--heads must be between 1"},
      {"--heads 4", "--heads is for the L2 model"},
      {"--ncu", "--ncu is for the L2 model"},
      {"--gpu h200 --heads 4096 --M 64", "the L2 model would replay"},
  };
  for (const auto& [args, expect] : cases) {
    std::string output;
    const int rc = fstest::run_command(fstest::kBin + " run --n 64 --d 16 " + args, output);
    CAPTURE(args, output);
    CHECK(rc == 2);
    CHECK(output.rfind("flashstep: error: ", 0) == 0);
    CHECK(output.find(expect) != std::string::npos);
    CHECK(std::count(output.begin(), output.end(), '\n') == 1);
  }
  std::string output;
  REQUIRE(fstest::run_command(fstest::kBin + " run --n 256 --d 16 --schedule fa2 --gpu h200 --heads 8", output) == 0);
  CAPTURE(output);
  CHECK(output.find("DRAM read") != std::string::npos);
  CHECK(output.find("L2 hit rate") != std::string::npos);
  CHECK(output.find("8 heads  DRAM read") != std::string::npos);
}

TEST_CASE("each step's L2 state: hits so far are the HBM bytes read less the DRAM bytes, lines within the L2", "[l2]") {
  const Schedule sched = GENERATE(Schedule::fa1, Schedule::fa2, Schedule::standard);
  const int k = GENERATE(0, 1, 2, 3);
  const int64_t heads = GENERATE(1, 5);
  const ProblemSpec s = spec_case(k, sched, 130 + uint64_t(k));
  CAPTURE(schedule_name(sched), k, heads);
  for (int64_t bytes : {int64_t(0), int64_t(3000), int64_t(20000), int64_t(1) << 36}) {
    CAPTURE(bytes);
    const Trace tr = run_l2(s, l2_of(bytes, heads), true);
    const int64_t capacity = bytes / L2Config::kLineBytes;
    int64_t most = 0, most_dirty = 0;
    for (const Step& st : tr.steps) {
      // A load either hits the L2 or reads DRAM: head 0's hits are its reads less its misses.
      REQUIRE(st.l2_hit_total == st.hbm_read_total - st.dram_read_total);
      REQUIRE(st.l2_lines <= capacity);
      REQUIRE(st.l2_dirty_lines <= st.l2_lines);
      REQUIRE(st.l2_dirty_lines >= 0);
      most = std::max(most, st.l2_lines);
      most_dirty = std::max(most_dirty, st.l2_dirty_lines);
    }
    CHECK(tr.steps.back().l2_hit_total == tr.totals.l2.hit_bytes);
    if (bytes == 0) CHECK(most == 0);
    if (bytes == 3000) CHECK(most == capacity);  // a small L2 fills up
    if (bytes == (int64_t(1) << 36) && heads == 1) {
      // Nothing is evicted: at its fullest, the L2 holds every line of every tensor (each
      // tensor starts on a line), and the dirty ones are the outputs'.
      const Problem& p = tr.problem;
      auto lines = [&](int64_t rows, int64_t cols, int64_t e) { return (rows * cols * e + 127) / 128; };
      const int64_t e = p.bytes_per_elem;
      const int64_t in = lines(p.nq, p.d, e) + 2 * lines(p.nk, p.d, e);
      const int64_t out = sched == Schedule::fa1   ? lines(p.nq, p.d, e) + 2 * lines(p.nq, 1, 4)
                          : sched == Schedule::fa2 ? lines(p.nq, p.d, e) + lines(p.nq, 1, 4)
                                                   : lines(p.nq, p.d, e) + 2 * lines(p.nq, p.nk, e);
      CHECK(most == in + out);
      CHECK(most_dirty == out);
    }
  }
}

TEST_CASE("the Chrome trace carries the DRAM bytes beside the HBM bytes", "[l2][export]") {
  const Schedule sched = GENERATE(Schedule::fa1, Schedule::fa2, Schedule::standard);
  const bool with_l2 = GENERATE(false, true);
  const ProblemSpec s = spec_case(0, sched, 150);
  CAPTURE(schedule_name(sched), with_l2);
  const Trace tr = run_l2(s, with_l2 ? std::optional(l2_of(1 << 20, 3)) : std::nullopt, true);
  const nlohmann::json c = trace_to_chrome(tr);
  size_t step = 0;
  nlohmann::json last_read, last_written;
  int64_t l2_counters = 0;
  for (const nlohmann::json& e : c["traceEvents"]) {
    if (e["ph"] == "X") {
      const Step& st = tr.steps[step++];
      REQUIRE(e["args"]["hbm_read_bytes"] == st.hbm_read);
      REQUIRE(e["args"]["dram_read_bytes"] == st.dram_read);
      REQUIRE(e["args"]["dram_write_bytes"] == st.dram_write);
    } else if (e["name"] == "bytes read so far") {
      last_read = e["args"];
    } else if (e["name"] == "bytes written so far") {
      last_written = e["args"];
    } else if (e["name"] == "L2 lines") {
      REQUIRE(e["args"]["held"] == tr.steps[step - 1].l2_lines);
      ++l2_counters;
    }
  }
  CHECK(step == tr.steps.size());
  CHECK(l2_counters == (with_l2 ? int64_t(tr.steps.size()) : 0));
  CHECK(last_read["hbm"] == tr.totals.hbm_read_bytes);
  CHECK(last_read["dram"] == tr.totals.dram_read_bytes);
  CHECK(last_written["hbm"] == tr.totals.hbm_write_bytes);
  // The final write-back belongs to no step.
  CHECK(last_written["dram"] == tr.totals.dram_write_bytes - tr.totals.l2.final_writeback_bytes);
  if (with_l2) CHECK(tr.totals.dram_read_bytes < tr.totals.hbm_read_bytes);
}
