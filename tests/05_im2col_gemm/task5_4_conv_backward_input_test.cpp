// Task 5.4: conv input gradient dx = col2im(dy^T W), on the GPU, against stage 02's CPU layer in double,
// for every shape of stage 02's gradient checks (tests/02_conv_pool/conv_cases.hpp),
// each through the own GEMM and cuBLAS, unrolled per image and per batch.
// Tolerance: |got - ref| <= 1e-5 + 1e-4 |ref| unless a test says otherwise.
#include <gtest/gtest.h>

#include "conv_layer_check.hpp"

using namespace course;
using namespace course::s05test;

TEST(Task5_4_ConvBackwardInput, K3Pad1NonSquare) {
  SKIP_WITHOUT_GPU();
  check_input_gradient(reference::kK3Pad1NonSquare.B, reference::kK3Pad1NonSquare.g);
}
TEST(Task5_4_ConvBackwardInput, K3Pad0) {
  SKIP_WITHOUT_GPU();
  check_input_gradient(reference::kK3Pad0.B, reference::kK3Pad0.g);
}
TEST(Task5_4_ConvBackwardInput, K5Pad2) {
  SKIP_WITHOUT_GPU();
  check_input_gradient(reference::kK5Pad2.B, reference::kK5Pad2.g);
}
TEST(Task5_4_ConvBackwardInput, K3Pad2) {
  SKIP_WITHOUT_GPU();
  check_input_gradient(reference::kK3Pad2.B, reference::kK3Pad2.g);
}
TEST(Task5_4_ConvBackwardInput, K1) {
  SKIP_WITHOUT_GPU();
  check_input_gradient(reference::kK1.B, reference::kK1.g);
}
TEST(Task5_4_ConvBackwardInput, K1Stride2) {
  SKIP_WITHOUT_GPU();
  check_input_gradient(reference::kK1Stride2.B, reference::kK1Stride2.g);
}
TEST(Task5_4_ConvBackwardInput, K3Pad1Stride2) {
  SKIP_WITHOUT_GPU();
  check_input_gradient(reference::kK3Pad1Stride2.B, reference::kK3Pad1Stride2.g);
}
TEST(Task5_4_ConvBackwardInput, K5Pad1Stride2) {
  SKIP_WITHOUT_GPU();
  check_input_gradient(reference::kK5Pad1Stride2.B, reference::kK5Pad1Stride2.g);
}
TEST(Task5_4_ConvBackwardInput, K5Pad2Stride2) {
  SKIP_WITHOUT_GPU();
  check_input_gradient(reference::kK5Pad2Stride2.B, reference::kK5Pad2Stride2.g);
}
TEST(Task5_4_ConvBackwardInput, K3Pad0Stride3) {
  SKIP_WITHOUT_GPU();
  check_input_gradient(reference::kK3Pad0Stride3.B, reference::kK3Pad0Stride3.g);
}

// conv2 of `cnn` at batch 4: C_out = 32 products per entry of dU, up to 9 entries per dx.
TEST(Task5_4_ConvBackwardInput, CnnLayer2) {
  SKIP_WITHOUT_GPU();
  check_input_gradient(4, kCnnConv2);
}
