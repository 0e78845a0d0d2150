// Task 7.2: kernel 8 (block, warp and lane tiles) against the exact product on the CPU, at every
// shape class and layout (fast_gemm_check.hpp states the bound).
#include <gtest/gtest.h>

#include "fast_gemm_check.hpp"

using namespace course;
using namespace course::s07test;

// Misaligned rows take the single-float loads.
COURSE_GEMM_KERNEL_TESTS(Task7_2_WarpTiled, kGemmWarpTiled, SKIP_WITHOUT_GPU())
