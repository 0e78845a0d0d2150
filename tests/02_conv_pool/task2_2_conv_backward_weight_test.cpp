// Task 2.2: the weight and bias gradients of conv2d, checked by central differences of the plain
// reference forward (reference.hpp), so these tests need Task 2.2 alone. The checks live in
// conv_checks.hpp, shared with the slips catalog.
#include <gtest/gtest.h>

#include "02_conv_pool/conv.hpp"
#include "conv_checks.hpp"

using namespace course;

namespace {
void lesson(const double* x, const double* dy, double* dW, double* db, int B, const ConvGeometry& g) {
  conv2d_backward_weight(x, dy, dW, db, B, g);
}
void check_weight_gradients(const reference::ConvCase& c) { s02test::check_conv_weight_gradients(lesson, c); }
}  // namespace

TEST(Task2_2_ConvBackwardWeight, K3Pad1NonSquareBatch) { check_weight_gradients(reference::kK3Pad1NonSquare); }
TEST(Task2_2_ConvBackwardWeight, K3Pad0) { check_weight_gradients(reference::kK3Pad0); }
TEST(Task2_2_ConvBackwardWeight, K5Pad2) { check_weight_gradients(reference::kK5Pad2); }
TEST(Task2_2_ConvBackwardWeight, K3Pad2) { check_weight_gradients(reference::kK3Pad2); }
TEST(Task2_2_ConvBackwardWeight, K1) { check_weight_gradients(reference::kK1); }
TEST(Task2_2_ConvBackwardWeight, K1Stride2) { check_weight_gradients(reference::kK1Stride2); }
TEST(Task2_2_ConvBackwardWeight, K3Pad1Stride2) { check_weight_gradients(reference::kK3Pad1Stride2); }
TEST(Task2_2_ConvBackwardWeight, K5Pad1Stride2) { check_weight_gradients(reference::kK5Pad1Stride2); }
TEST(Task2_2_ConvBackwardWeight, K5Pad2Stride2) { check_weight_gradients(reference::kK5Pad2Stride2); }
TEST(Task2_2_ConvBackwardWeight, K3Pad0Stride3) { check_weight_gradients(reference::kK3Pad0Stride3); }

// The gradients are sums over the batch, written fresh on every call: stale values must not leak in.
TEST(Task2_2_ConvBackwardWeight, SumsOverTheBatchAndOverwrites) {
  s02test::check_conv_weight_gradient_sums_the_batch(lesson);
}
