// --p-dtype and --tensor-cores as a user types them, run through the real binary.
// Requests the tensor-core kernels cannot take are refused before any GPU is looked for, in
// every build: a build without CUDA runs the same checks (app/gpu_requests.cpp) before its stub
// says it has no GPU backend, so each refusal must be its own message there too.
#include "cli_gpu_helpers.h"
#include "test_helpers.h"

#include <catch2/catch.hpp>
#include <cctype>
#include <fstream>
#include <iterator>

namespace {

using fstest::one_error_line;
using fstest::Outcome;
using fstest::run_flashstep;

struct Bad {
  std::string args, expect;  // the command line, and a piece of its one error line
};
// Each is refused with one error line and exit 2, naming the problem, on every build.
template <size_t N>
void check_refusals(const Bad (&bad)[N]) {
  for (const Bad& b : bad) {
    CAPTURE(b.args);
    const Outcome a = run_flashstep(b.args);
    CAPTURE(a.out);
    CHECK(a.rc == 2);
    CHECK(one_error_line(a.out));
    CHECK(a.out.find(b.expect) != std::string::npos);  // the same check runs in a build without CUDA
  }
}

}  // namespace

TEST_CASE("run --p-dtype shows the rounding and refuses what emulates no kernel", "[cli][p_dtype]") {
  Outcome a = run_flashstep("run --schedule fa2 --dtype bf16 --p-dtype bf16 --nq 40 --nk 57 --d 16 --causal");
  CHECK(a.rc == 0);
  CHECK(a.out.find("stored as bf16; P~ rounded to bf16 before P V") != std::string::npos);
  a = run_flashstep("run --schedule fa1 --dtype fp16 --p-dtype fp16 --n 33 --d 8");
  CHECK(a.rc == 0);
  CHECK(a.out.find("P~ rounded to fp16") != std::string::npos);
  const fstest::TempDir tmp;
  const std::string json = (tmp.path / "t.json").string();
  a = run_flashstep("run --schedule fa2 --dtype bf16 --p-dtype bf16 --n 20 --d 8 --trace " + json);
  REQUIRE(a.rc == 0);
  std::ifstream in(json);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.find("\"p_dtype\": \"bf16\"") != std::string::npos);

  struct Bad {
    const char* args;
    const char* expect;
  };
  const Bad bad[] = {
      {"run --schedule fa2 --p-dtype bf16 --n 20 --d 8", "16-bit inputs"},
      {"run --schedule standard --dtype bf16 --p-dtype bf16 --n 20 --d 8", "standard attention already"},
      {"run --schedule fa2 --dtype bf16 --p-dtype fp8 --n 20 --d 8", "--p-dtype takes fp16 or bf16"},
  };
  for (const Bad& b : bad) {
    CAPTURE(b.args);
    a = run_flashstep(b.args);
    CAPTURE(a.out);
    CHECK(a.rc == 2);
    CHECK(one_error_line(a.out));
    CHECK(a.out.find(b.expect) != std::string::npos);
  }
}

