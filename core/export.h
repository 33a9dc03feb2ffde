// Trace exporters. JSON schema (documented in README, "Trace formats"):
//   { "problem": {nq, nk, d, M, Br, Bc, Tr, Tc, scale, schedule, dtype, seed, pattern},
//     "steps": [ {index, line, label, i, j, text, hbm_read_bytes, hbm_write_bytes,
//                 hbm_read_total, hbm_write_total, flops, sram_bytes, sram: {slot: bytes},
//                 values: {m_tilde, l_tilde, m_old, l_old, m_new, l_new, alpha, beta}} ],
//     "totals": {hbm_read_bytes, hbm_write_bytes, flops, peak_sram_bytes, steps} }
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
