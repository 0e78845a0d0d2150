// Task 2.1: conv2d forward, against examples worked by hand and a plain reference.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "02_conv_pool/conv.hpp"
#include "course_test.hpp"
#include "planted_mistakes.hpp"
#include "reference.hpp"
#include "tensor_check.hpp"

using namespace course;

namespace {
// One 3x3 image and one 2x2 filter, used by the hand-worked examples:
//
//     x = 1 2 3     W = 1 2     b = 0.5
//         4 5 6         3 4
//         7 8 9
const std::vector<float> kImage = {1, 2, 3, 4, 5, 6, 7, 8, 9};
const std::vector<float> kFilter = {1, 2, 3, 4};
const float kBias = 0.5f;

std::vector<float> run_forward(const ConvGeometry& g) {
  std::vector<float> y(static_cast<std::size_t>(g.out_size()), -999.f);  // an output never written stays -999
  conv2d_forward(kImage.data(), kFilter.data(), &kBias, y.data(), 1, g);
  return y;
}

// The hand examples' output plane against `want`, and against what the classic slips give on them.
void expect_plane(const ConvGeometry& g, const std::vector<float>& want, const std::string& what) {
  const std::vector<double> x(kImage.begin(), kImage.end()), W(kFilter.begin(), kFilter.end()), b{kBias};
  EXPECT_TRUE(testkit::tensor_matches("y of " + what, {{"oh", g.out_h()}, {"ow", g.out_w()}}, run_forward(g), want,
                                      testkit::kFloatEq, planted::conv_forward_slips(x, W, b, 1, g)));
}

// The conv's output shape [B, C_out, Ho, Wo] with its axes named.
TensorShape output_shape(int B, const ConvGeometry& g) {
  return {{"n", B}, {"co", g.C_out}, {"oh", g.out_h()}, {"ow", g.out_w()}};
}
}  // namespace

// No padding: y[oh][ow] = 1 x[oh][ow] + 2 x[oh][ow+1] + 3 x[oh+1][ow] + 4 x[oh+1][ow+1] + 0.5,
// e.g. y[0][0] = 1 + 4 + 12 + 20 + 0.5. (A flipped kernel would give 4 + 6 + 8 + 5 + 0.5 = 23.5.)
TEST(Task2_1_ConvForward, HandExampleWithoutPadding) {
  expect_plane({1, 3, 3, 1, 2, 0, 1}, {37.5f, 47.5f, 67.5f, 77.5f}, "3x3 image, 2x2 filter, pad 0");
}

// Padding 1: a 5x5 padded image, so (3 + 2 - 2) / 1 + 1 = 4 outputs a side. The
// corners see one image cell each (y[0][0] = 4 * x[0][0] + 0.5), the middle
// 2x2 is the unpadded result.
TEST(Task2_1_ConvForward, HandExampleWithPadding) {
  expect_plane({1, 3, 3, 1, 2, 1, 1},
               {4.5f, 11.5f, 18.5f, 9.5f,     //
                18.5f, 37.5f, 47.5f, 21.5f,   //
                36.5f, 67.5f, 77.5f, 33.5f,   //
                14.5f, 23.5f, 26.5f, 9.5f},
               "3x3 image, 2x2 filter, pad 1");
}

// Stride 2 with padding 1: (3 + 2 - 2) / 2 + 1 = 2 outputs a side, the even
// rows and columns of the stride-1 result above.
TEST(Task2_1_ConvForward, HandExampleStrideTwo) {
  expect_plane({1, 3, 3, 1, 2, 1, 2}, {4.5f, 18.5f, 36.5f, 77.5f}, "3x3 image, 2x2 filter, pad 1, stride 2");
}

// Every channel counts: two input channels, two filters, two examples.
TEST(Task2_1_ConvForward, ChannelsFiltersAndExamples) {
  const ConvGeometry g{2, 2, 2, 2, 1, 0, 1};  // 1x1 filters: y[co] = b[co] + sum_ci W[co][ci] x[ci]
  const float x[16] = {1, 2, 3, 4, 10, 20, 30, 40,       // example 0: channel 0, channel 1
                       -1, -2, -3, -4, 5, 6, 7, 8};      // example 1
  const float W[4] = {1, 0.5f, -1, 2};                   // W[0] = (1, 0.5), W[1] = (-1, 2)
  const float b[2] = {0, 100};
  float y[16];
  conv2d_forward(x, W, b, y, 2, g);
  const float want[16] = {6, 12, 18, 24, 119, 138, 157, 176, 1.5f, 1, 0.5f, 0, 111, 114, 117, 120};
  EXPECT_TRUE(testkit::tensor_matches("y of 1x1 filters on 2 channels, 2 filters, 2 examples of 2x2", output_shape(2, g),
                                      y, want, testkit::kFloatEq,
                                      planted::conv_forward_slips(std::vector<double>(x, x + 16),
                                                                  std::vector<double>(W, W + 4), {0, 100}, 2, g)));
}

// Many shapes against the plain reference, in double precision: padding 0 to 2,
// stride 1 to 3, kernels 1 to 5, non-square inputs. The output buffer carries
// guard cells after it, which must stay untouched (a wrong output size writes
// past the end or leaves cells unwritten).
TEST(Task2_1_ConvForward, MatchesReferenceOnManyShapes) {
  const struct {
    int B;
    ConvGeometry g;
  } cases[] = {{1, {1, 5, 5, 1, 3, 0, 1}}, {2, {3, 6, 5, 4, 3, 1, 1}}, {2, {2, 7, 6, 2, 5, 2, 1}},
               {2, {3, 7, 8, 2, 3, 1, 2}}, {3, {4, 5, 4, 3, 1, 0, 1}}, {2, {2, 5, 6, 3, 1, 0, 2}},
               {2, {2, 8, 7, 3, 5, 1, 2}}, {1, {2, 4, 5, 2, 3, 2, 1}}, {2, {2, 9, 6, 3, 3, 0, 3}},
               {4, {16, 14, 14, 32, 3, 1, 1}}};
  for (const auto& c : cases) {
    const ConvGeometry& g = c.g;
    const auto x = testkit::random_vector(c.B * g.in_size(), 1), W = testkit::random_vector(g.weight_size(), 2),
               b = testkit::random_vector(g.C_out, 3);
    const auto want = reference::conv_forward(x, W, b, c.B, g);
    const std::size_t guard = 17;
    std::vector<double> y(want.size() + guard, 12345.0);
    conv2d_forward(x.data(), W.data(), b.data(), y.data(), c.B, g);
    const std::string what = "y of " + g.str() + ", batch " + std::to_string(c.B);
    ASSERT_TRUE(testkit::tensor_matches(what, output_shape(c.B, g), y.data(), want.data(), testkit::Tolerance{1e-12, 0},
                                        planted::conv_forward_slips(x, W, b, c.B, g)));
    const std::vector<double> untouched(guard, 12345.0);
    ASSERT_TRUE(testkit::tensor_matches("the " + std::to_string(guard) + " guard cells after the " +
                                            std::to_string(want.size()) + " outputs of " + what +
                                            " (written past the end?)",
                                        {{"past the end", static_cast<int>(guard)}}, y.data() + want.size(),
                                        untouched.data(), testkit::kExact));
  }
}
