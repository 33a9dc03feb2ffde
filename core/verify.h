// The checks of `verify` and its GPU siblings (app/cmd_verify.cpp, cmd_decode_gpu.cpp,
// cmd_tensor_cores.cpp, cmd_backward_gpu.cpp, cmd_backward_tc.cpp): another engine's outputs
// (a GPU kernel's, as float arrays) against the CPU engine's and against the float64
// reference, each with its tolerance (core/tolerance.h) and verdict. Plain host code: gpu/
// fills the arrays, app/ prints the results, and the tests call it without a GPU. The CPU
// engine's figures against float64 are core/accuracy.h's, the ones run's summary prints.
#pragma once
#include "core/accuracy.h"
#include "core/fp8_bound.h"
#include "core/tolerance.h"

#include <string>
#include <vector>

namespace flashstep {

struct Trace;

// One verdict line: O and lse (normwise max_rel, core/reference.h's compare) within tolerances.
struct ForwardCheck {
  std::string name;  // what against what: "GPU vs float64:"
  ForwardAccuracy err;
  double o_tol = 0, lse_tol = 0;
  bool judged = true;  // false: reported only (a 16-bit type against float64)
  bool pass() const { return !judged || (err.O.max_rel <= o_tol && err.lse.max_rel <= lse_tol); }
};

// An engine's final output of an Nq x d problem: O (row-major) and lse, `nq * d` and `nq` floats.
struct EngineOutput {
  std::string name;             // "GPU", "GPU standard (float32)"
  const float* O = nullptr;
  const float* lse = nullptr;
  bool always_judged = false;   // judged against float64 even for a 16-bit problem (a float32 run)
};

// The engine's final O and lse against the CPU engine's trace: O within o_tol, lse within lse_tol.
ForwardCheck final_check(const std::string& name, const Trace& cpu, const EngineOutput& e, double o_tol,
                         double lse_tol);
// Elements of the engine's O equal to the CPU engine's, bit for bit.
int64_t identical_elements(const Trace& cpu, const float* O);

// Each engine against the problem's float64 reference, and the CPU engine (`cpu`, placed at
// `cpu_at` among the engines) with the figures of measure_accuracy. Judged at kFloat64Tol for
// a float32 problem, reported for the 16-bit types. Names: "<engine name> vs float64:".
struct Float64Checks {
  bool measured = false;  // false: the reference costs over kMaxReferenceWork; nothing compared
  std::vector<ForwardCheck> checks;
  bool pass() const;
};
Float64Checks float64_checks(const Trace& cpu, const std::string& cpu_name, size_t cpu_at,
                             const std::vector<EngineOutput>& engines);

// Flash-decoding's partials: split s's O^(s) and lse^(s) (float32 on both sides) against the CPU
// engine's, read from the recorded trace's HBM. O_part: S x Nq x d, lse_part: S x Nq.
struct SplitCheck {
  int64_t split = 0;           // 0-based
  int64_t first_key = 0, last_key = 0;
  ErrorStats O, lse;
  bool pass = true;
};
std::vector<SplitCheck> decode_split_checks(const Trace& cpu, const float* O_part, const float* lse_part,
                                            double tol);

// The tensor-core rule against float64 (FlashAttention's issue #366): the flash kernel's and the
// CPU emulation's O error at most twice standard attention's in the same precision on the
// same inputs, plus 1e-6 max|V|; lse reported.
struct TensorCoreFloat64Check {
  bool measured = false;
  ErrorStats flash_O, cpu_O, standard_O, flash_lse, standard_lse;
  double allowed = 0;  // 2 standard_O.max_abs + 1e-6 max|V|
  bool pass() const { return !measured || (flash_O.max_abs <= allowed && cpu_O.max_abs <= allowed); }
};
TensorCoreFloat64Check tensor_core_float64_check(const Trace& cpu, const float* flash_O, const float* flash_lse,
                                                 const float* standard_O, const float* standard_lse);

// Gradients (core/tolerance.h): max|x - ref| / s per gradient, s = max|ref|, for dQ and dK at
// least grad_scale_floor.
struct GradScale {
  double dq = 1, dk = 1, dv = 1;
};
GradScale grad_scale(const Problem& p, const Mat& dO, const MatD& dQ, const MatD& dK, const MatD& dV);
struct GradErr {
  double dq = 0, dk = 0, dv = 0;
  double worst() const;
};
GradErr grad_err(const Mat& dq, const Mat& dk, const Mat& dv, const MatD& rq, const MatD& rk, const MatD& rv,
                 const GradScale& sc);

// The GPU's gradients and the CPU engine's (its trace, with the backward and its dO) against
// reference_backward, both scaled by the reference's GradScale; tolerance kGradFloat64Tol.
struct GradFloat64Checks {
  bool measured = false;
  GradErr gpu, cpu;
  bool pass() const {
    return !measured || (gpu.worst() <= kGradFloat64Tol && cpu.worst() <= kGradFloat64Tol);
  }
};
GradFloat64Checks grad_float64_checks(const Trace& cpu, const Mat& dQ, const Mat& dK, const Mat& dV);

// Normwise max|x - ref| / max|ref| of the GPU's and the CPU engine's gradients against
// reference_backward (reported beside the tensor-core backward's elementwise bound).
struct GradNormwise {
  bool measured = false;
  GradErr gpu, cpu;
};
GradNormwise grad_normwise(const Trace& cpu, const Mat& dQ, const Mat& dK, const Mat& dV);

// verify --tensor-cores --dtype fp8 (app/cmd_fp8_tc.cpp; docs/fp8-gpu.md, "On the GPU: the
// forward"): the FP8 forward's O and lse against the CPU engine's emulation (`cpu`, run on the
// kernel's blocks), and both O against float64: the GPU's error within twice the emulation's plus
// the accumulation's share (`acc_share`), each within the format's bound row by row
// (fp8_bound_ratio; `acc`: the GPU's accumulation steps); lse within 4 dS + 1e-5 max(1, max|lse|) (core/verify.cpp says why 4).
struct Fp8ForwardCheck {
  ErrorStats O, lse;         // the GPU against the CPU emulation
  double lse_tol = 0;
  int64_t identical = 0;     // elements of O equal bit for bit
  bool nan = false;          // the GPU's O or lse holds a NaN
  bool measured = false;     // float64 compared (false: its cost is over kMaxReferenceWork)
  ErrorStats gpu_O, cpu_O;   // each O against float64
  double allowed = 0;        // 2 cpu_O.max_abs + acc_share
  double gpu_ratio = 0, cpu_ratio = 0;  // worst row error / the format's bound
  bool lse_ok() const { return lse.max_abs <= lse_tol; }
  bool sharp_ok() const { return !measured || gpu_O.max_abs <= allowed; }
  bool bound_ok() const { return !measured || (gpu_ratio <= 1 && cpu_ratio <= 1); }
  bool pass() const { return !nan && lse_ok() && sharp_ok() && bound_ok(); }
};
Fp8ForwardCheck fp8_forward_check(const Trace& cpu, const float* O, const float* lse, const Fp8Accumulation& acc,
                                  double dS, double acc_share);

// The word a verify line prints after a figure held to its bound.
inline const char* verdict(bool ok) { return ok ? "ok" : "OVER"; }

}  // namespace flashstep
