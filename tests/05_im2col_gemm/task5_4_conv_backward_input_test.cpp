// Task 5.4: conv input gradient dx = col2im(dy^T W), on the GPU, against stage 02's CPU layer in double,
// for every shape of stage 02's gradient checks (tests/02_conv_pool/conv_cases.hpp),
// each through the own GEMM and cuBLAS, unrolled per image and per batch.
// Tolerance: |got - ref| <= 1e-5 + 1e-4 |ref| unless a test says otherwise.
#include <gtest/gtest.h>

#include "conv_case_tests.hpp"
#include "conv_layer_check.hpp"

using namespace course::s05test;

// One test per shape of stage 02's gradient checks, named after it (conv_case_tests.hpp).
COURSE_CONV_CASE_TESTS(Task5_4_ConvBackwardInput, K3Pad1NonSquare, SKIP_WITHOUT_GPU(), check_input_gradient)

// conv2 of `cnn` at batch 4: C_out = 32 products per entry of dU, up to 9 entries per dx.
TEST(Task5_4_ConvBackwardInput, CnnLayer2) {
  SKIP_WITHOUT_GPU();
  check_input_gradient(4, kCnnConv2);
}
