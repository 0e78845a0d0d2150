// Kernel 15 (given: kernel 14 with TMA copies, barriers and split roles, Y rounded first)
// against the exact product of the operands rounded to TF32 (every element) and of the
// unrounded ones (in norm), at every shape class and layout (fast_gemm_check.hpp): edges
// past the tiles come from TMA's zero fill, so every odd size must come out right. What it
// does not take (A^T B, split-K, misaligned rows) goes to kernel 14 and must come out right
// all the same. Without a Hopper GPU and a build for sm_90a these tests skip, saying so.
#include <gtest/gtest.h>

#include "07_fast_gemm/fast_gemm_kernels.hpp"
#include "fast_gemm_check.hpp"

using namespace course;
using namespace course::s07test;

#define SKIP_WITHOUT_TMA()                                                                              \
  do {                                                                                                  \
    SKIP_WITHOUT_GPU();                                                                                 \
    if (!wgmma_available())                                                                             \
      GTEST_SKIP() << "kernel 15 needs a Hopper GPU (compute capability 9.0) and a build with 90 among " \
                      "CMAKE_CUDA_ARCHITECTURES; here it hands every product to kernel 11";             \
  } while (0)

TEST(Stage07_TmaTf32, EveryShapeClassAndLayout) {
  SKIP_WITHOUT_TMA();
  expect_kernel_right(kGemmTmaTf32, shape_classes());
}

TEST(Stage07_TmaTf32, MisalignedAndOddRowsGoToKernel14) {
  SKIP_WITHOUT_TMA();
  expect_kernel_right(kGemmTmaTf32, misaligned_cases());
}

TEST(Stage07_TmaTf32, LargeProducts) {
  SKIP_WITHOUT_TMA();
  expect_kernel_right(kGemmTmaTf32, large_cases(), /*every_layout=*/false);
}

TEST(Stage07_TmaTf32, SplitKSlicesGoToKernel14) {
  SKIP_WITHOUT_TMA();
  expect_k_slices_right(kGemmTmaTf32);
}
