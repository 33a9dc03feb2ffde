// libFuzzer target: the snapshot folder reader (core/snapshot_read.cpp). Once, a real folder of
// a small fa1 problem with the backward is written to a temporary folder; each input then
// replaces its manifest.json, so mutations reach the checks of the fields, the list of
// snapshots and the .npy files it names. Any input must give a snapshot set or an InputError.
#include "core/backward.h"
#include "core/run.h"
#include "core/snapshot.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

char g_root[] = "/tmp/fuzz-manifest-XXXXXX";

std::string make_folder() {
  using namespace flashstep;
  if (!::mkdtemp(g_root)) std::abort();
  std::atexit([] {  // the temporary folder goes when the fuzzer ends normally
    std::error_code ec;
    std::filesystem::remove_all(g_root, ec);
  });
  const std::string dir = std::string(g_root) + "/s";
  ProblemSpec spec;
  spec.nq = 8;
  spec.nk = 12;
  spec.d = 4;
  spec.M = 64;
  const Problem p = make_problem(spec);
  const Mat dO = make_grad_output(p, spec.pattern);
  RunOptions opt;
  opt.record = true;
  opt.dO = &dO;
  write_snapshots(dir, cpu_snapshots(run_problem(p, make_tiling(p), opt), &dO));
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace flashstep;
  static const std::string dir = make_folder();
  {
    std::ofstream out(dir + "/manifest.json", std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  }
  try {
    const SnapshotSet s = read_snapshots(dir);
    if (s.final_state.tensors.empty()) std::abort();  // a set read must hold its final state
  } catch (const InputError&) {
  }
  return 0;
}
