// Task 7.6: kernel 11 (TF32 tensor cores) against the exact product of its operands rounded
// to TF32 (every element) and of the unrounded ones (in norm: the precision's own error),
// at every shape class and layout (fast_gemm_check.hpp states both bounds).
#include <gtest/gtest.h>

#include "fast_gemm_check.hpp"

using namespace course;
using namespace course::s07test;

TEST(Task7_6_Tf32Mma, EveryShapeClassAndLayout) {
  SKIP_WITHOUT_GPU();
  expect_kernel_right(kGemmTf32, shape_classes());
}

TEST(Task7_6_Tf32Mma, MisalignedRowsTakeTheFourByteCopies) {
  SKIP_WITHOUT_GPU();
  expect_kernel_right(kGemmTf32, misaligned_cases());
}

TEST(Task7_6_Tf32Mma, LargeProducts) {
  SKIP_WITHOUT_GPU();
  expect_kernel_right(kGemmTf32, large_cases(), /*every_layout=*/false);
}

TEST(Task7_6_Tf32Mma, SplitKSlices) {
  SKIP_WITHOUT_GPU();
  expect_k_slices_right(kGemmTf32);
}