TEST_CASE("verify and bench-gpu --tensor-cores refuse bad requests before looking for a GPU", "[cli][tensor_cores]") {
  const std::string ok = " --schedule fa2 --dtype bf16 --p-dtype bf16 --tensor-cores";
  const Bad bad[] = {
      {"verify --schedule fa2 --dtype fp32 --tensor-cores --n 64 --d 64", "takes bf16, fp16 or fp8 inputs"},
      {"verify --schedule fa2 --tensor-cores --n 64 --d 64", "takes bf16, fp16 or fp8 inputs"},
      {"verify" + ok + " --n 64 --d 32", "d = 64 and d = 128 (got d = 32)"},
      {"verify" + ok + " --n 64 --d 96", "d = 64 and d = 128 (got d = 96)"},
      {"verify --schedule fa1 --dtype bf16 --p-dtype bf16 --tensor-cores --n 64 --d 64", "use --schedule fa2 (got fa1)"},
      {"verify --schedule standard --dtype bf16 --tensor-cores --n 64 --d 64", "use --schedule fa2 (got standard)"},
      {"verify --schedule fa2 --dtype bf16 --tensor-cores --n 64 --d 64", "add --p-dtype bf16"},
      {"verify --schedule fa2 --dtype fp16 --p-dtype bf16 --tensor-cores --n 64 --d 64", "add --p-dtype fp16"},
      {"verify" + ok + " --n 64 --d 64 --dropout 0.1", "no dropout"},
      {"verify" + ok + " --n 64 --d 64 --window 8,0", "no sliding window"},
      {"verify" + ok + " --n 64 --d 64 --kv-len 65", "key length 65 is out of range"},
      {"verify --schedule fa2 --dtype bf16 --p-dtype bf16 --n 64 --d 64", "needs --tensor-cores"},
      {"gpu --schedule fa2 --dtype bf16 --p-dtype bf16 --n 64 --d 64", "needs --tensor-cores"},
      {"bench-gpu --tensor-cores --dtype fp32", "takes bf16, fp16 or fp8 inputs"},
      {"bench-gpu --decode --tensor-cores --dtype fp8", "on the GPU FP8 runs in flash-decoding"},
      {"gpu --schedule decode --dtype fp8 --nk 64 --d 64", "on the GPU FP8 runs in flash-decoding"},
      {"verify --schedule fa2 --dtype fp8 --n 64 --d 64", "on the GPU FP8 runs in flash-decoding"},
      {"verify --schedule decode --dtype fp8 --nq 1 --nk 64 --d 32", "FP8 KV-cache decode takes d = 64 or 128"},
      {"verify --schedule decode --dtype fp8 --nq 1 --nk 64 --d 64 --variant 3", "variants 9 and 10, paged or not (0 picks the default; 11 and 12 in a ladder build), not 3"},
      {"verify --schedule decode --dtype fp8 --nq 1 --nk 64 --d 64 --page-size 16 --variant 5", "variants 9 and 10, paged or not"},
      {"verify --schedule decode --dtype fp8 --nq 1 --nk 64 --d 128 --variant 13", "variants 9 and 10, paged or not (0 picks the default; 11 and 12 in a ladder build), not 13"},
      {"bench-gpu --decode --dtype fp8 --d 32", "FP8 KV-cache decode takes d = 64 or 128"},
      {"bench-gpu --decode --dtype fp8 --sweep-variants 9 5", "variants 9 and 10, paged or not (0 picks the default; 11 and 12 in a ladder build), not 5"},
      {"bench-gpu --decode --dtype fp8 --sweep-variants 10 4", "variants 9 and 10, paged or not (0 picks the default; 11 and 12 in a ladder build), not 4"},
      {"bench-gpu --tensor-cores --reps 3", "--reps must be at least 20"},
      {"bench-gpu --tensor-cores --back-to-back 0", "--back-to-back must be between 1 and 1000"},
      {"bench-gpu --decode --back-to-back 1001", "--back-to-back must be between 1 and 1000"},
      {"bench-gpu --tensor-cores --sweep-d 96", "--sweep-d with --tensor-cores must be 64 or 128 (got 96)"},
      {"bench-gpu --tensor-cores --dtype fp16 --sweep-d 32", "must be 64 or 128 (got 32)"},
      {"bench-gpu --tensor-cores --sweep-n 0", "--sweep-n must be at least 1"},
      {"bench-gpu --tensor-cores --no-fa1", "--no-fa1 does not apply (--no-standard leaves standard attention out)"},
      {"bench-gpu --tensor-cores --no-fa2 --no-standard", "--no-fa2 does not apply"},
      {"bench-gpu --tensor-cores --dtype fp8 --no-standard", "--dtype fp8 times no standard attention: --no-standard does not apply"},
  };
  check_refusals(bad);
}

// The FP8 forward on tensor cores (app/cmd_fp8_tc.cpp): verify and bench-gpu take --tensor-cores
// --dtype fp8 (each refusal below comes from a later check, so the FP8 gate let it through);
// gpu, the backward and decode on tensor cores still refuse it with the line naming what exists.
TEST_CASE("FP8 on tensor cores (--tensor-cores --dtype fp8): verify and bench-gpu take it, the rest refuse it", "[cli][tensor_cores][fp8]") {
  const std::string fp8 = " --schedule fa2 --dtype fp8 --tensor-cores";
  const Bad bad[] = {
      {"verify" + fp8 + " --n 64 --d 96", "d = 64 and d = 128 (got d = 96)"},
      {"verify" + fp8 + " --n 64 --d 64 --window 8,0", "no sliding window"},
      {"verify" + fp8 + " --n 64 --d 64 --dropout 0.1", "no dropout"},
      {"verify" + fp8 + " --n 64 --d 64 --kv-len 65", "key length 65 is out of range"},
      {"verify --schedule fa1 --dtype fp8 --tensor-cores --n 64 --d 64", "use --schedule fa2 (got fa1)"},
      {"verify" + fp8 + " --n 64 --d 64 --p-dtype bf16", "--p-dtype"},
      {"bench-gpu --tensor-cores --dtype fp8 --d 96", "takes --d 64 and/or 128 (got 96)"},
      {"bench-gpu --tensor-cores --dtype fp8 --reps 3", "--reps must be at least 20"},
      {"verify --backward --tensor-cores --dtype fp8 --n 64 --d 64", "on the GPU FP8 runs in flash-decoding (verify --schedule decode --dtype fp8, bench-gpu --decode --dtype fp8) and in the forward on tensor cores"},
      {"gpu --tensor-cores --dtype fp8 --n 64 --d 64", "the forward on tensor cores (verify --schedule fa2 --tensor-cores --dtype fp8, bench-gpu --tensor-cores --dtype fp8)"},
      {"bench-gpu --backward --tensor-cores --dtype fp8", "on the GPU FP8 runs in flash-decoding"},
      {"verify --schedule decode --tensor-cores --dtype fp8 --nq 1 --nk 64 --d 64", "on the GPU FP8 runs in flash-decoding"},
  };
  check_refusals(bad);
}

