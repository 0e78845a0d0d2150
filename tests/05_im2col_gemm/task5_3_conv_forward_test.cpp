// Task 5.3: conv forward y = W U^T + b, on the GPU, against stage 02's CPU layer in double,
// for every shape of stage 02's gradient checks (tests/02_conv_pool/conv_cases.hpp),
// each through the own GEMM and cuBLAS, unrolled per image and per batch.
// Tolerance: |got - ref| <= 1e-5 + 1e-4 |ref| unless a test says otherwise.
#include <gtest/gtest.h>

#include "conv_case_tests.hpp"
#include "conv_layer_check.hpp"

using namespace course::s05test;

// One test per shape of stage 02's gradient checks, named after it (conv_case_tests.hpp).
COURSE_CONV_CASE_TESTS(Task5_3_ConvForward, K3Pad1NonSquare, SKIP_WITHOUT_GPU(), check_forward)

// The conv layers of `cnn` at batch 4 (R = 9 and 144 products per output).
TEST(Task5_3_ConvForward, CnnLayers) {
  SKIP_WITHOUT_GPU();
  check_forward(4, kCnnConv1);
  check_forward(4, kCnnConv2);
}
