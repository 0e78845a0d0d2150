// Task 2.3: the input gradient of conv2d (a full convolution of the output gradient with the
// flipped kernel), checked by central differences of the plain reference forward (reference.hpp),
// so these tests need Task 2.3 alone. The checks live in conv_checks.hpp, shared with the slips
// catalog.
#include <gtest/gtest.h>

#include "02_conv_pool/conv.hpp"
#include "conv_checks.hpp"

using namespace course;

namespace {
void lesson(const double* dy, const double* W, double* dx, int B, const ConvGeometry& g) {
  conv2d_backward_input(dy, W, dx, B, g);
}
void check_input_gradient(const reference::ConvCase& c) { s02test::check_conv_input_gradient(lesson, c); }
}  // namespace

TEST(Task2_3_ConvBackwardInput, K3Pad1NonSquareBatch) { check_input_gradient(reference::kK3Pad1NonSquare); }
TEST(Task2_3_ConvBackwardInput, K3Pad0) { check_input_gradient(reference::kK3Pad0); }
TEST(Task2_3_ConvBackwardInput, K5Pad2) { check_input_gradient(reference::kK5Pad2); }
TEST(Task2_3_ConvBackwardInput, K3Pad2) { check_input_gradient(reference::kK3Pad2); }
TEST(Task2_3_ConvBackwardInput, K1) { check_input_gradient(reference::kK1); }
TEST(Task2_3_ConvBackwardInput, K1Stride2) { check_input_gradient(reference::kK1Stride2); }
TEST(Task2_3_ConvBackwardInput, K3Pad1Stride2) { check_input_gradient(reference::kK3Pad1Stride2); }
TEST(Task2_3_ConvBackwardInput, K5Pad1Stride2) { check_input_gradient(reference::kK5Pad1Stride2); }
TEST(Task2_3_ConvBackwardInput, K5Pad2Stride2) { check_input_gradient(reference::kK5Pad2Stride2); }
TEST(Task2_3_ConvBackwardInput, K3Pad0Stride3) { check_input_gradient(reference::kK3Pad0Stride3); }

// Where one output's gradient lands, worked by hand: the kernel laid over that output's window.
TEST(Task2_3_ConvBackwardInput, OneOutputGradientLandsOnItsWindow) {
  s02test::check_one_output_gradient_lands_on_its_window(lesson);
}
