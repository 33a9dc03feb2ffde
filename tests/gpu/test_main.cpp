// The [gpu] test binaries' main: Catch2's, and the exit code kSkipExitCode when every test case
// that ran was skipped (gpu_test_helpers.h's SKIP_TEST) and none failed, which ctest reports as a
// skip. A run with some cases passed and some skipped exits 0, as before. Compiled once for both
// GPU binaries (flashstep_gpu_catch_main in tests/gpu/CMakeLists.txt).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "gpu_test_helpers.h"

namespace {
int cases_run = 0;
struct CountCases : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testCaseStarting(Catch::TestCaseInfo const&) override { ++cases_run; }
};
}  // namespace
CATCH_REGISTER_LISTENER(CountCases)

int main(int argc, char* argv[]) {
  const int failed = Catch::Session().run(argc, argv);
  if (failed == 0 && cases_run > 0 && gputest::skipped_cases() >= cases_run) return gputest::kSkipExitCode;
  return failed;
}