TEST_CASE("the tensor-core backward's commands refuse bad requests before looking for a GPU", "[cli][tensor_cores]") {
  const Bad bad[] = {
      {"verify --backward --tensor-cores --n 64 --d 96", "d = 64 and d = 128 (got d = 96)"},
      {"verify --backward --tensor-cores --dtype fp16 --p-dtype bf16 --n 64 --d 64", "add --p-dtype fp16"},
      {"verify --backward --tensor-cores --schedule standard --n 64 --d 64", "drop --schedule standard"},
      {"verify --backward --tensor-cores --n 64 --d 64 --dropout 0.1", "no dropout"},
      {"verify --backward --tensor-cores --n 64 --d 64 --window 8,0", "no sliding window"},
      {"verify --backward --tensor-cores --n 64 --d 64 --kv-len 65", "key length 65 is out of range"},
      {"gpu --backward --tensor-cores --n 64 --d 64", "add --dtype bf16 or --dtype fp16"},
      {"gpu --tensor-cores --dtype bf16 --n 64 --d 64", "add --backward"},
      {"gpu --backward --tensor-cores --dtype bf16 --n 64 --d 96", "d = 64 and d = 128 (got d = 96)"},
      {"gpu --backward --tensor-cores --dtype bf16 --n 64 --d 64 --dropout 0.2", "no dropout"},
      {"bench-gpu --backward --tensor-cores --dtype fp32", "takes bf16 or fp16 inputs"},
      {"bench-gpu --backward --tensor-cores --d 96", "takes --d 64 and/or 128 (got 96)"},
      {"bench-gpu --backward --tensor-cores --reps 5", "--reps must be at least 20"},
      {"bench-gpu --tensor-cores --d 80", "takes --d 64 and/or 128 (got 80)"},
      {"bench-gpu --tensor-cores --n 0", "--n values must be at least 1"},
  };
  check_refusals(bad);
}

TEST_CASE("bench-gpu --decode refuses split-kernel variants that do not exist, before looking for a GPU", "[cli][decode]") {
  const Bad bad[] = {
      {"bench-gpu --decode --sweep-variants 3 13", "--sweep-variants: 13 is not a decode kernel variant (3-12)"},
      {"bench-gpu --decode --sweep-variants 2", "--sweep-variants: 2 is not a decode kernel variant (3-12)"},
      {"bench-gpu --decode --sweep-variants 6 --sweep-splits 0", "--sweep-splits: 0 is out of range 1..8192"},
      {"bench-gpu --decode --sweep-splits 4", "--sweep-splits goes with --sweep-variants"},
      {"bench-gpu --decode --read-streams --sweep-variants 6", "--read-streams and --sweep-variants are two different runs"},
      {"bench-gpu --read-streams", "--read-streams belong to --decode"},
  };
  check_refusals(bad);
}

TEST_CASE("verify --tensor-cores on a good request: PASS on a GPU, one error line without one", "[cli][tensor_cores]") {
  const Outcome a = run_flashstep("verify --schedule fa2 --dtype bf16 --p-dtype bf16 --tensor-cores --nq 77 --nk 130 --d 64 --causal");
  CAPTURE(a.out);
  if (fstest::gpu_command_ran(a.rc, a.out)) {
    CHECK(a.rc == 0);
    CHECK(a.out.find("\nPASS\n") != std::string::npos);
  }
}

