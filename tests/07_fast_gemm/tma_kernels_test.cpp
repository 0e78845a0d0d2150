// Kernels 15 and 16 (given: kernels 14 and 13 with TMA copies, barriers and split roles):
// kernel 15 (TF32, Y rounded first) and kernel 16 (BF16, on FP32 inputs rounded first and on
// BF16 inputs) against the exact product of the operands rounded to their precision (every
// element) and of the unrounded ones (in norm), at every shape class and layout
// (fast_gemm_check.hpp): edges past the tiles come from TMA's zero fill, so every odd size
// must come out right. What they do not take (A^T B for kernel 15, split-K, misaligned rows)
// goes to kernels 14 and 13 and must come out right all the same. Without a Hopper GPU and a
// build for sm_90a these tests skip, saying so.
#include <gtest/gtest.h>

#include "07_fast_gemm/fast_gemm_kernels.hpp"
#include "fast_gemm_check.hpp"

using namespace course;
using namespace course::s07test;

#define SKIP_WITHOUT_TMA() SKIP_WITHOUT_HOPPER("kernels 15 and 16 need", "they hand every product to kernels 11 and 12")

// Misaligned and odd rows, and split-K, go to kernel 14.
COURSE_GEMM_KERNEL_TESTS(Stage07_TmaTf32, kGemmTmaTf32, SKIP_WITHOUT_TMA())

// Misaligned and odd rows, and split-K, go to kernel 13.
COURSE_GEMM_KERNEL_TESTS(Stage07_TmaBf16, kGemmTmaBf16, SKIP_WITHOUT_TMA())

TEST(Stage07_TmaBf16, Bf16InputsEveryShapeClassAndLayout) {
  SKIP_WITHOUT_TMA();
  expect_bf16_inputs_right(kGemmTmaBf16);
}
