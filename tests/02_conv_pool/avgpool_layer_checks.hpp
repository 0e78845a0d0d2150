// The checks of Task 2.8 (average-pool forward and backward), taking the code under test as an
// argument: the task tests pass the lesson's functions, the slips catalog (slips_test.cpp) a
// learner's wrong copy, so both meet the very same messages. Each output plane is compared whole,
// and named when it is what a classic slip gives (avgpool_reference.hpp).
//
//   forward(x, y, B, g)    as avgpool_forward, for float and double
//   backward(dy, dx, B, g) as avgpool_backward, for double
#pragma once

#include <gtest/gtest.h>

#include <iterator>
#include <string>
#include <vector>

#include "02_conv_pool/pool.hpp"
#include "avgpool_reference.hpp"
#include "course_test.hpp"
#include "tensor_check.hpp"

namespace course::s02test {

// ---- forward ----------------------------------------------------------------------------------

/// The shape [n, c, oh, ow] of a pool's output.
inline TensorShape avgpool_output_shape(int B, const PoolGeometry& g) {
  return {{"n", B}, {"c", g.C}, {"oh", g.out_h()}, {"ow", g.out_w()}};
}

/// y of `forward` on one example x against `want` (the pool's outputs), and against what dividing a
/// padded window by its image cells gives.
template <typename Forward>
void expect_avgpool_plane(const Forward& forward, const std::vector<float>& x, const PoolGeometry& g,
                          const std::vector<float>& want, const std::string& what) {
  std::vector<float> y(static_cast<std::size_t>(g.out_size()) + 3, -999.f);  // 3 guard cells
  forward(x.data(), y.data(), 1, g);
  const std::vector<double> xd(x.begin(), x.end());
  EXPECT_TRUE(testkit::tensor_matches(
      "y of " + g.str("average-pool") + ", " + what, avgpool_output_shape(1, g), y.data(), want.data(), testkit::kFloatEq,
      {{"dividing each window by the image cells it holds (the divisor is K*K whatever the padding: padded cells "
        "count as zeros)",
        reference::avgpool_forward(xd, 1, g, true)}}));
  for (std::size_t i = want.size(); i < y.size(); ++i)
    EXPECT_EQ(y[i], -999.f) << "average-pool forward wrote past its " << want.size() << " outputs";
}

/// The 3x3 plane of the hand examples: 1 2 3 / 4 5 6 / 7 8 9.
inline const std::vector<float> kAvgPoolPlane = {1, 2, 3, 4, 5, 6, 7, 8, 9};

// 2x2 windows, stride 2, on a 4x4 plane: the mean of each block.
template <typename Forward>
void check_avgpool_by_hand(const Forward& forward) {
  const std::vector<float> x = {1, 5, 2, 0,    //
                                3, 4, 8, 7,    //
                                -1, -2, 6, 9,  //
                                -3, 0, 9, 8};
  // (1+5+3+4)/4, (2+0+8+7)/4, (-1-2-3+0)/4, (6+9+9+8)/4
  expect_avgpool_plane(forward, x, PoolGeometry{1, 4, 4, 2, 2, 0}, {3.25f, 4.25f, -1.5f, 8.f}, "the hand example");
}

// Padding 1 with 2x2 windows at stride 2: the windows start at row and column -1 and 1. The
// corner window holds one image cell, the edge windows two: each still divides by K*K = 4 (padded
// cells count as zeros), not by the cells it holds. Then 3x3 windows at stride 1 with padding 2
// (P = K - 1, the most the course allows): 5x5 outputs, the corners hold a single image cell.
template <typename Forward>
void check_avgpool_padded_divisor(const Forward& forward) {
  // {1}/4, {2, 3}/4, {4, 7}/4, {5, 6, 8, 9}/4
  expect_avgpool_plane(forward, kAvgPoolPlane, PoolGeometry{1, 3, 3, 2, 2, 1}, {0.25f, 1.25f, 2.75f, 7.f},
                       "on the 3x3 plane 1..9");
  const PoolGeometry g{1, 3, 3, 3, 1, 2};
  const auto want = reference::avgpool_forward(std::vector<double>(kAvgPoolPlane.begin(), kAvgPoolPlane.end()), 1, g);
  expect_avgpool_plane(forward, kAvgPoolPlane, g, std::vector<float>(want.begin(), want.end()),
                       "on the 3x3 plane 1..9 (the corner windows hold one image cell, the centre all nine)");
}

// Overlapping windows (stride 1 below the window 2): each cell feeds several outputs.
template <typename Forward>
void check_avgpool_overlapping(const Forward& forward) {
  // (1+2+4+5)/4, (2+3+5+6)/4, (4+5+7+8)/4, (5+6+8+9)/4
  expect_avgpool_plane(forward, kAvgPoolPlane, PoolGeometry{1, 3, 3, 2, 1, 0}, {3.f, 4.f, 6.f, 7.f},
                       "on the 3x3 plane 1..9");
}

// Each plane (n, c) is pooled on its own: example 1, channel 1 of a [2, 2, 2, 2] batch is the
// fourth plane.
template <typename Forward>
void check_avgpool_planes(const Forward& forward) {
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i) x[static_cast<std::size_t>(i)] = static_cast<float>(i);
  std::vector<float> y(4 + 3, -999.f);
  const PoolGeometry g{2, 2, 2, 2, 2, 0};
  forward(x.data(), y.data(), 2, g);
  const float want[4] = {1.5f, 5.5f, 9.5f, 13.5f};
  EXPECT_TRUE(testkit::tensor_matches("y of " + g.str("average-pool") + " on a [2, 2, 2, 2] batch of 0..15",
                                      avgpool_output_shape(2, g), y.data(), want, testkit::kFloatEq));
  for (std::size_t i = 4; i < y.size(); ++i) EXPECT_EQ(y[i], -999.f) << "wrote past the 4 outputs";
}

