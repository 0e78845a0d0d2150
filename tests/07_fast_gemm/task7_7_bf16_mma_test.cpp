// Task 7.7: kernel 12 (BF16 tensor cores) on FP32 inputs (rounded as they are loaded: what
// training uses) and on BF16 inputs (gemm_bf16: what cuBLAS's BF16 GEMM takes), against the
// exact product of the operands rounded to BF16 (every element) and of the unrounded ones
// (in norm), at every shape class and layout (fast_gemm_check.hpp states both bounds).
#include <gtest/gtest.h>

#include "fast_gemm_check.hpp"

using namespace course;
using namespace course::s07test;

// Misaligned rows take the single loads.
COURSE_GEMM_KERNEL_TESTS(Task7_7_Bf16Mma, kGemmBf16, SKIP_WITHOUT_FEATURE(Bf16Mma, "kernel 12"))

TEST(Task7_7_Bf16Mma, Bf16InputsEveryShapeClassAndLayout) {
  SKIP_WITHOUT_FEATURE(Bf16Mma, "kernel 12");
  expect_bf16_inputs_right(kGemmBf16);
}
