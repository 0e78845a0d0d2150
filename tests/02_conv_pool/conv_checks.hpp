// The checks of Tasks 2.1 (conv forward), 2.2 (its weight and bias gradients) and 2.3 (its input
// gradient), taking the code under test as an argument: the task tests pass the lesson's
// functions, the slips catalog (slips_test.cpp) a learner's wrong copy, so both meet the very same
// messages. The gradients are checked against central differences of the plain reference forward
// (reference.hpp), so each task needs its own code alone.
//
//   forward(x, W, b, y, B, g)             as conv2d_forward, for float and double
//   backward_weight(x, dy, dW, db, B, g)  as conv2d_backward_weight, for double
//   backward_input(dy, W, dx, B, g)       as conv2d_backward_input, for double
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "02_conv_pool/conv.hpp"
#include "conv_cases.hpp"
#include "course_test.hpp"
#include "planted_mistakes.hpp"
#include "reference.hpp"
#include "tensor_check.hpp"

namespace course::s02test {

using reference::ConvCase;

/// The conv cases every gradient check runs (conv_cases.hpp), in the order of the task's tests.
inline const ConvCase* const kConvCases[] = {
    &reference::kK3Pad1NonSquare, &reference::kK3Pad0,         &reference::kK5Pad2,
    &reference::kK3Pad2,          &reference::kK1,             &reference::kK1Stride2,
    &reference::kK3Pad1Stride2,   &reference::kK5Pad1Stride2,  &reference::kK5Pad2Stride2,
    &reference::kK3Pad0Stride3};

// ---- Task 2.1 ---------------------------------------------------------------------------------

/// The conv's output shape [B, C_out, Ho, Wo] with its axes named.
inline TensorShape conv_output_shape(int B, const ConvGeometry& g) {
  return {{"n", B}, {"co", g.C_out}, {"oh", g.out_h()}, {"ow", g.out_w()}};
}

/// One 3x3 image and one 2x2 filter, conv'd by `forward` with geometry g, against `want`, and
/// against what the classic slips give on them:
///
///     x = 1 2 3     W = 1 2     b = 0.5
///         4 5 6         3 4
///         7 8 9
template <typename Forward>
void check_conv_hand_example(const Forward& forward, const ConvGeometry& g, const std::vector<float>& want,
                             const std::string& what) {
  const std::vector<float> image = {1, 2, 3, 4, 5, 6, 7, 8, 9}, filter = {1, 2, 3, 4};
  const float bias = 0.5f;
  std::vector<float> y(static_cast<std::size_t>(g.out_size()), -999.f);  // an output never written stays -999
  forward(image.data(), filter.data(), &bias, y.data(), 1, g);
  const std::vector<double> x(image.begin(), image.end()), W(filter.begin(), filter.end()), b{bias};
  EXPECT_TRUE(testkit::tensor_matches("y of " + what, {{"oh", g.out_h()}, {"ow", g.out_w()}}, y, want,
                                      testkit::kFloatEq, planted::conv_forward_slips(x, W, b, 1, g)));
}

// No padding: y[oh][ow] = 1 x[oh][ow] + 2 x[oh][ow+1] + 3 x[oh+1][ow] + 4 x[oh+1][ow+1] + 0.5,
// e.g. y[0][0] = 1 + 4 + 12 + 20 + 0.5. (A flipped kernel would give 4 + 6 + 8 + 5 + 0.5 = 23.5.)
template <typename Forward>
void check_conv_without_padding(const Forward& forward) {
  check_conv_hand_example(forward, {1, 3, 3, 1, 2, 0, 1}, {37.5f, 47.5f, 67.5f, 77.5f}, "3x3 image, 2x2 filter, pad 0");
}

// Padding 1: a 5x5 padded image, so (3 + 2 - 2) / 1 + 1 = 4 outputs a side. The corners see one
// image cell each (y[0][0] = 4 * x[0][0] + 0.5), the middle 2x2 is the unpadded result.
template <typename Forward>
void check_conv_with_padding(const Forward& forward) {
  check_conv_hand_example(forward, {1, 3, 3, 1, 2, 1, 1},
                          {4.5f, 11.5f, 18.5f, 9.5f,     //
                           18.5f, 37.5f, 47.5f, 21.5f,   //
                           36.5f, 67.5f, 77.5f, 33.5f,   //
                           14.5f, 23.5f, 26.5f, 9.5f},
                          "3x3 image, 2x2 filter, pad 1");
}

// Stride 2 with padding 1: (3 + 2 - 2) / 2 + 1 = 2 outputs a side, the even rows and columns of
// the stride-1 result above.
template <typename Forward>
void check_conv_stride_two(const Forward& forward) {
  check_conv_hand_example(forward, {1, 3, 3, 1, 2, 1, 2}, {4.5f, 18.5f, 36.5f, 77.5f},
                          "3x3 image, 2x2 filter, pad 1, stride 2");
}

// Every channel counts: two input channels, two filters, two examples.
template <typename Forward>
void check_conv_channels(const Forward& forward) {
  const ConvGeometry g{2, 2, 2, 2, 1, 0, 1};  // 1x1 filters: y[co] = b[co] + sum_ci W[co][ci] x[ci]
  const float x[16] = {1, 2, 3, 4, 10, 20, 30, 40,   // example 0: channel 0, channel 1
                       -1, -2, -3, -4, 5, 6, 7, 8};  // example 1
  const float W[4] = {1, 0.5f, -1, 2};               // W[0] = (1, 0.5), W[1] = (-1, 2)
  const float b[2] = {0, 100};
  float y[16];
  forward(x, W, b, y, 2, g);
  const float want[16] = {6, 12, 18, 24, 119, 138, 157, 176, 1.5f, 1, 0.5f, 0, 111, 114, 117, 120};
  EXPECT_TRUE(testkit::tensor_matches("y of 1x1 filters on 2 channels, 2 filters, 2 examples of 2x2",
                                      conv_output_shape(2, g), y, want, testkit::kFloatEq,
                                      planted::conv_forward_slips(std::vector<double>(x, x + 16),
                                                                  std::vector<double>(W, W + 4), {0, 100}, 2, g)));
}

// Many shapes against the plain reference, in double precision: padding 0 to 2, stride 1 to 3,
// kernels 1 to 5, non-square inputs. The output buffer carries guard cells after it, which must
// stay untouched (a wrong output size writes past the end or leaves cells unwritten).
template <typename Forward>
void check_conv_on_many_shapes(const Forward& forward) {
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
    forward(x.data(), W.data(), b.data(), y.data(), c.B, g);
    const std::string what = "y of " + g.str() + ", batch " + std::to_string(c.B);
    ASSERT_TRUE(testkit::tensor_matches(what, conv_output_shape(c.B, g), y.data(), want.data(),
                                        testkit::Tolerance{1e-12, 0}, planted::conv_forward_slips(x, W, b, c.B, g)));
    const std::vector<double> untouched(guard, 12345.0);
    ASSERT_TRUE(testkit::tensor_matches("the " + std::to_string(guard) + " guard cells after the " +
                                            std::to_string(want.size()) + " outputs of " + what +
                                            " (written past the end?)",
                                        {{"past the end", static_cast<int>(guard)}}, y.data() + want.size(),
                                        untouched.data(), testkit::kExact));
  }
}