// Many shapes against the reference in double: overlapping 3x3 stride 2 windows, padding 1 and 2,
// stride 1 (a cell in up to 9 windows), odd sizes, non-square planes, several channels and
// examples, and pool1 of `cnn`.
template <typename Forward>
void check_avgpool_on_many_shapes(const Forward& forward) {
  const struct {
    int B;
    PoolGeometry g;
  } cases[] = {{2, {3, 6, 8, 2, 2, 0}}, {2, {2, 7, 6, 3, 2, 0}}, {2, {2, 7, 7, 3, 2, 1}}, {1, {1, 5, 5, 2, 2, 0}},
               {3, {2, 6, 5, 2, 2, 1}}, {2, {2, 8, 9, 3, 1, 1}}, {2, {2, 6, 7, 3, 1, 2}}, {1, {3, 5, 6, 2, 1, 1}},
               {2, {4, 28, 28, 2, 2, 0}}};
  for (const auto& c : cases) {
    const PoolGeometry& g = c.g;
    const std::vector<double> x = testkit::random_vector(static_cast<std::size_t>(c.B) * g.in_size(), 91);
    const std::vector<double> want = reference::avgpool_forward(x, c.B, g);
    std::vector<double> y(want.size() + 9, 555.0);
    forward(x.data(), y.data(), c.B, g);
    ASSERT_TRUE(testkit::tensor_matches(
        "y of " + g.str("average-pool") + ", batch " + std::to_string(c.B), avgpool_output_shape(c.B, g), y.data(),
        want.data(), testkit::Tolerance{1e-12, 0},
        {{"dividing each window by the image cells it holds (the divisor is K*K whatever the padding)",
          reference::avgpool_forward(x, c.B, g, true)}}));
    for (std::size_t i = want.size(); i < y.size(); ++i)
      ASSERT_EQ(y[i], 555.0) << g.str("average-pool") << ": wrote past the " << want.size() << " outputs";
  }
}

// ---- backward ---------------------------------------------------------------------------------

// The loss is built on the reference forward pass, so these checks need the backward hole alone.
// Average pooling is linear: away from rounding the analytic and the numeric gradient agree.
template <typename Backward>
void check_avgpool_gradient(const Backward& backward, int B, const PoolGeometry& g) {
  auto x = testkit::random_vector(static_cast<std::size_t>(B) * g.in_size(), 93);
  const auto r = testkit::random_vector(static_cast<std::size_t>(B) * g.out_size(), 94);
  std::vector<double> dx(x.size(), 999.0);  // stale values must be cleared
  backward(r.data(), dx.data(), B, g);
  auto loss = [&] { return testkit::weighted_sum(reference::avgpool_forward(x, B, g), r); };
  GradCheckOptions opt;
  opt.tolerance = 1e-7;  // linear: only rounding (about 1e-10 here) separates the two
  opt.max_samples = 256;
  auto result = check_gradient("dx of " + g.str("average-pool") + ", batch " + std::to_string(B), x.data(),
                               {B, g.C, g.H, g.W}, dx.data(), loss, opt);
  planted::name_mistake(result, planted::avgpool_mistake(dx, r, B, g, 999.0));
  EXPECT_GRADIENT_OK(result);
}

/// The pool shapes of the backward gradient checks, in the order of the task's tests.
inline const PoolGeometry kAvgPoolGradientCases[] = {
    //  C  H  W  K  S  P
    {3, 6, 8, 2, 2, 0}, {2, 7, 5, 2, 2, 0}, {2, 9, 7, 3, 2, 0}, {2, 7, 8, 3, 2, 1},
    {2, 5, 6, 2, 2, 1}, {2, 5, 6, 2, 1, 0}, {2, 6, 5, 3, 1, 1}, {2, 5, 4, 3, 1, 2}};
