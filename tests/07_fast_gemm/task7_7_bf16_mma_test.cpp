// Task 7.7: kernel 12 (BF16 tensor cores) on FP32 inputs (rounded as they are loaded: what
// training uses) and on BF16 inputs (gemm_bf16: what cuBLAS's BF16 GEMM takes), against the
// exact product of the operands rounded to BF16 (every element) and of the unrounded ones
// (in norm), at every shape class and layout (fast_gemm_check.hpp states both bounds).
#include <gtest/gtest.h>

#include "fast_gemm_check.hpp"

using namespace course;
using namespace course::s07test;

TEST(Task7_7_Bf16Mma, EveryShapeClassAndLayout) {
  SKIP_WITHOUT_GPU();
  expect_kernel_right(kGemmBf16, shape_classes());
}

TEST(Task7_7_Bf16Mma, MisalignedRowsTakeTheSingleLoads) {
  SKIP_WITHOUT_GPU();
  expect_kernel_right(kGemmBf16, misaligned_cases());
}

TEST(Task7_7_Bf16Mma, LargeProducts) {
  SKIP_WITHOUT_GPU();
  expect_kernel_right(kGemmBf16, large_cases(), /*every_layout=*/false);
}

TEST(Task7_7_Bf16Mma, SplitKSlices) {
  SKIP_WITHOUT_GPU();
  expect_k_slices_right(kGemmBf16);
}

TEST(Task7_7_Bf16Mma, Bf16InputsEveryShapeClassAndLayout) {
  SKIP_WITHOUT_GPU();
  expect_bf16_inputs_right(kGemmBf16);
}
