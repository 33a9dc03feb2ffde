// Catch2's implementation and main, compiled once (flashstep_catch_main in tests/CMakeLists.txt)
// for the test binaries that link it; the GPU binaries have a main of their own
// (tests/gpu/test_main.cpp).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
