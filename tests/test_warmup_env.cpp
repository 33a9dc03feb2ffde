// FLASHSTEP_WARMUP_MS, as the GPU timing reads it (gpu/warmup_env.h): the default when unset, a
// number of milliseconds >= 0 as given, one error line naming the variable for anything else.
#include <catch2/catch.hpp>

#include <string>

#include "gpu/warmup_env.h"

using flashstep::gpu::kDefaultWarmupMs;
using flashstep::gpu::parse_warmup_ms;

TEST_CASE("FLASHSTEP_WARMUP_MS: unset gives the default, numbers >= 0 are taken as given", "[timing]") {
  CHECK(parse_warmup_ms(nullptr) == kDefaultWarmupMs);
  CHECK(parse_warmup_ms("0") == 0.0);
  CHECK(parse_warmup_ms("25") == 25.0);
  CHECK(parse_warmup_ms("2.5") == 2.5);
  CHECK(parse_warmup_ms("1e3") == 1000.0);
}

TEST_CASE("FLASHSTEP_WARMUP_MS: anything but a finite number >= 0 is one error naming it", "[timing]") {
  for (const char* bad : {"", "abc", "25ms", "25 ", "-1", "-0.5", "nan", "inf", "1e999"}) {
    CAPTURE(bad);
    try {
      parse_warmup_ms(bad);
      FAIL("accepted");
    } catch (const flashstep::InputError& e) {
      const std::string what = e.what();
      CHECK(what.find("FLASHSTEP_WARMUP_MS") != std::string::npos);
      CHECK(what.find(std::string("'") + bad + "'") != std::string::npos);
      CHECK(what.find('\n') == std::string::npos);
    }
  }
}
