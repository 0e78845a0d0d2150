// Task 2.5: max-pool backward. The arg-max comes from the reference forward
// (reference.hpp), so these tests need Task 2.5 alone; inputs are distinct
// values far apart, so no finite-difference step changes a window's winner.
#include <gtest/gtest.h>

#include <vector>

#include "02_conv_pool/pool.hpp"
#include "course_test.hpp"
#include "planted_mistakes.hpp"
#include "reference.hpp"

using namespace course;

namespace {
void check_pool_gradient(int B, const PoolGeometry& g) {
  auto x = reference::distinct_values(B * g.in_size(), 61);
  const auto r = testkit::random_vector(B * g.out_size(), 62);
  std::vector<int> argmax;
  reference::maxpool_forward(x, B, g, &argmax);
  std::vector<double> dx(x.size(), 999.0);  // stale values must be cleared
  maxpool_backward(r.data(), argmax.data(), dx.data(), B, g);
  auto loss = [&] { return testkit::weighted_sum(reference::maxpool_forward(x, B, g), r); };
  GradCheckOptions opt;
  opt.tolerance = 1e-7;  // piecewise linear: away from ties only rounding (about 1e-9 here) separates the two
  opt.max_samples = 256;
  auto result = check_gradient("dx of " + g.str() + ", batch " + std::to_string(B), x.data(), {B, g.C, g.H, g.W},
                               dx.data(), loss, opt);
  planted::name_mistake(result, planted::pool_mistake(dx, x, r, B, g));
  EXPECT_GRADIENT_OK(result);
}
}  // namespace

//                                                                    C  H  W  K  S  P
TEST(Task2_5_MaxPoolBackward, Window2Stride2) { check_pool_gradient(2, PoolGeometry{3, 6, 8, 2, 2, 0}); }
TEST(Task2_5_MaxPoolBackward, Window2Stride2OddSize) { check_pool_gradient(2, PoolGeometry{2, 7, 5, 2, 2, 0}); }
TEST(Task2_5_MaxPoolBackward, Window3Stride2Overlapping) { check_pool_gradient(2, PoolGeometry{2, 9, 7, 3, 2, 0}); }
TEST(Task2_5_MaxPoolBackward, Window3Stride2Padded) { check_pool_gradient(3, PoolGeometry{2, 7, 8, 3, 2, 1}); }
TEST(Task2_5_MaxPoolBackward, Window2Stride2Padded) { check_pool_gradient(2, PoolGeometry{2, 5, 6, 2, 2, 1}); }
TEST(Task2_5_MaxPoolBackward, Window3Stride1Padded) { check_pool_gradient(1, PoolGeometry{2, 6, 5, 3, 1, 1}); }

// Overlapping windows add up. A 3x3 plane with its maximum in the middle and
// 2x2 windows at stride 1: all four windows pick the middle cell, which gets
// the sum of their gradients; every other cell gets 0.
TEST(Task2_5_MaxPoolBackward, OverlappingWindowsAreSummed) {
  const PoolGeometry g{1, 3, 3, 2, 1, 0};
  const int argmax[4] = {4, 4, 4, 4};  // the middle cell, (1, 1), won every window
  const double dy[4] = {1, 2, 3, 4};
  double dx[9];
  for (double& v : dx) v = -1;
  maxpool_backward(dy, argmax, dx, 1, g);
  for (int i = 0; i < 9; ++i) EXPECT_DOUBLE_EQ(dx[i], i == 4 ? 10.0 : 0.0) << "dx[" << i / 3 << "][" << i % 3 << "]";
}

// The arg-max indexes its own plane: example 1, channel 1 of a [2, 2, 2, 2]
// batch starts at (1 * 2 + 1) * 4 = 12.
TEST(Task2_5_MaxPoolBackward, EachPlaneUsesItsOwnArgmax) {
  const PoolGeometry g{2, 2, 2, 2, 2, 0};  // one output per plane
  const int argmax[4] = {3, 0, 2, 1};
  const double dy[4] = {1, 2, 3, 4};
  double dx[16];
  maxpool_backward(dy, argmax, dx, 2, g);
  const double want[16] = {0, 0, 0, 1, 2, 0, 0, 0, 0, 0, 3, 0, 0, 4, 0, 0};
  for (int i = 0; i < 16; ++i) EXPECT_DOUBLE_EQ(dx[i], want[i]) << "dx flat index " << i;
}
