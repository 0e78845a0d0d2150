// Task 2.8: average-pool backward. The loss is built on the reference forward
// pass (avgpool_reference.hpp), so these tests need the backward hole alone.
// Average pooling is linear: away from rounding the analytic and the numeric
// gradient agree everywhere, whatever the input.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "02_conv_pool/avgpool.hpp"
#include "avgpool_reference.hpp"
#include "course_test.hpp"

using namespace course;

namespace {
void check_avgpool_gradient(int B, const PoolGeometry& g) {
  auto x = testkit::random_vector(static_cast<std::size_t>(B) * g.in_size(), 93);
  const auto r = testkit::random_vector(static_cast<std::size_t>(B) * g.out_size(), 94);
  std::vector<double> dx(x.size(), 999.0);  // stale values must be cleared
  avgpool_backward(r.data(), dx.data(), B, g);
  auto loss = [&] { return testkit::weighted_sum(reference::avgpool_forward(x, B, g), r); };
  GradCheckOptions opt;
  opt.tolerance = 1e-7;  // linear: only rounding (about 1e-10 here) separates the two
  opt.max_samples = 256;
  auto result = check_gradient("dx of " + g.str("average-pool") + ", batch " + std::to_string(B), x.data(),
                               {B, g.C, g.H, g.W}, dx.data(), loss, opt);
  planted::name_mistake(result, planted::avgpool_mistake(dx, r, B, g));
  EXPECT_GRADIENT_OK(result);
}
}  // namespace

//                                                                          C  H  W  K  S  P
TEST(Task2_8_AvgPoolBackward, Window2Stride2) { check_avgpool_gradient(2, PoolGeometry{3, 6, 8, 2, 2, 0}); }
TEST(Task2_8_AvgPoolBackward, Window2Stride2OddSize) { check_avgpool_gradient(2, PoolGeometry{2, 7, 5, 2, 2, 0}); }
TEST(Task2_8_AvgPoolBackward, Window3Stride2Overlapping) { check_avgpool_gradient(2, PoolGeometry{2, 9, 7, 3, 2, 0}); }
TEST(Task2_8_AvgPoolBackward, Window3Stride2Padded) { check_avgpool_gradient(3, PoolGeometry{2, 7, 8, 3, 2, 1}); }
TEST(Task2_8_AvgPoolBackward, Window2Stride2Padded) { check_avgpool_gradient(2, PoolGeometry{2, 5, 6, 2, 2, 1}); }
TEST(Task2_8_AvgPoolBackward, Window2Stride1Overlapping) { check_avgpool_gradient(2, PoolGeometry{2, 5, 6, 2, 1, 0}); }
TEST(Task2_8_AvgPoolBackward, Window3Stride1Padded) { check_avgpool_gradient(1, PoolGeometry{2, 6, 5, 3, 1, 1}); }
TEST(Task2_8_AvgPoolBackward, Window3Stride1Padding2) { check_avgpool_gradient(2, PoolGeometry{2, 5, 4, 3, 1, 2}); }

// Overlapping windows add up. 2x2 windows at stride 1 on a 3x3 plane, dy = 1, 2,
// 3, 4: the centre lies in all four windows and gets (1 + 2 + 3 + 4) / 4, each
// corner one window's share, each edge cell two.
TEST(Task2_8_AvgPoolBackward, OverlappingWindowsAreSummed) {
  const PoolGeometry g{1, 3, 3, 2, 1, 0};
  const double dy[4] = {1, 2, 3, 4};
  double dx[9];
  for (double& v : dx) v = -1;
  avgpool_backward(dy, dx, 1, g);
  const double want[9] = {0.25, 0.75, 0.5,  //
                          1.0, 2.5, 1.5,    //
                          0.75, 1.75, 1.0};
  for (int i = 0; i < 9; ++i) EXPECT_DOUBLE_EQ(dx[i], want[i]) << "dx[" << i / 3 << "][" << i % 3 << "]";
}

// Padding 1, 2x2 windows at stride 2 on a 3x3 plane: the windows hold 1, 2, 2
// and 4 image cells, and each still hands every cell dy / 4 (K*K), never
// dy / (the cells it holds): the padded cells took their share, which falls
// off the image.
TEST(Task2_8_AvgPoolBackward, PaddedWindowsStillShareByKK) {
  const PoolGeometry g{1, 3, 3, 2, 2, 1};
  const double dy[4] = {4, 8, 12, 16};
  double dx[9];
  avgpool_backward(dy, dx, 1, g);
  const double want[9] = {1, 2, 2,  //
                          3, 4, 4,  //
                          3, 4, 4};
  for (int i = 0; i < 9; ++i)
    EXPECT_DOUBLE_EQ(dx[i], want[i]) << "dx[" << i / 3 << "][" << i % 3 << "] (dividing by the image cells gives 4, 4, "
                                        "4 / 6, 4, 4 / ...)";
}

// Each plane (n, c) gets its own outputs' gradients: example 1, channel 1 of a
// [2, 2, 2, 2] batch starts at (1 * 2 + 1) * 4 = 12.
TEST(Task2_8_AvgPoolBackward, EachPlaneOnItsOwn) {
  const PoolGeometry g{2, 2, 2, 2, 2, 0};  // one output per plane
  const double dy[4] = {4, 8, 12, 16};
  double dx[16];
  avgpool_backward(dy, dx, 2, g);
  for (int i = 0; i < 16; ++i) EXPECT_DOUBLE_EQ(dx[i], dy[i / 4] / 4) << "dx flat index " << i;
}
