// Task 2.4: max-pool forward, the recorded arg-max, and the two stated rules
// (ties go to the first maximum in row-major window order; padding never wins).
#include <gtest/gtest.h>

#include <vector>

#include "02_conv_pool/pool.hpp"
#include "course_test.hpp"
#include "reference.hpp"

using namespace course;

// 2x2 windows, stride 2, on a 4x4 plane: each output is the largest of its
// block, and its arg-max is that cell's index ih * 4 + iw.
TEST(Task2_4_MaxPoolForward, HandExample2x2Stride2) {
  const PoolGeometry g{1, 4, 4, 2, 2, 0};
  const float x[16] = {1, 5, 2, 0,    //
                       3, 4, 8, 7,    //
                       -1, -2, 6, 9,  //
                       -3, 0, 9, 8};
  float y[4];
  int argmax[4];
  maxpool_forward(x, y, argmax, 1, g);
  const float want_y[4] = {5, 8, 0, 9};
  const int want_arg[4] = {1, 6, 13, 11};  // 9 appears twice in the last window: the first (row 2) wins
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(y[i], want_y[i]) << "output " << i;
    EXPECT_EQ(argmax[i], want_arg[i]) << "arg-max of output " << i;
  }
}

// Ties: the first maximum in row-major window order (top row first, left to right).
TEST(Task2_4_MaxPoolForward, TiesGoToTheFirstMaximumInRowMajorOrder) {
  const PoolGeometry g{1, 2, 3, 2, 1, 0};  // two overlapping 2x2 windows on a 2x3 plane
  const float x[6] = {1, 3, 3,  //
                      3, 3, 2};
  float y[2];
  int argmax[2];
  maxpool_forward(x, y, argmax, 1, g);
  EXPECT_EQ(y[0], 3.f);
  EXPECT_EQ(argmax[0], 1) << "window 0 holds 3 at (0,1), (1,0), (1,1): (0,1) comes first";
  EXPECT_EQ(y[1], 3.f);
  EXPECT_EQ(argmax[1], 1) << "window 1 holds 3 at (0,1), (0,2), (1,1): (0,1) comes first";
  const float flat[4] = {2, 2, 2, 2};
  maxpool_forward(flat, y, argmax, 1, PoolGeometry{1, 2, 2, 2, 2, 0});
  EXPECT_EQ(argmax[0], 0) << "all equal: the top-left cell wins";
}

// Padding is not a zero that competes: with every value negative, a padded
// window still returns its largest image cell.
TEST(Task2_4_MaxPoolForward, PaddedCellsNeverWin) {
  const PoolGeometry g{1, 3, 3, 2, 2, 1};  // windows start at -1: (3 + 2 - 2) / 2 + 1 = 2 a side
  const float x[9] = {-5, -4, -3,  //
                      -2, -1, -6,  //
                      -7, -8, -9};
  float y[4];
  int argmax[4];
  maxpool_forward(x, y, argmax, 1, g);
  // Windows: rows {-1, 0} x cols {-1, 0} holds only x[0][0]; rows {-1, 0} x cols {1, 2};
  // rows {1, 2} x cols {-1, 0}; rows {1, 2} x cols {1, 2}.
  const float want_y[4] = {-5, -3, -2, -1};
  const int want_arg[4] = {0, 2, 3, 4};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(y[i], want_y[i]) << "output " << i << " (a padded cell must not win with 0)";
    EXPECT_EQ(argmax[i], want_arg[i]) << "arg-max of output " << i;
  }
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
    for (std::size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(y[i], want[i]) << g.str() << ", batch " << c.B << ": output " << i;
      ASSERT_EQ(argmax[i], want_arg[i]) << g.str() << ", batch " << c.B << ": arg-max of output " << i;
    }
    for (std::size_t i = want.size(); i < y.size(); ++i) {
      ASSERT_EQ(y[i], 555.0) << g.str() << ": wrote past the " << want.size() << " outputs";
      ASSERT_EQ(argmax[i], -7) << g.str() << ": wrote past the " << want.size() << " arg-max entries";
    }
  }
}
