// decode: flash-decoding (Dao, Haziza, Massa, Sizov 2023), split-KV attention and its
// log-sum-exp combine. The Tc K/V blocks in S splits; each split runs FlashAttention-2's row
// block and writes a float32 partial O_i^(s), lse_i^(s); the combine merges them by
// e^(lse_i^(s) - lse_i). Forward only (inference). This folder holds the whole schedule:
//   forward.cpp   the loops (phase 1 over splits, phase 2 the combine) and one sentence per step
//   schedule.cpp  its registry entry: the line table (the pseudocode, written there only), the
//                 closed form below, the estimates, the names readers print
// and this header, the sizes every reader needs (split ranges, the default S, the closed form
// of the traffic, the step count).
#pragma once
#include "core/closed_form.h"
#include "core/problem.h"
#include "core/trace.h"

#include <cstdint>
#include <string>

namespace flashstep {

// Whether a schedule splits the K/V blocks (takes --splits; its thread blocks are S times more).
inline bool schedule_splits_kv(Schedule s) { return s == Schedule::decode; }

// SMs the default S assumes when no GPU is named: the H200's (and the H100 SXM's) 132.
inline constexpr int kDefaultSmCount = 132;

// Split s (0-based) of S over the Tc K/V blocks: blocks j0 <= j < j1. Contiguous ranges, the
// first Tc mod S of them one block longer, so every split has at least one block (1 <= S <= Tc).
struct SplitRange {
  int64_t j0 = 0, j1 = 0;
};
SplitRange split_range(int64_t Tc, int64_t S, int64_t s);

// The default S, FlashAttention's num_splits heuristic in idea: `blocks` thread blocks exist
// without splitting (heads x Tr); a GPU with sm_count SMs runs two per SM at once. If they fill
// at least 80% of those slots, S = 1. Otherwise, for each S in 1 .. min(Tc, 128, slots), the
// last wave's efficiency is w / ceil(w) with w = blocks S / slots waves; the answer is the
// smallest S within 85% of the best efficiency (more splits cost partial traffic and a bigger
// combine, so the smallest S that fills the GPU about as well wins).
int64_t default_splits(int64_t blocks, int64_t Tc, int sm_count);

// The traffic of decode in elements, no mask (with one, an upper bound). S >= 2:
//   reads  = S Nq d [FD L3: Q_i per split] + 2 Tr Nk d [FD L6: K_j, V_j per Q block]
//            + S Nq (d + 1) [FD L17, L18: the combine reads every partial]
//   writes = S Nq (d + 1) [FD L13, L14: O^(s), lse^(s)] + Nq (d + 1) [FD L19, L20: O, L]
// Partials and lse are float32 whatever the storage type. S = 1 is fa2 (no partials).
TrafficForm decode_traffic(int64_t nq, int64_t nk, int64_t d, int64_t Tr, int64_t S);

// A paged KV cache (--page-size P, core/paged_kv.h) adds the block-table reads, int32 entries
// (4 bytes, counted with the float32 statistics): every Q block reads, for each K/V block it
// loads, the entry of every page the block touches (FD L6 / FA2fwd L7), so over all splits
//   reads += Tr [Tc + floor(Nk / P) - floor((Tc - 1) / (P / gcd(Bc, P))) - [P divides Nk]]
// (core/paged_kv.h's block_table_entries). Everything else is the unpaged form: the same rows
// of K and V, from other addresses. t.P = 0: f unchanged.
TrafficForm with_block_table_reads(TrafficForm f, int64_t nk, const Tiling& t);

// Steps of an unmasked decode run: S = 1 fa2's Tr (6 + 4 Tc); S >= 2 Tr (7 S + 4 Tc + 3)
// (per split and Q block FD L3, L4, L11-L14 and four lines per K/V block; per Q block of the
// combine FD L17, one L18 per split, L19, L20). A mask replaces each skipped block's four
// steps by one.
int64_t decode_steps(const Tiling& t, int64_t S);

// Phase 1 runs fa2's row block (core/schedules/fa2/row_block.h) over each of S splits of the K/V
// blocks and writes float32 partials O^(s), lse^(s); phase 2 combines them per Q block. S = 1
// runs fa2 itself.
void run_decode(Trace& trace, bool record);
// One sentence for step k of a decode trace (fa2's sentences for an S = 1 run).
std::string explain_decode_step(const Trace& trace, size_t k);
// Whether a line is one of decode's own (FD L3 .. FD L20).
inline bool is_decode_line(Line l) { return int(l) > 600 && int(l) < 700; }

}  // namespace flashstep
