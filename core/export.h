// Trace exporters. JSON schema (trace_to_json; docs/trace-formats.md):
//   { "problem": {nq, nk, d, M, Br, Bc, Tr, Tc, scale, schedule, dtype, seed, pattern,
//                 bytes_per_elem, backward},
//     "steps": [ {index, line, label, i, j, text, hbm_read_bytes, hbm_write_bytes,
//                 hbm_read_total, hbm_write_total, dram_read_bytes, dram_write_bytes,
//                 dram_read_total, dram_write_total, flops, sram_bytes, sram: {slot: bytes},
//                 l2_hit_total, l2_lines, l2_dirty_lines (these three with --l2/--gpu),
//                 values: {m_tilde, l_tilde, m_old, l_old, m_new, l_new, alpha, beta}} ],
//     "totals": {hbm_read_bytes, hbm_write_bytes, flops, peak_sram_bytes, peak_tile_bytes,
//                steps, dram_read_bytes, dram_write_bytes,
//                l2: {bytes, gpu, heads, line_bytes, blocks_per_sm, slots, hit_bytes,
//                     final_writeback_bytes, all_heads_dram_read_bytes,
//                     all_heads_dram_write_bytes, ncu_dram_read_bytes, ncu_dram_write_bytes
//                     (these two with --ncu)}  (l2 only with --l2/--gpu)}
//                (the whole run: forward, then backward when problem.backward),
//     "phases": {"forward": {same fields, first_step}, "backward": {..., first_step}} }
//   dram_*: bytes between the L2 and DRAM of the head the trace shows (docs/l2-model.md);
//   equal to hbm_* without an L2 model. With one, totals.dram_write_bytes includes
//   l2.final_writeback_bytes, which no step carries. The L2 model covers the forward pass only
//   (--l2 with --backward is refused). CSV: the step columns, then dram_read_bytes,
//   dram_write_bytes.
//   line is the number within its algorithm and label names the algorithm ("Alg1 L9",
//   "FA2fwd L8", "Alg4 L16", "FA2b L9", "Alg3 L2"; core/trace.h); i or j is -1 where the step
//   has none. values appears only on steps that compute row statistics (backward steps may
//   hold D_i), each key only when recorded (m_old .. alpha together; beta is empty for fa2);
//   its numbers are per row of the block, with "-inf", "inf" and "nan" as strings (JSON has
//   no infinities). The Chrome trace's otherData carries the same phases; each step's args
//   carry dram_read_bytes and dram_write_bytes beside the HBM ones, and counter tracks give
//   the HBM and DRAM bytes read and written so far ("bytes read so far": {hbm, dram}) and,
//   with the L2 model, its occupancy ("L2 lines": {held, dirty}).
#pragma once
#include "core/output_files.h"  // write_file_atomic
#include "core/trace.h"

#include <nlohmann/json.hpp>
#include <string>

namespace flashstep {

nlohmann::json trace_to_json(const Trace& t);
std::string trace_to_csv(const Trace& t);
nlohmann::json trace_to_chrome(const Trace& t);

}  // namespace flashstep
