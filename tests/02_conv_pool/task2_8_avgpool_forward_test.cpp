// Task 2.8: average-pool forward, against examples worked by hand (padded cells
// count as zeros: the divisor is K*K everywhere) and a plain reference.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "02_conv_pool/avgpool.hpp"
#include "avgpool_reference.hpp"
#include "course_test.hpp"

using namespace course;

namespace {
// The 3x3 plane of the hand examples:
//
//     x = 1 2 3
//         4 5 6
//         7 8 9
const std::vector<float> kPlane = {1, 2, 3, 4, 5, 6, 7, 8, 9};

std::vector<float> pool(const std::vector<float>& x, const PoolGeometry& g) {
  std::vector<float> y(static_cast<std::size_t>(g.out_size()), -999.f);
  avgpool_forward(x.data(), y.data(), 1, g);
  return y;
}

void expect_plane(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_FLOAT_EQ(got[i], want[i]) << what << ", output " << i;
}
}  // namespace

// 2x2 windows, stride 2, on a 4x4 plane: the mean of each block.
TEST(Task2_8_AvgPoolForward, HandExample2x2Stride2) {
  const std::vector<float> x = {1, 5, 2, 0,    //
                                3, 4, 8, 7,    //
                                -1, -2, 6, 9,  //
                                -3, 0, 9, 8};
  // (1+5+3+4)/4, (2+0+8+7)/4, (-1-2-3+0)/4, (6+9+9+8)/4
  expect_plane(pool(x, PoolGeometry{1, 4, 4, 2, 2, 0}), {3.25f, 4.25f, -1.5f, 8.f}, "2x2 stride 2 on 4x4");
}

// Padding 1 with 2x2 windows at stride 2: the windows start at row and column -1
// and 1. The corner window holds one image cell, the edge windows two: each still
// divides by K*K = 4 (padded cells count as zeros), not by the cells it holds.
TEST(Task2_8_AvgPoolForward, PaddedCellsCountAsZerosInTheDivisor) {
  // {1}/4, {2, 3}/4, {4, 7}/4, {5, 6, 8, 9}/4
  expect_plane(pool(kPlane, PoolGeometry{1, 3, 3, 2, 2, 1}), {0.25f, 1.25f, 2.75f, 7.f},
               "2x2 stride 2 pad 1 on 3x3 (dividing by the image cells would give 1, 2.5, 5.5, 7)");
  // 3x3 windows at stride 1 with padding 2 (P = K - 1, the most the course allows):
  // 5x5 outputs, the corners hold a single image cell, the centre all nine.
  const auto y = pool(kPlane, PoolGeometry{1, 3, 3, 3, 1, 2});
  ASSERT_EQ(y.size(), 25u);
  EXPECT_FLOAT_EQ(y[0], 1.f / 9) << "top-left window: rows and columns -2..0 hold x[0][0] alone";
  EXPECT_FLOAT_EQ(y[4], 3.f / 9) << "top-right window holds x[0][2] alone";
  EXPECT_FLOAT_EQ(y[12], 45.f / 9) << "the centre window holds the whole plane";
  EXPECT_FLOAT_EQ(y[24], 9.f / 9) << "bottom-right window holds x[2][2] alone";
}

// Overlapping windows (stride 1 below the window 2): each cell feeds several outputs.
TEST(Task2_8_AvgPoolForward, OverlappingWindowsStride1) {
  // (1+2+4+5)/4, (2+3+5+6)/4, (4+5+7+8)/4, (5+6+8+9)/4
  expect_plane(pool(kPlane, PoolGeometry{1, 3, 3, 2, 1, 0}), {3.f, 4.f, 6.f, 7.f}, "2x2 stride 1 on 3x3");
}

// Each plane (n, c) is pooled on its own: example 1, channel 1 of a [2, 2, 2, 2]
// batch is the fourth plane.
TEST(Task2_8_AvgPoolForward, EachPlaneOnItsOwn) {
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i) x[static_cast<std::size_t>(i)] = static_cast<float>(i);
  std::vector<float> y(4 + 3, -999.f);
  avgpool_forward(x.data(), y.data(), 2, PoolGeometry{2, 2, 2, 2, 2, 0});
  const float want[4] = {1.5f, 5.5f, 9.5f, 13.5f};
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(y[static_cast<std::size_t>(i)], want[i]) << "plane " << i;
  for (std::size_t i = 4; i < y.size(); ++i) EXPECT_EQ(y[i], -999.f) << "wrote past the 4 outputs";
}

// Many shapes against the reference in double: overlapping 3x3 stride 2 windows,
// padding 1 and 2, stride 1 (a cell in up to 9 windows), odd sizes (the last row
// and column of a 5x5 plane lie in no 2x2 window), non-square planes, several
// channels and examples, and pool1 of `cnn`.
TEST(Task2_8_AvgPoolForward, MatchesReferenceOnManyShapes) {
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
    avgpool_forward(x.data(), y.data(), c.B, g);
    for (std::size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(y[i], want[i], 1e-12) << g.str("average-pool") << ", batch " << c.B << ": output " << i;
    for (std::size_t i = want.size(); i < y.size(); ++i)
      ASSERT_EQ(y[i], 555.0) << g.str("average-pool") << ": wrote past the " << want.size() << " outputs";
  }
}
