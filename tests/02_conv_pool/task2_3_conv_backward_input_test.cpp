// Task 2.3: the input gradient of conv2d (a full convolution of the output gradient with the
// flipped kernel), checked by central differences of the plain reference forward (reference.hpp),
// so these tests need Task 2.3 alone. The checks live in conv_checks.hpp, shared with the slips
// catalog.
#include <gtest/gtest.h>

#include "02_conv_pool/conv.hpp"
#include "conv_case_tests.hpp"
#include "conv_checks.hpp"

using namespace course;

namespace {
void lesson_conv_backward_input(const double* dy, const double* W, double* dx, int B, const ConvGeometry& g) {
  conv2d_backward_input(dy, W, dx, B, g);
}
void check_input_gradient(int B, const ConvGeometry& g) { s02test::check_conv_input_gradient(lesson_conv_backward_input, {B, g}); }
}  // namespace

// One test per shape of conv_cases.hpp, named after it (conv_case_tests.hpp); nothing to skip on the CPU.
COURSE_CONV_CASE_TESTS(Task2_3_ConvBackwardInput, K3Pad1NonSquareBatch, , check_input_gradient)

// Where one output's gradient lands, worked by hand: the kernel laid over that output's window.
TEST(Task2_3_ConvBackwardInput, OneOutputGradientLandsOnItsWindow) {
  s02test::check_one_output_gradient_lands_on_its_window(lesson_conv_backward_input);
}
