// Task 2.1: conv2d forward, against examples worked by hand and a plain reference. The checks
// live in conv_checks.hpp, shared with the slips catalog.
#include <gtest/gtest.h>

#include "02_conv_pool/conv.hpp"
#include "conv_checks.hpp"

using namespace course;

namespace {
const auto lesson_forward = [](const auto* x, const auto* W, const auto* b, auto* y, int B, const ConvGeometry& g) {
  conv2d_forward(x, W, b, y, B, g);
};
}  // namespace

// No padding: y[oh][ow] = 1 x[oh][ow] + 2 x[oh][ow+1] + 3 x[oh+1][ow] + 4 x[oh+1][ow+1] + 0.5.
TEST(Task2_1_ConvForward, HandExampleWithoutPadding) { s02test::check_conv_without_padding(lesson_forward); }

// Padding 1: 4 outputs a side; the corners see one image cell each.
TEST(Task2_1_ConvForward, HandExampleWithPadding) { s02test::check_conv_with_padding(lesson_forward); }

// Stride 2 with padding 1: the even rows and columns of the stride-1 result.
TEST(Task2_1_ConvForward, HandExampleStrideTwo) { s02test::check_conv_stride_two(lesson_forward); }

// Every channel counts: two input channels, two filters, two examples.
TEST(Task2_1_ConvForward, ChannelsFiltersAndExamples) { s02test::check_conv_channels(lesson_forward); }

// Many shapes against the plain reference, with guard cells after the output.
TEST(Task2_1_ConvForward, MatchesReferenceOnManyShapes) { s02test::check_conv_on_many_shapes(lesson_forward); }
