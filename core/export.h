// Trace exporters. JSON schema (documented in README, "Trace formats"):
//   { "problem": {nq, nk, d, M, Br, Bc, Tr, Tc, scale, schedule, dtype, seed, pattern,
//                 bytes_per_elem, backward},
//     "steps": [ {index, line, label, i, j, text, hbm_read_bytes, hbm_write_bytes,
//                 hbm_read_total, hbm_write_total, flops, sram_bytes, sram: {slot: bytes},
//                 values: {m_tilde, l_tilde, m_old, l_old, m_new, l_new, alpha, beta}} ],
//     "totals": {hbm_read_bytes, hbm_write_bytes, flops, peak_sram_bytes, peak_tile_bytes,
//                steps}  (the whole run: forward, then backward when problem.backward),
//     "phases": {"forward": {same fields, first_step}, "backward": {..., first_step}} }
//   Backward steps' values may hold D_i; their labels are "Alg4 Ln", "FA2b Ln", "Alg3 Ln".
//   The Chrome trace's otherData carries the same phases.
#pragma once
#include "core/trace.h"

#include <nlohmann/json.hpp>
#include <string>

namespace flashstep {

nlohmann::json trace_to_json(const Trace& t);
std::string trace_to_csv(const Trace& t);
nlohmann::json trace_to_chrome(const Trace& t);

// Writes text to path atomically (temp file + rename), so a failure never leaves a partial
// file behind. Throws InputError naming the path on failure.
void write_file_atomic(const std::string& path, const std::string& text);

}  // namespace flashstep
