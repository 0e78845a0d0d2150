// The checks of Tasks 2.4 (max-pool forward and its arg-max) and 2.5 (max-pool backward), taking the
// code under test as an argument: the task tests pass the lesson's functions, the slips catalog
// (slips_test.cpp) a learner's wrong copy, so both meet the very same messages.
//
//   forward(x, y, argmax, B, g)       as maxpool_forward, for float and double
//   backward(dy, argmax, dx, B, g)    as maxpool_backward, for double
#pragma once

#include <gtest/gtest.h>

#include <iterator>
#include <string>
#include <vector>

#include "02_conv_pool/pool.hpp"
#include "course_test.hpp"
#include "planted_mistakes.hpp"
#include "reference.hpp"
#include "tensor_check.hpp"

namespace course::s02test {

// ---- Task 2.4 ---------------------------------------------------------------------------------

/// The pool's output shape [B, C, Ho, Wo] with its axes named.
inline TensorShape pool_output_shape(int B, const PoolGeometry& g) {
  return {{"n", B}, {"c", g.C}, {"oh", g.out_h()}, {"ow", g.out_w()}};
}

/// y and argmax of max-pool forward on x ([B, C, H, W]) against the values and arg-max it must give,
/// and against what the classic slips give; `what` names the case. Checks the first size() entries.
template <typename T>
void expect_pool(const std::vector<T>& x, int B, const PoolGeometry& g, const T* y, const int* argmax,
                 const std::vector<double>& want_y, const std::vector<int>& want_arg, const std::string& what,
                 testkit::Tolerance tol) {
  const planted::PoolForwardSlips slips = planted::pool_forward_slips(std::vector<double>(x.begin(), x.end()), B, g);
  EXPECT_TRUE(testkit::tensor_matches("y of " + what, pool_output_shape(B, g), y, want_y.data(), tol, slips.y));
  EXPECT_TRUE(testkit::labels_match("arg-max (ih*W + iw in the plane) of " + what, pool_output_shape(B, g), argmax,
                                    want_arg.data(), slips.argmax));
}

// 2x2 windows, stride 2, on a 4x4 plane: each output is the largest of its block, and its arg-max
// is that cell's index ih * 4 + iw.
template <typename Forward>
void check_maxpool_by_hand(const Forward& forward) {
  const PoolGeometry g{1, 4, 4, 2, 2, 0};
  const std::vector<float> x = {1, 5, 2, 0,    //
                                3, 4, 8, 7,    //
                                -1, -2, 6, 9,  //
                                -3, 0, 9, 8};
  float y[4];
  int argmax[4];
  forward(x.data(), y, argmax, 1, g);
  // 9 appears twice in the last window: the first (row 2) wins.
  expect_pool(x, 1, g, y, argmax, {5, 8, 0, 9}, {1, 6, 13, 11}, "the hand example, " + g.str(), testkit::kExact);
}

// Ties: the first maximum in row-major window order (top row first, left to right).
template <typename Forward>
void check_maxpool_ties(const Forward& forward) {
  const PoolGeometry g{1, 2, 3, 2, 1, 0};  // two overlapping 2x2 windows on a 2x3 plane
  const std::vector<float> x = {1, 3, 3,  //
                                3, 3, 2};
  float y[2];
  int argmax[2];
  forward(x.data(), y, argmax, 1, g);
  // Window 0 holds 3 at (0,1), (1,0), (1,1); window 1 at (0,1), (0,2), (1,1): (0,1) comes first in both.
  expect_pool(x, 1, g, y, argmax, {3, 3}, {1, 1}, "two overlapping 2x2 windows of 3s on a 2x3 plane", testkit::kExact);
  const std::vector<float> flat = {2, 2, 2, 2};
  forward(flat.data(), y, argmax, 1, PoolGeometry{1, 2, 2, 2, 2, 0});
  expect_pool(flat, 1, PoolGeometry{1, 2, 2, 2, 2, 0}, y, argmax, {2}, {0},
              "a 2x2 window of equal values (the top-left cell wins)", testkit::kExact);
}

// Padding is not a zero that competes: with every value negative, a padded window still returns
// its largest image cell.
template <typename Forward>
void check_maxpool_padding_never_wins(const Forward& forward) {
  const PoolGeometry g{1, 3, 3, 2, 2, 1};  // windows start at -1: (3 + 2 - 2) / 2 + 1 = 2 a side
  const std::vector<float> x = {-5, -4, -3,  //
                                -2, -1, -6,  //
                                -7, -8, -9};
  float y[4];
  int argmax[4];
  forward(x.data(), y, argmax, 1, g);
  // Windows: rows {-1, 0} x cols {-1, 0} holds only x[0][0]; rows {-1, 0} x cols {1, 2};
  // rows {1, 2} x cols {-1, 0}; rows {1, 2} x cols {1, 2}.
  expect_pool(x, 1, g, y, argmax, {-5, -3, -2, -1}, {0, 2, 3, 4},
              "a negative 3x3 plane, " + g.str() + " (a padded cell must not win with 0)", testkit::kExact);
}

// Many shapes against the reference: overlapping 3x3 stride-2 windows, padding, odd sizes (the
// last row and column fall outside every 2x2 window of a 5x5 plane), non-square planes, several
// channels and examples.
template <typename Forward>
void check_maxpool_on_many_shapes(const Forward& forward) {
  const struct {
    int B;
    PoolGeometry g;
  } cases[] = {{2, {3, 6, 8, 2, 2, 0}}, {2, {2, 7, 6, 3, 2, 0}}, {2, {2, 7, 7, 3, 2, 1}},
               {1, {1, 5, 5, 2, 2, 0}}, {3, {2, 6, 5, 2, 2, 1}}, {2, {2, 8, 9, 3, 1, 1}},
               {2, {4, 28, 28, 2, 2, 0}}};
  for (const auto& c : cases) {
    const PoolGeometry& g = c.g;
    // A coarse grid of values, so ties happen and the tie rule is exercised too.
    std::vector<double> x = testkit::random_vector(c.B * g.in_size(), 51);
    for (auto& v : x) v = static_cast<int>(v * 4) / 4.0;
    std::vector<int> want_arg;
    const auto want = reference::maxpool_forward(x, c.B, g, &want_arg);
    std::vector<double> y(want.size() + 9, 555.0);
    std::vector<int> argmax(want.size() + 9, -7);
    forward(x.data(), y.data(), argmax.data(), c.B, g);
    const std::string what = g.str() + ", batch " + std::to_string(c.B);
    expect_pool(x, c.B, g, y.data(), argmax.data(), want, want_arg, what, testkit::kExact);
    if (::testing::Test::HasFailure()) return;  // one case's message is enough
    const std::string past = "the 9 guard cells after the " + std::to_string(want.size()) + " ";
    const std::vector<double> y_guard(9, 555.0);
    const std::vector<int> argmax_guard(9, -7);
    EXPECT_TRUE(testkit::tensor_matches(past + "outputs of " + what + " (written past the end?)",
                                        {{"past the end", 9}}, y.data() + want.size(), y_guard.data(), testkit::kExact));
    EXPECT_TRUE(testkit::labels_match(past + "arg-max entries of " + what + " (written past the end?)",
                                      {{"past the end", 9}}, argmax.data() + want.size(), argmax_guard.data()));
    if (::testing::Test::HasFailure()) return;
  }
}

// ---- Task 2.5 ---------------------------------------------------------------------------------

// The arg-max comes from the reference forward, so these checks need Task 2.5 alone; inputs are
// distinct values far apart, so no finite-difference step changes a window's winner.
template <typename Backward>
void check_maxpool_gradient(const Backward& backward, int B, const PoolGeometry& g) {
  auto x = reference::distinct_values(B * g.in_size(), 61);
  const auto r = testkit::random_vector(B * g.out_size(), 62);
  std::vector<int> argmax;
  reference::maxpool_forward(x, B, g, &argmax);
  std::vector<double> dx(x.size(), 999.0);  // stale values must be cleared
  backward(r.data(), argmax.data(), dx.data(), B, g);
  auto loss = [&] { return testkit::weighted_sum(reference::maxpool_forward(x, B, g), r); };
  GradCheckOptions opt;
  opt.tolerance = 1e-7;  // piecewise linear: away from ties only rounding (about 1e-9 here) separates the two
  opt.max_samples = 256;
  auto result = check_gradient("dx of " + g.str() + ", batch " + std::to_string(B), x.data(),
                               {{"n", B}, {"c", g.C}, {"ih", g.H}, {"iw", g.W}}, dx.data(), loss, opt);
  planted::name_mistake(result, planted::pool_mistake(dx, x, r, B, g, 999.0));
  EXPECT_GRADIENT_OK(result);
}

/// The pool shapes of Task 2.5's gradient checks, in the order of its tests.
inline const PoolGeometry kMaxPoolGradientCases[] = {
    //  C  H  W  K  S  P
    {3, 6, 8, 2, 2, 0}, {2, 7, 5, 2, 2, 0}, {2, 9, 7, 3, 2, 0}, {2, 7, 8, 3, 2, 1}, {2, 5, 6, 2, 2, 1}, {2, 6, 5, 3, 1, 1}};
inline const int kMaxPoolGradientBatches[] = {2, 2, 2, 3, 2, 1};

// Overlapping windows add up. A 3x3 plane with its maximum in the middle and 2x2 windows at
// stride 1: all four windows pick the middle cell, which gets the sum of their gradients; every
// other cell gets 0.
template <typename Backward>
void check_maxpool_overlapping_windows_sum(const Backward& backward) {
  const PoolGeometry g{1, 3, 3, 2, 1, 0};
  const int argmax[4] = {4, 4, 4, 4};  // the middle cell, (1, 1), won every window
  const double dy[4] = {1, 2, 3, 4};
  double dx[9];
  for (double& v : dx) v = -1;
  backward(dy, argmax, dx, 1, g);
  const double want[9] = {0, 0, 0, 0, 10, 0, 0, 0, 0};
  EXPECT_TRUE(testkit::tensor_matches("dx of 2x2 windows at stride 1 on a 3x3 plane, all four won by (1, 1), dy 1..4",
                                      {{"ih", 3}, {"iw", 3}}, dx, want, testkit::kDoubleEq,
                                      {{"dx[cell] = dy, each window overwriting the last (a cell that wins several "
                                        "windows gets the sum of their dy, +=)",
                                        {0, 0, 0, 0, 4, 0, 0, 0, 0}},
                                       {"leaving dx's -1 where no window sends a gradient (zero dx first)",
                                        {-1, -1, -1, -1, 10, -1, -1, -1, -1}},
                                       {"adding to dx's -1 without zeroing it first", {-1, -1, -1, -1, 9, -1, -1, -1, -1}}}));
}

// The arg-max indexes its own plane: example 1, channel 1 of a [2, 2, 2, 2] batch starts at
// (1 * 2 + 1) * 4 = 12.
template <typename Backward>
void check_maxpool_each_plane_uses_its_argmax(const Backward& backward) {
  const PoolGeometry g{2, 2, 2, 2, 2, 0};  // one output per plane
  const int argmax[4] = {3, 0, 2, 1};
  const double dy[4] = {1, 2, 3, 4};
  double dx[16];
  for (double& v : dx) v = -1;
  backward(dy, argmax, dx, 2, g);
  const double want[16] = {0, 0, 0, 1, 2, 0, 0, 0, 0, 0, 3, 0, 0, 4, 0, 0};
  EXPECT_TRUE(testkit::tensor_matches("dx of one 2x2 window per plane of a [2, 2, 2, 2] batch, arg-max 3, 0, 2, 1",
                                      {{"n", 2}, {"c", 2}, {"ih", 2}, {"iw", 2}}, dx, want, testkit::kDoubleEq,
                                      {{"every dy sent to plane 0 (the arg-max is a cell of its own plane (n, c), which "
                                        "starts at (n*C + c)*H*W in dx)",
                                        {2, 4, 3, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}}}));
}

/// Every check of Task 2.4, and of Task 2.5, in the order of the task's tests.
template <typename Forward>
void check_maxpool_forward(const Forward& forward) {
  check_maxpool_by_hand(forward);
  check_maxpool_ties(forward);
  check_maxpool_padding_never_wins(forward);
  check_maxpool_on_many_shapes(forward);
}

template <typename Backward>
void check_maxpool_backward(const Backward& backward) {
  for (std::size_t i = 0; i < std::size(kMaxPoolGradientCases); ++i)
    check_maxpool_gradient(backward, kMaxPoolGradientBatches[i], kMaxPoolGradientCases[i]);
  check_maxpool_overlapping_windows_sum(backward);
  check_maxpool_each_plane_uses_its_argmax(backward);
}

}  // namespace course::s02test