// ---- Task 2.2 ---------------------------------------------------------------------------------

// L = sum_i r_i y_i, so dL/dy = r and every output matters.
template <typename BackwardWeight>
void check_conv_weight_gradients(const BackwardWeight& backward_weight, const ConvCase& c) {
  const ConvGeometry& g = c.g;
  auto x = testkit::random_vector(c.B * g.in_size(), 21), W = testkit::random_vector(g.weight_size(), 22),
       b = testkit::random_vector(g.C_out, 23);
  const auto r = testkit::random_vector(c.B * g.out_size(), 24);
  std::vector<double> dW(W.size()), db(b.size());
  backward_weight(x.data(), r.data(), dW.data(), db.data(), c.B, g);
  auto loss = [&] { return testkit::weighted_sum(reference::conv_forward(x, W, b, c.B, g), r); };
  GradCheckOptions opt;
  opt.tolerance = 1e-6;  // conv is linear in W and b: only rounding (up to about 1e-7 on small entries here) separates the two
  const std::string where = " (" + reference::describe(c) + ")";
  auto result = check_gradient("dW of conv" + where, W.data(), {{"co", g.C_out}, {"ci", g.C_in}, {"kh", g.K}, {"kw", g.K}},
                               dW.data(), loss, opt);
  planted::name_mistake(result, planted::conv_weight_mistake(dW, x, r, c.B, g));
  EXPECT_GRADIENT_OK(result);
  EXPECT_GRADIENT_OK(check_gradient("db of conv" + where, b.data(), {{"co", g.C_out}}, db.data(), loss, opt));
}