inline const int kAvgPoolGradientBatches[] = {2, 2, 2, 3, 2, 2, 1, 2};

/// dx of `backward` on one-plane dy against `want`, and against what the classic slips give.
template <typename Backward>
void expect_avgpool_gradient_plane(const Backward& backward, const PoolGeometry& g, const std::vector<double>& dy,
                                   const std::vector<double>& want, const std::string& what) {
  std::vector<double> dx(static_cast<std::size_t>(g.in_size()), -1.0);  // a cell never written stays -1
  backward(dy.data(), dx.data(), 1, g);
  using planted::AvgPoolMistake;
  std::vector<testkit::KnownSlip> slips = {
      {"dy / (the image cells of the window) where dy / (K*K) belongs",
       planted::avgpool_input_gradient(dy, 1, g, AvgPoolMistake::DivideByImageCells)},
      {"dx[cell] = share, each window overwriting the last (a cell in several windows gets the sum, +=)",
       planted::avgpool_input_gradient(dy, 1, g, AvgPoolMistake::OverwriteInsteadOfSum)},
      {"the whole dy to each cell (not divided by K*K)", planted::avgpool_input_gradient(dy, 1, g, AvgPoolMistake::NoDivision)}};
  std::vector<double> kept = want;
  for (double& v : kept) v -= 1;
  slips.push_back({"adding to the -1 dx held, without zeroing it first", kept});
  std::vector<testkit::KnownSlip> named;  // a slip named only where it differs from the right answer
  for (const auto& s : slips)
    if (!planted::same_values(s.values, want)) named.push_back(s);
  EXPECT_TRUE(testkit::tensor_matches("dx of " + g.str("average-pool") + ", " + what, {{"ih", g.H}, {"iw", g.W}}, dx,
                                      want, testkit::kDoubleEq, named));
}

// Overlapping windows add up. 2x2 windows at stride 1 on a 3x3 plane, dy = 1, 2, 3, 4: the centre
// lies in all four windows and gets (1 + 2 + 3 + 4) / 4, each corner one window's share, each edge
// cell two.
template <typename Backward>
void check_avgpool_overlapping_gradients(const Backward& backward) {
  expect_avgpool_gradient_plane(backward, PoolGeometry{1, 3, 3, 2, 1, 0}, {1, 2, 3, 4},
                                {0.25, 0.75, 0.5, 1.0, 2.5, 1.5, 0.75, 1.75, 1.0}, "dy = 1, 2, 3, 4");
}

// Padding 1, 2x2 windows at stride 2 on a 3x3 plane: the windows hold 1, 2, 2 and 4 image cells,
// and each still hands every cell dy / 4 (K*K), never dy / (the cells it holds).
template <typename Backward>
void check_avgpool_padded_shares(const Backward& backward) {
  expect_avgpool_gradient_plane(backward, PoolGeometry{1, 3, 3, 2, 2, 1}, {4, 8, 12, 16}, {1, 2, 2, 3, 4, 4, 3, 4, 4},
                                "dy = 4, 8, 12, 16");
}

// Each plane (n, c) gets its own outputs' gradients: example 1, channel 1 of a [2, 2, 2, 2] batch
// starts at (1 * 2 + 1) * 4 = 12.
template <typename Backward>
void check_avgpool_gradient_planes(const Backward& backward) {
  const PoolGeometry g{2, 2, 2, 2, 2, 0};  // one output per plane
  const double dy[4] = {4, 8, 12, 16};
  double dx[16];
  backward(dy, dx, 2, g);
  std::vector<double> want(16);
  for (int i = 0; i < 16; ++i) want[static_cast<std::size_t>(i)] = dy[i / 4] / 4;
  EXPECT_TRUE(testkit::tensor_matches("dx of " + g.str("average-pool") + " on a [2, 2, 2, 2] batch, dy = 4, 8, 12, 16",
                                      {{"n", 2}, {"c", 2}, {"ih", 2}, {"iw", 2}}, dx, want.data(), testkit::kDoubleEq));
}

/// Every check of Task 2.8, forward then backward, in the order of the task's tests.
template <typename Forward, typename Backward>
void check_avgpool(const Forward& forward, const Backward& backward) {
  check_avgpool_by_hand(forward);
  check_avgpool_padded_divisor(forward);
  check_avgpool_overlapping(forward);
  check_avgpool_planes(forward);
  check_avgpool_on_many_shapes(forward);
  for (std::size_t i = 0; i < std::size(kAvgPoolGradientCases); ++i)
    check_avgpool_gradient(backward, kAvgPoolGradientBatches[i], kAvgPoolGradientCases[i]);
  check_avgpool_overlapping_gradients(backward);
  check_avgpool_padded_shares(backward);
  check_avgpool_gradient_planes(backward);
}

}  // namespace course::s02test
