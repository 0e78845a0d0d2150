// Task 7.1: kernel 7 (128 x 128 tiles, float4 loads, A stored transposed) against the exact
// product on the CPU, at every shape class and layout (fast_gemm_check.hpp states the bound).
#include <gtest/gtest.h>

#include "fast_gemm_check.hpp"

using namespace course;
using namespace course::s07test;

// Misaligned rows take the single-float loads.
COURSE_GEMM_KERNEL_TESTS(Task7_1_Vectorized, kGemmVectorized, SKIP_WITHOUT_GPU())
