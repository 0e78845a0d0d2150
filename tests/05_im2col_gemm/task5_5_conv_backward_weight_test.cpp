// Task 5.5: conv weight gradient dW = sum over the batch of dy U, on the GPU, against stage 02's CPU layer in double,
// for every shape of stage 02's gradient checks (tests/02_conv_pool/conv_cases.hpp),
// each through the own GEMM and cuBLAS, unrolled per image and per batch.
// Tolerance: |got - ref| <= 1e-5 + 1e-4 |ref| unless a test says otherwise.
#include <gtest/gtest.h>

#include "conv_case_tests.hpp"
#include "conv_layer_check.hpp"

using namespace course::s05test;

// One test per shape of stage 02's gradient checks, named after it (conv_case_tests.hpp).
COURSE_CONV_CASE_TESTS(Task5_5_ConvBackwardWeight, K3Pad1NonSquare, SKIP_WITHOUT_GPU(), check_weight_gradient)

// conv1 and conv2 of `cnn` at batch 8: the batch unroll's sum over 8 * 784 = 6272
// (conv1) and 8 * 196 = 1568 (conv2) pixels is split into 7 and 2 split-K chunks
// with the own GEMM. Sums of thousands of products: atol 5e-4 (the entries are
// of order 30; float rounding of such a sum is of order 1e-5 relative).
TEST(Task5_5_ConvBackwardWeight, CnnLayersWithSplitK) {
  SKIP_WITHOUT_GPU();
  check_weight_gradient(8, kCnnConv1, 5e-4, kLayerRtol);
  check_weight_gradient(8, kCnnConv2, 5e-4, kLayerRtol);
}

// The same without split-K (one GEMM over all 6272 rows), and with every split
// from 2 to 5 chunks, so that chunks of unequal length are exercised.
TEST(Task5_5_ConvBackwardWeight, EverySplitGivesTheSameGradient) {
  SKIP_WITHOUT_GPU();
  for (int chunks : {1, 2, 3, 4, 5}) check_weight_gradient(8, kCnnConv1, 5e-4, kLayerRtol, chunks);
}
