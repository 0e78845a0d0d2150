// Task 2.4: max-pool forward, the recorded arg-max, and the two stated rules
// (ties go to the first maximum in row-major window order; padding never wins).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "02_conv_pool/pool.hpp"
#include "course_test.hpp"
#include "planted_mistakes.hpp"
#include "reference.hpp"
#include "tensor_check.hpp"

using namespace course;

namespace {
// The pool's output shape [B, C, Ho, Wo] with its axes named.
TensorShape output_shape(int B, const PoolGeometry& g) {
  return {{"n", B}, {"c", g.C}, {"oh", g.out_h()}, {"ow", g.out_w()}};
}

// maxpool_forward on x ([B, C, H, W]) against the values and arg-max it must give, and against what
// the classic slips give; `what` names the case. Checks only the first output size() entries.
template <typename T>
void expect_pool(const std::vector<T>& x, int B, const PoolGeometry& g, const T* y, const int* argmax,
                 const std::vector<double>& want_y, const std::vector<int>& want_arg, const std::string& what,
                 testkit::Tolerance tol) {
  const planted::PoolForwardSlips slips = planted::pool_forward_slips(std::vector<double>(x.begin(), x.end()), B, g);
  EXPECT_TRUE(testkit::tensor_matches("y of " + what, output_shape(B, g), y, want_y.data(), tol, slips.y));
  EXPECT_TRUE(testkit::labels_match("arg-max (ih*W + iw in the plane) of " + what, output_shape(B, g), argmax,
                                    want_arg.data(), slips.argmax));
}
}  // namespace

// 2x2 windows, stride 2, on a 4x4 plane: each output is the largest of its
// block, and its arg-max is that cell's index ih * 4 + iw.
TEST(Task2_4_MaxPoolForward, HandExample2x2Stride2) {
  const PoolGeometry g{1, 4, 4, 2, 2, 0};
  const std::vector<float> x = {1, 5, 2, 0,    //
                                3, 4, 8, 7,    //
                                -1, -2, 6, 9,  //
                                -3, 0, 9, 8};
  float y[4];
  int argmax[4];
  maxpool_forward(x.data(), y, argmax, 1, g);
  // 9 appears twice in the last window: the first (row 2) wins.
  expect_pool(x, 1, g, y, argmax, {5, 8, 0, 9}, {1, 6, 13, 11}, "the hand example, " + g.str(), testkit::kExact);
}

// Ties: the first maximum in row-major window order (top row first, left to right).
TEST(Task2_4_MaxPoolForward, TiesGoToTheFirstMaximumInRowMajorOrder) {
  const PoolGeometry g{1, 2, 3, 2, 1, 0};  // two overlapping 2x2 windows on a 2x3 plane
  const std::vector<float> x = {1, 3, 3,  //
                                3, 3, 2};
  float y[2];
  int argmax[2];
  maxpool_forward(x.data(), y, argmax, 1, g);
  // Window 0 holds 3 at (0,1), (1,0), (1,1); window 1 at (0,1), (0,2), (1,1): (0,1) comes first in both.
  expect_pool(x, 1, g, y, argmax, {3, 3}, {1, 1}, "two overlapping 2x2 windows of 3s on a 2x3 plane", testkit::kExact);
  const std::vector<float> flat = {2, 2, 2, 2};
  maxpool_forward(flat.data(), y, argmax, 1, PoolGeometry{1, 2, 2, 2, 2, 0});
  expect_pool(flat, 1, PoolGeometry{1, 2, 2, 2, 2, 0}, y, argmax, {2}, {0},
              "a 2x2 window of equal values (the top-left cell wins)", testkit::kExact);
}

// Padding is not a zero that competes: with every value negative, a padded
// window still returns its largest image cell.
TEST(Task2_4_MaxPoolForward, PaddedCellsNeverWin) {
  const PoolGeometry g{1, 3, 3, 2, 2, 1};  // windows start at -1: (3 + 2 - 2) / 2 + 1 = 2 a side
  const std::vector<float> x = {-5, -4, -3,  //
                                -2, -1, -6,  //
                                -7, -8, -9};
  float y[4];
  int argmax[4];
  maxpool_forward(x.data(), y, argmax, 1, g);
  // Windows: rows {-1, 0} x cols {-1, 0} holds only x[0][0]; rows {-1, 0} x cols {1, 2};
  // rows {1, 2} x cols {-1, 0}; rows {1, 2} x cols {1, 2}.
  expect_pool(x, 1, g, y, argmax, {-5, -3, -2, -1}, {0, 2, 3, 4},
              "a negative 3x3 plane, " + g.str() + " (a padded cell must not win with 0)", testkit::kExact);
}

// Many shapes against the reference: overlapping 3x3 stride-2 windows, padding,
// odd sizes (the last row and column fall outside every 2x2 window of a 5x5
// plane), non-square planes, several channels and examples.
TEST(Task2_4_MaxPoolForward, MatchesReferenceOnManyShapes) {
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
    maxpool_forward(x.data(), y.data(), argmax.data(), c.B, g);
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
