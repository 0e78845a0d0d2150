/// @file fuzz_target.cpp
/// @brief The libFuzzer entry point of every target; fuzz/CMakeLists.txt builds
/// it once per target with COURSE_FUZZ_RUN naming the harness function.
#include <cstddef>
#include <cstdint>

#include "fuzz/harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  COURSE_FUZZ_RUN(data, size);
  return 0;
}