TEST_CASE("verify --help lists the kernel variants of every path", "[cli][tensor_cores]") {
  const Outcome a = run_flashstep("verify --help");
  CAPTURE(a.out);
  CHECK(a.rc == 0);
  // The build without CUDA has the same flags (app/gpu_requests.cpp) and says it needs CUDA.
  CHECK((a.out.find("needs the CUDA backend; not in this build") != std::string::npos) == !FLASHSTEP_BIN_HAS_CUDA);
  // CLI11 wraps the help text at its column width: compare with runs of white space as one space.
  std::string flat;
  for (char c : a.out)
    if (!std::isspace(static_cast<unsigned char>(c))) flat += c;
    else if (!flat.empty() && flat.back() != ' ') flat += ' ';
  for (const char* want : {"1 plain", "2 register-tiled", "3 register-tiled in less shared memory",
                           "--tensor-cores: the defaults (gpu/README.md)", "-DFLASHSTEP_LADDER=ON every rung 1-52", "101-104 the Bc sweep",
                           "--schedule decode: the split kernel, 3 (every d), 5 and 9",
                           // The ladder's backward configurations and FP8 rungs of one d, written out by hand
                           // (the help derives them from gpu/bwd_tc_launch.h's and gpu/tc_launch.h's predicates).
                           "with the ladder 1-46 (3, 8, 18-20, 22, 26, 27, 31, 33, 35 and 39: d = 64 only; 21, 23-25, "
                           "28-30, 32, 34, 36-38 and 40-46: d = 128 only)",
                           "with the ladder 1-21 (6, 8, 9, 17, 19 and 21: d = 64; 2-5, 7, 10-16, 18 and 20: d = 128)"})
    CHECK(flat.find(want) != std::string::npos);
}

TEST_CASE("explain shows the storage dtype and p_dtype, and counts bytes in the storage type", "[cli][tensor_cores]") {
  const Outcome a = run_flashstep("explain --n 300 --d 32 --M 2000 --dtype bf16 --p-dtype bf16 --splits 4");
  CAPTURE(a.out);
  REQUIRE(a.rc == 0);
  CHECK(a.out.find("precision: dtype bf16 (2 bytes per stored element") != std::string::npos);
  CHECK(a.out.find("p_dtype bf16 (P~_ij rounded on chip") != std::string::npos);
  // Total bytes in bf16: 2 B per stored element, 4 B per l, m, L (float32). Bc = ceil(2000 / 128)
  // = 16, Br = 16, Tr = Tc = 19; fa1 reads 2 N T of l, m and writes 2 N (T + 1); fa2 writes N of L;
  // decode (S = 4) keeps its partials O^(s), lse^(s) in float32, written once and read once.
  const long long N = 300, d = 32, T = 19, S = 4;
  const std::vector<long long> bytes = {
      2 * (2 * N * d + T * N * 2 * d) + 4 * (T * N * 2) + 2 * ((1 + T) * N * d) + 4 * ((1 + T) * N * 2),
      2 * (N * d + T * 2 * N * d) + 2 * N * d + 4 * N, 2 * (2 * N * d + 2 * N * N + N * d) + 2 * (2 * N * N + N * d),
      2 * (S * N * d + 2 * T * N * d) + 2 * 4 * S * N * (d + 1) + 2 * N * d + 4 * N};
  CHECK(fstest::numbers_after(a.out, "closed form, total bytes") == bytes);
  CHECK(fstest::numbers_after(a.out, "simulated, total bytes") == bytes);
  const size_t at = a.out.find("simulated equals closed form");
  REQUIRE(at != std::string::npos);
  CHECK(a.out.substr(at, a.out.find('\n', at) - at).find("yes") != std::string::npos);
  // The float32 default says so too, and a 16-bit run moves fewer bytes than it.
  const Outcome f = run_flashstep("explain --n 300 --d 32 --M 2000");
  REQUIRE(f.rc == 0);
  CHECK(f.out.find("precision: dtype fp32 (4 bytes per stored element; l, m, L in float32), p_dtype fp32") !=
        std::string::npos);
  auto total_bytes = [](const std::string& out) {
    const size_t k = out.find("closed form, total bytes");
    return out.substr(k, out.find('\n', k) - k);
  };
  CHECK(total_bytes(a.out) != total_bytes(f.out));
  // p_dtype without 16-bit storage emulates no kernel: one error line, exit 2.
  const Outcome bad = run_flashstep("explain --n 300 --d 32 --M 2000 --p-dtype bf16");
  CAPTURE(bad.out);
  CHECK(bad.rc == 2);
  CHECK(one_error_line(bad.out));
  CHECK(bad.out.find("add --dtype bf16 or fp16") != std::string::npos);
  const Outcome bad2 = run_flashstep("explain --n 300 --d 32 --dtype fp8");
  CHECK(bad2.rc == 2);
  CHECK(bad2.out.find("explain's table covers fp32, fp16 and bf16") != std::string::npos);
}
