// An optional L2 cache between HBM (DRAM) and SRAM, and the GPU concurrency that decides the
// order in which it sees the schedule's loads and stores. docs/l2-model.md explains the model.
//
// The paper's counts (hbm_read_bytes, hbm_write_bytes) are untouched: they are what crosses
// between SRAM and the memory hierarchy. The L2 model adds dram_read_bytes and
// dram_write_bytes: what crosses between the L2 and DRAM.
//
//   * While a schedule runs, every Sram::load and Hbm::store is appended to an AccessLog, with
//     the step that issued it (schedules are unchanged; the hook is in the memory model).
//   * At the end, apply_l2_model replays those accesses, for every head of the GPU's grid (each
//     with its own copy of the tensors), in the order a GPU with the given concurrency would
//     issue them (order_key in l2_cache.cpp), through one fully associative LRU cache of
//     128-byte lines, write-back and write-allocate. A load reads from DRAM the bytes it
//     misses; a store dirties its bytes in L2 and never reads DRAM; evicting a line writes back
//     its dirty bytes; at the end every line still dirty is written back once.
//   * DRAM bytes are counted per byte, not per 32-byte sector, so that --l2 0 gives exactly the
//     HBM bytes and an unbounded L2 exactly the compulsory bytes even for ragged shapes.
#pragma once
#include "core/memory.h"
#include "core/problem.h"

#include <optional>
#include <string>
#include <vector>

namespace flashstep {

enum class Line : uint16_t;  // trace.h
struct Trace;

// The figures of a GPU that set the concurrency (see docs/l2-model.md for the sources).
struct GpuSpec {
  const char* name;
  int64_t sms;                  // streaming multiprocessors
  int64_t l2_bytes;             // what cudaGetDeviceProperties reports as l2CacheSize
  int64_t smem_per_sm_bytes;    // shared memory per SM available to blocks
  int64_t smem_per_block_reserved;  // the driver keeps this much per resident block
  int64_t max_blocks_per_sm;
};
// Throws InputError naming the known GPUs.
const GpuSpec& find_gpu(const std::string& name);

// "1048576", "128KiB", "50MiB", "1GiB" -> bytes. Throws InputError for anything else, for a
// negative size and for more than 1 TiB.
int64_t parse_byte_size(const std::string& text, const std::string& flag);

struct L2Config {
  int64_t bytes = 0;   // the whole L2, shared by every head
  std::string gpu = "h200";
  int64_t heads = 1;   // heads (B x H) the GPU runs in the same kernels, sharing the L2
  bool ncu = false;    // also replay as Nsight Compute measures (L2Totals::ncu_*)
  static constexpr int kLineBytes = 128;  // an NVIDIA L2 line (4 sectors of 32 B)
  static constexpr int64_t kMaxHeads = 4096;  // head numbers fit the top 12 bits of an address
};

// The command line's --l2 SIZE, --gpu NAME, --heads H, --ncu (empty strings: not given). No L2 model
// unless --l2 or --gpu is given; --gpu alone takes that GPU's L2 size. Throws InputError.
std::optional<L2Config> l2_config_from_flags(const std::string& l2, const std::string& gpu,
                                             int64_t heads, bool heads_given, bool ncu = false);

// What the GPU's concurrency comes to for one problem (fa1, fa2; standard streams).
struct L2Plan {
  int64_t blocks_per_sm = 0;  // from the tiles' shared memory
  int64_t slots = 0;          // thread blocks in flight together, of all heads: SMs x blocks
};
L2Plan plan_l2(const L2Config& cfg, int64_t tile_bytes);

// Totals::dram_* and each step's are those of head 0, the head the trace shows; the L2 model
// runs every head (config.heads) through one L2, so these are the whole problem's figures.
struct L2Totals {
  bool enabled = false;
  L2Config config;
  L2Plan plan;
  int64_t hit_bytes = 0;              // head 0's load bytes served by the L2
  int64_t final_writeback_bytes = 0;  // head 0's dirty bytes written back at the end
  int64_t all_heads_read_bytes = 0, all_heads_write_bytes = 0;  // DRAM, every head
  // With config.ncu, every head's DRAM bytes as Nsight Compute counts them: its default cache
  // control flushes and invalidates the L2 before each kernel, and the write-backs between
  // kernels (dirty lines a kernel leaves behind) belong to no kernel.
  int64_t ncu_read_bytes = 0, ncu_write_bytes = 0;
};

// One load (HBM -> SRAM) or store (SRAM -> HBM): a contiguous byte range of a tensor.
struct MemAccess {
  int64_t step;  // index of the step that issued it (counted on the fast path too)
  Tensor tensor;
  bool store;
  int64_t offset, bytes;
};

// The accesses of one run and the (line, i, j) of each step, so the replay can reorder them.
struct AccessLog {
  struct StepTag {
    Line line;
    int32_t i, j;
  };
  std::vector<StepTag> steps;
  std::vector<MemAccess> accesses;
  void begin_step(Line line, int64_t i, int64_t j) { steps.push_back({line, int32_t(i), int32_t(j)}); }
  void add(Tensor t, bool store, int64_t offset, int64_t bytes) {
    accesses.push_back({int64_t(steps.size()) - 1, t, store, offset, bytes});
  }
};

// DRAM bytes of head 0 per step (indexed like AccessLog::steps) and in all, and of every head.
struct L2Replay {
  std::vector<int64_t> step_read, step_write;
  // Head 0's load bytes the L2 served at each step, and the L2's occupancy (lines held, of
  // them dirty; every head's) right after the step's last access; -1 for a step that moves
  // nothing.
  std::vector<int64_t> step_hit, step_lines, step_dirty_lines;
  int64_t read = 0, write = 0, hit = 0, final_writeback = 0;
  int64_t all_read = 0, all_write = 0;
  int64_t outside_kernels_write = 0;  // every head: flushes between kernels and at the end
};

// Replays the log of one head, for `heads` heads with their own copies of every tensor,
// through one LRU of `capacity_bytes` (rounded down to whole lines), in the order a GPU with
// `slots` blocks in flight would issue it. A load's missed bytes count to the head that
// loads; a write-back counts to the head whose line it is, at the step (of whichever head)
// that evicted it. With flush_per_kernel, the L2 is written back and emptied between kernels
// (fa1: Alg1 L2 and each j; standard: each pass), as Nsight Compute does before each kernel.
// Deterministic: the same log gives the same numbers.
L2Replay replay_l2(const AccessLog& log, int64_t capacity_bytes, Schedule s, int64_t Tr,
                   int64_t Tc, int64_t heads, int64_t slots, bool flush_per_kernel = false);

// Plans the concurrency for the trace's problem (tr.totals.l2.config), replays the log and
// fills the steps' and the totals' DRAM bytes and tr.totals.l2. Schedules call it through
// ScheduleContext::finish.
void apply_l2_model(Trace& tr, const AccessLog& log);

}  // namespace flashstep
