// Task 5.6: conv bias gradient db = sums of dy per channel, on the GPU, against stage 02's CPU layer in double,
// for every shape of stage 02's gradient checks (tests/02_conv_pool/conv_cases.hpp),
// each through the own GEMM and cuBLAS, unrolled per image and per batch.
// Tolerance: |got - ref| <= 1e-5 + 1e-4 |ref| unless a test says otherwise.
#include <gtest/gtest.h>

#include "conv_case_tests.hpp"
#include "conv_layer_check.hpp"

using namespace course::s05test;

// One test per shape of stage 02's gradient checks, named after it (conv_case_tests.hpp).
COURSE_CONV_CASE_TESTS(Task5_6_ConvBackwardBias, K3Pad1NonSquare, SKIP_WITHOUT_GPU(), check_bias_gradient)

// conv1 of `cnn` at batch 64: 64 * 784 = 50176 values per channel, more than
// the 4 x 1024 a block reads in one sweep. Entries of order 100: atol 1e-3.
TEST(Task5_6_ConvBackwardBias, CnnLayer1FullBatch) {
  SKIP_WITHOUT_GPU();
  check_bias_gradient(64, kCnnConv1, 1e-3, kLayerRtol);
}
