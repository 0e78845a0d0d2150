// Task 7.2: kernel 8 (block, warp and lane tiles) against the exact product on the CPU, at every
// shape class and layout (fast_gemm_check.hpp states the bound).
#include <gtest/gtest.h>

#include "fast_gemm_check.hpp"

using namespace course;
using namespace course::s07test;

TEST(Task7_2_WarpTiled, EveryShapeClassAndLayout) {
  SKIP_WITHOUT_GPU();
  expect_kernel_right(kGemmWarpTiled, shape_classes());
}

TEST(Task7_2_WarpTiled, MisalignedRowsTakeTheSingleFloatLoads) {
  SKIP_WITHOUT_GPU();
  expect_kernel_right(kGemmWarpTiled, misaligned_cases());
}

TEST(Task7_2_WarpTiled, LargeProducts) {
  SKIP_WITHOUT_GPU();
  expect_kernel_right(kGemmWarpTiled, large_cases(), /*every_layout=*/false);
}

TEST(Task7_2_WarpTiled, SplitKSlices) {
  SKIP_WITHOUT_GPU();
  expect_k_slices_right(kGemmWarpTiled);
}