// The gradients are sums over the batch, written fresh on every call: stale values must not leak
// in. One 2x2 image, a 1x1 filter: dW = sum x * dy.
template <typename BackwardWeight>
void check_conv_weight_gradient_sums_the_batch(const BackwardWeight& backward_weight) {
  const ConvGeometry g{1, 2, 2, 1, 1, 0, 1};
  const double x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, dy[8] = {1, 0, 0, 1, 0.5, 0.5, 0, 0};
  double dW[1] = {100}, db[1] = {100};
  backward_weight(x, dy, dW, db, 2, g);
  const std::string what = " of a 1x1 conv on two 2x2 examples (the buffers held 100 before the call)";
  EXPECT_TRUE(testkit::scalar_matches("dW" + what, dW[0], (1 + 4) + (2.5 + 3), testkit::kDoubleEq,
                                      {{"adding to the 100 dW held, without zeroing it first", {100 + 10.5}},
                                       {"example 1 alone (each example overwrites dW: it sums over the batch)", {5.5}},
                                       {"example 0 alone (dW sums over the batch)", {5}}}));
  EXPECT_TRUE(testkit::scalar_matches("db" + what, db[0], 2 + 1, testkit::kDoubleEq,
                                      {{"adding to the 100 db held, without zeroing it first", {103}},
                                       {"example 1 alone (each example overwrites db: it sums over the batch)", {1}},
                                       {"example 0 alone (db sums over the batch)", {2}}}));
}

// ---- Task 2.3 ---------------------------------------------------------------------------------

template <typename BackwardInput>
void check_conv_input_gradient(const BackwardInput& backward_input, const ConvCase& c) {
  const ConvGeometry& g = c.g;
  auto x = testkit::random_vector(c.B * g.in_size(), 31);
  const auto W = testkit::random_vector(g.weight_size(), 32), b = testkit::random_vector(g.C_out, 33),
             r = testkit::random_vector(c.B * g.out_size(), 34);
  std::vector<double> dx(x.size(), 777.0);  // stale values must be overwritten
  backward_input(r.data(), W.data(), dx.data(), c.B, g);
  auto loss = [&] { return testkit::weighted_sum(reference::conv_forward(x, W, b, c.B, g), r); };
  GradCheckOptions opt;
  opt.tolerance = 1e-6;   // linear in x: only rounding separates the two
  opt.max_samples = 128;  // the input is the tensor where padding and stride mistakes show: look harder
  auto result = check_gradient("dx of conv (" + reference::describe(c) + ")", x.data(),
                               {{"n", c.B}, {"ci", g.C_in}, {"ih", g.H}, {"iw", g.W}}, dx.data(), loss, opt);
  planted::name_mistake(result, planted::conv_input_mistake(dx, r, W, c.B, g, 777.0));
  EXPECT_GRADIENT_OK(result);
}

