// Problem and Tiling: what to compute and how it is cut into blocks (paper notation).
#pragma once
#include "core/fp8.h"
#include "core/mask.h"
#include "core/types.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace flashstep {

enum class Schedule { fa1, standard, fa2, decode };
const char* schedule_name(Schedule s);
Schedule parse_schedule(const std::string& name);  // throws InputError

// Algorithm 2's additions and the storage type, as one value: the CLI flags, the app's editor
// and presets fill it, ProblemSpec carries it, gpu::Features extends it, and validate_options
// is the one place its values are checked.
struct AttentionOptions {
  Mask mask;                  // Mask::offset is set from Nq, Nk when the problem is made
  double dropout = 0;         // probability p in [0, 1)
  Dtype dtype = Dtype::fp32;  // storage type of Q, K, V, O in HBM
  // Type P~_ij is rounded to before the P~_ij V_j product (FA2fwd L10, Alg1 L12), as a
  // tensor-core kernel does in registers; fp32 = not rounded. Needs 16-bit storage (fp8 storage
  // rounds P~ to e4m3 itself: make_problem sets it).
  Dtype p_dtype = Dtype::fp32;
  // --dtype fp8 only (core/fp8.h, docs/fp8.md): how Q, K, V are scaled (none: per-tensor, the
  // default), and --rotate, the Hadamard rotation of Q and K before quantisation.
  Fp8Scale fp8_scale = Fp8Scale::none;
  bool rotate = false;
};
// One InputError for the first value out of range (window sizes, key length against Nk, dropout,
// --p-dtype without 16-bit storage, --fp8-scale / --rotate without --dtype fp8).
void validate_options(const AttentionOptions& o, int64_t nk);

// What the user asked for, before validation. Sizes are signed so that a negative value
// reaches validation and gets a clear message instead of wrapping around.
struct ProblemSpec {
  int64_t nq = 64, nk = 64, d = 16;
  int64_t M = 1024;                  // SRAM size in elements (float32 words)
  std::optional<double> scale;       // default 1/sqrt(d)
  int64_t br = 0, bc = 0;            // 0 = the paper's block size
  Schedule schedule = Schedule::fa1;
  int64_t splits = 0;                // decode's S (--splits); 0 = the default (core/schedules/decode/)
  std::optional<int64_t> page_size;  // decode's paged KV cache (--page-size P, core/paged_kv.h)
  uint64_t seed = 1;
  std::string pattern = "random";    // see input_patterns()
  std::string q_path, k_path, v_path;  // .npy files; all three or none
  AttentionOptions options;           // mask, dropout, dtype
};

// A spec of sizes alone (generated inputs, the default schedule, no mask): what explain and the
// CPU benchmark simulate. Br, Bc 0: the paper's block sizes.
inline ProblemSpec sizes_spec(int64_t nq, int64_t nk, int64_t d, int64_t M, int64_t br = 0, int64_t bc = 0) {
  ProblemSpec s;
  s.nq = nq;
  s.nk = nk;
  s.d = d;
  s.M = M;
  s.br = br;
  s.bc = bc;
  return s;
}

struct Tiling {
  int64_t Br = 0, Bc = 0, Tr = 0, Tc = 0;
  int64_t S = 1;  // decode's splits of the Tc K/V blocks (core/schedules/decode/); 1 for the others
  int64_t P = 0;  // decode's page size (core/paged_kv.h); 0 = K and V contiguous
  int64_t M = 0;            // SRAM size in elements, as given
  int64_t tile_capacity = 0;  // elements available to the four d-wide tiles (see memory.h)
  bool overridden = false;
  int64_t rows_in_q_block(int64_t i, int64_t nq) const { return std::min(Br, nq - i * Br); }
  int64_t rows_in_kv_block(int64_t j, int64_t nk) const { return std::min(Bc, nk - j * Bc); }
};

