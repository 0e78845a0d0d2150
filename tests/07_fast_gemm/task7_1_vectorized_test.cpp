// Task 7.1: kernel 7 (128 x 128 tiles, float4 loads, A stored transposed) against the exact
// product on the CPU, at every shape class and layout (fast_gemm_check.hpp states the bound).
#include <gtest/gtest.h>

#include "fast_gemm_check.hpp"

using namespace course;
using namespace course::s07test;

TEST(Task7_1_Vectorized, EveryShapeClassAndLayout) {
  SKIP_WITHOUT_GPU();
  expect_kernel_right(kGemmVectorized, shape_classes());
}

TEST(Task7_1_Vectorized, MisalignedRowsTakeTheSingleFloatLoads) {
  SKIP_WITHOUT_GPU();
  expect_kernel_right(kGemmVectorized, misaligned_cases());
}

TEST(Task7_1_Vectorized, LargeProducts) {
  SKIP_WITHOUT_GPU();
  expect_kernel_right(kGemmVectorized, large_cases(), /*every_layout=*/false);
}

TEST(Task7_1_Vectorized, SplitKSlices) {
  SKIP_WITHOUT_GPU();
  expect_k_slices_right(kGemmVectorized);
}
