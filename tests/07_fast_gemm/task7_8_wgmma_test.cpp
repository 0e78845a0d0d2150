// Task 7.8: kernel 13 (Hopper's wgmma) on FP32 inputs (gemm) and BF16 inputs (gemm_bf16), and
// kernel 14 (TF32 wgmma, one operand from registers),
// against the exact product of the operands rounded to BF16 (every element) and of the
// unrounded ones (in norm), at every shape class and layout (fast_gemm_check.hpp). Shapes
// kernel 13 cannot take (rows not a multiple of 8 values, misaligned matrices) go to kernel
// 12 (and of kernel 14's, A stored [K, M] with B [K, N] among them, to kernel 11) and must come
// out right all the same. Without a Hopper GPU and a build for sm_90a, kernels 13 and 14 are
// kernels 12 and 11, and these tests skip, saying so.
#include <gtest/gtest.h>

#include "07_fast_gemm/fast_gemm_kernels.hpp"
#include "fast_gemm_check.hpp"

using namespace course;
using namespace course::s07test;

#define SKIP_WITHOUT_WGMMA() SKIP_WITHOUT_HOPPER("kernel 13 needs", "it hands every product to kernel 12")

// Misaligned and odd rows go to kernel 12.
COURSE_GEMM_KERNEL_TESTS(Task7_8_Wgmma, kGemmWgmma, SKIP_WITHOUT_WGMMA())

TEST(Task7_8_Wgmma, Bf16InputsEveryShapeClassAndLayout) {
  SKIP_WITHOUT_WGMMA();
  expect_bf16_inputs_right(kGemmWgmma);
}

TEST(Task7_8_Wgmma, Tf32EveryShapeClassAndLayout) {
  SKIP_WITHOUT_WGMMA();
  expect_kernel_right(kGemmWgmmaTf32, shape_classes());
  expect_kernel_right(kGemmWgmmaTf32, misaligned_cases());
}

TEST(Task7_8_Wgmma, Tf32LargeProductsAndSplitK) {
  SKIP_WITHOUT_WGMMA();
  expect_kernel_right(kGemmWgmmaTf32, large_cases(), /*every_layout=*/false);
  expect_k_slices_right(kGemmWgmmaTf32);
}