// Where one output's gradient lands, worked by hand. With dy = 1 at output (oh, ow) and 0
// elsewhere, dx is the kernel itself laid over that output's window (rows oh*S - P ..., columns
// ow*S - P ...), cut off where the window covers padding. Summing over outputs, each dx cell meets
// the kernel from the other side, which is why the formula has the kernel flipped.
template <typename BackwardInput>
void check_one_output_gradient_lands_on_its_window(const BackwardInput& backward_input) {
  const std::vector<double> W = {1, 2, 3, 4, 5, 6, 7, 8, 9};  // 3x3, one channel
  // dx of the one-hot dy `dy` against `want`, and against what the classic slips give.
  const auto check = [&](const ConvGeometry& g, const std::vector<double>& dy, const std::vector<double>& want,
                         const std::string& what) {
    std::vector<double> dx(16, -1.0);  // a cell never written stays -1
    backward_input(dy.data(), W.data(), dx.data(), 1, g);
    std::vector<testkit::KnownSlip> slips;
    planted::ConvMistakes unflipped;
    unflipped.flip_kernel = false;
    slips.push_back({"the kernel NOT flipped", planted::conv_input_gradient(dy, W, 1, g, unflipped)});
    for (int shift : {-1, 1}) {
      planted::ConvMistakes shifted;
      shifted.input_pad_shift = shift;
      slips.push_back({"landing as if the padding were " + std::to_string(g.P + shift) + ", not " + std::to_string(g.P),
                       planted::conv_input_gradient(dy, W, 1, g, shifted)});
    }
    std::vector<double> kept = want;
    for (double& v : kept) v -= 1;
    slips.push_back({"adding to the -1 dx held, without zeroing it first", kept});
    EXPECT_TRUE(testkit::tensor_matches("dx of a 3x3 kernel 1..9 on a 4x4 image, " + what, {{"ih", 4}, {"iw", 4}}, dx,
                                        want, testkit::kDoubleEq, slips));
  };
  {  // pad 1, output (0, 0): its window starts at (-1, -1), so only W[1..2][1..2] lands, at dx[0..1][0..1]
    std::vector<double> dy(16, 0.0);
    dy[0] = 1;
    check({1, 4, 4, 1, 3, 1, 1}, dy, {5, 6, 0, 0, 8, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, "pad 1, dy = 1 at output (0, 0)");
  }
  {  // pad 0, output (1, 1) of a 4x4 image: the whole kernel lands at dx[1..3][1..3]
    std::vector<double> dy(4, 0.0);
    dy[3] = 1;
    check({1, 4, 4, 1, 3, 0, 1}, dy, {0, 0, 0, 0, 0, 1, 2, 3, 0, 4, 5, 6, 0, 7, 8, 9}, "pad 0, dy = 1 at output (1, 1)");
  }
}

/// Every check of Task 2.1, 2.2 and 2.3, in the order of the task's tests.
template <typename Forward>
void check_conv_forward(const Forward& forward) {
  check_conv_without_padding(forward);
  check_conv_with_padding(forward);
  check_conv_stride_two(forward);
  check_conv_channels(forward);
  check_conv_on_many_shapes(forward);
}

template <typename BackwardWeight>
void check_conv_backward_weight(const BackwardWeight& backward_weight) {
  for (const ConvCase* c : kConvCases) check_conv_weight_gradients(backward_weight, *c);
  check_conv_weight_gradient_sums_the_batch(backward_weight);
}

template <typename BackwardInput>
void check_conv_backward_input(const BackwardInput& backward_input) {
  for (const ConvCase* c : kConvCases) check_conv_input_gradient(backward_input, *c);
  check_one_output_gradient_lands_on_its_window(backward_input);
}

}  // namespace course::s02test