struct Problem {
  int64_t nq = 0, nk = 0, d = 0, M = 0;
  float scale = 1.0f;  // tau
  Schedule schedule = Schedule::fa1;
  uint64_t seed = 1;
  std::string pattern;  // "npy" when loaded from files
  Dtype dtype = Dtype::fp32;
  Dtype p_dtype = Dtype::fp32;  // AttentionOptions::p_dtype
  int bytes_per_elem = 4;  // of the storage type (Q, K, V, O, S, P); statistics are float32
  Mask mask;
  float dropout = 0;  // Algorithm 2's p; the mask comes from Philox keyed by `seed`
  int64_t br = 0, bc = 0;  // block sizes asked for (0 = the paper's); make_tiling(p) uses them
  int64_t splits = 1;      // decode's S, 1 <= S <= Tc (1 for the other schedules)
  int64_t page_size = 0;   // decode's KV pages of P tokens read through a block table; 0 = not paged
  Mat Q, K, V;
  // --dtype fp8 (docs/fp8.md): per_tensor or per_block (none for the other types), and whether Q
  // and K are rotated before quantisation. Q, K, V above stay the inputs as given.
  Fp8Scale fp8_scale = Fp8Scale::none;
  bool rotate = false;
  // FA2's backward only, with p_dtype 16-bit and no dropout: FA2b L14 takes P as rounded for L12,
  // dS = P~ o (dP - D), as the tensor-core backward configuration 46 computes it (it keeps no
  // float32 P beside dP). Not a user option: verify sets it from the GPU variant it emulates.
  bool ds_from_rounded_p = false;
  AttentionOptions options() const { return {mask, dropout, dtype, p_dtype, fp8_scale, rotate}; }
};

// The paper's block sizes: Bc = ceil(M/(4d)), Br = min(ceil(M/(4d)), d); overrides checked.
Tiling make_tiling(int64_t nq, int64_t nk, int64_t d, int64_t M, int64_t br = 0, int64_t bc = 0);
// The tiling of a problem: its sizes, M and the block sizes its spec asked for.
inline Tiling make_tiling(const Problem& p) {
  Tiling t = make_tiling(p.nq, p.nk, p.d, p.M, p.br, p.bc);
  t.S = p.splits;
  t.P = p.page_size;
  return t;
}

// The tiling a spec will run with, before its inputs exist: the sizes, M and block sizes, and
// decode's S (--splits, else core/schedules/decode/decode.h's default for one head) and page size.
Tiling spec_tiling(const ProblemSpec& s);

// Parses "16384" (elements), "64KiB" / "64k" (KiB of float32) into elements.
int64_t parse_sram_size(const std::string& text);

const std::vector<std::string>& input_patterns();
// Deterministic (nrows x d) input for a named pattern; `which` is 0,1,2 for Q,K,V.
Mat make_input(const std::string& pattern, int64_t rows, int64_t d, uint64_t seed, int which);

// Validates the spec, loads or generates Q, K, V and checks them (shapes, NaN/Inf).
Problem make_problem(const ProblemSpec& spec);
// Checks sizes only (no inputs); make_problem calls it first.
void validate_sizes(const ProblemSpec& spec);
// A problem read from a file (a trace, a snapshot folder's manifest), checked by run's own
// validate_sizes one field at a time: each SpecField adds its value to the spec, after those it
// depends on, so that the first refusal is that of the field that caused it.
struct SpecField {
  const char* name;  // as the file's reader names it: "problem.M", "replay.tiling.br, bc"
  std::function<void(ProblemSpec&)> add;
};
struct RefusedField {
  std::string name;    // the SpecField's name
  std::string reason;  // validate_sizes's message
};
// Adds the fields to `spec` (a spec run accepts) in order, validating after each: the first
// field run refuses with run's reason, or nothing when run accepts them all.
std::optional<RefusedField> first_refused_field(ProblemSpec spec, const std::vector<SpecField>& fields);
// Fails with the tensor name and position if any element is NaN or Inf.
void check_finite(const Mat& m, const char* name);

}  // namespace flashstep
