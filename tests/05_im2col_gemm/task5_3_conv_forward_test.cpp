// Task 5.3: conv forward y = W U^T + b, on the GPU, against stage 02's CPU layer in double,
// for every shape of stage 02's gradient checks (tests/02_conv_pool/conv_cases.hpp),
// each through the own GEMM and cuBLAS, unrolled per image and per batch.
// Tolerance: |got - ref| <= 1e-5 + 1e-4 |ref| unless a test says otherwise.
#include <gtest/gtest.h>

#include "conv_layer_check.hpp"

using namespace course;
using namespace course::s05test;

TEST(Task5_3_ConvForward, K3Pad1NonSquare) {
  SKIP_WITHOUT_GPU();
  check_forward(reference::kK3Pad1NonSquare.B, reference::kK3Pad1NonSquare.g);
}
TEST(Task5_3_ConvForward, K3Pad0) {
  SKIP_WITHOUT_GPU();
  check_forward(reference::kK3Pad0.B, reference::kK3Pad0.g);
}
TEST(Task5_3_ConvForward, K5Pad2) {
  SKIP_WITHOUT_GPU();
  check_forward(reference::kK5Pad2.B, reference::kK5Pad2.g);
}
TEST(Task5_3_ConvForward, K3Pad2) {
  SKIP_WITHOUT_GPU();
  check_forward(reference::kK3Pad2.B, reference::kK3Pad2.g);
}
TEST(Task5_3_ConvForward, K1) {
  SKIP_WITHOUT_GPU();
  check_forward(reference::kK1.B, reference::kK1.g);
}
TEST(Task5_3_ConvForward, K1Stride2) {
  SKIP_WITHOUT_GPU();
  check_forward(reference::kK1Stride2.B, reference::kK1Stride2.g);
}
TEST(Task5_3_ConvForward, K3Pad1Stride2) {
  SKIP_WITHOUT_GPU();
  check_forward(reference::kK3Pad1Stride2.B, reference::kK3Pad1Stride2.g);
}
TEST(Task5_3_ConvForward, K5Pad1Stride2) {
  SKIP_WITHOUT_GPU();
  check_forward(reference::kK5Pad1Stride2.B, reference::kK5Pad1Stride2.g);
}
TEST(Task5_3_ConvForward, K5Pad2Stride2) {
  SKIP_WITHOUT_GPU();
  check_forward(reference::kK5Pad2Stride2.B, reference::kK5Pad2Stride2.g);
}
TEST(Task5_3_ConvForward, K3Pad0Stride3) {
  SKIP_WITHOUT_GPU();
  check_forward(reference::kK3Pad0Stride3.B, reference::kK3Pad0Stride3.g);
}

// The conv layers of `cnn` at batch 4 (R = 9 and 144 products per output).
TEST(Task5_3_ConvForward, CnnLayers) {
  SKIP_WITHOUT_GPU();
  check_forward(4, kCnnConv1);
  check_forward(4, kCnnConv2);
}
