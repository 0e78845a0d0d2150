// Task 2.5: max-pool backward. The arg-max comes from the reference forward
// (reference.hpp), so these tests need Task 2.5 alone; inputs are distinct
// values far apart, so no finite-difference step changes a window's winner.
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
  auto result = check_gradient("dx of " + g.str() + ", batch " + std::to_string(B), x.data(),
                               {{"n", B}, {"c", g.C}, {"ih", g.H}, {"iw", g.W}}, dx.data(), loss, opt);
  planted::name_mistake(result, planted::pool_mistake(dx, x, r, B, g, 999.0));
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

// The arg-max indexes its own plane: example 1, channel 1 of a [2, 2, 2, 2]
// batch starts at (1 * 2 + 1) * 4 = 12.
TEST(Task2_5_MaxPoolBackward, EachPlaneUsesItsOwnArgmax) {
  const PoolGeometry g{2, 2, 2, 2, 2, 0};  // one output per plane
  const int argmax[4] = {3, 0, 2, 1};
  const double dy[4] = {1, 2, 3, 4};
  double dx[16];
  for (double& v : dx) v = -1;
  maxpool_backward(dy, argmax, dx, 2, g);
  const double want[16] = {0, 0, 0, 1, 2, 0, 0, 0, 0, 0, 3, 0, 0, 4, 0, 0};
  EXPECT_TRUE(testkit::tensor_matches("dx of one 2x2 window per plane of a [2, 2, 2, 2] batch, arg-max 3, 0, 2, 1",
                                      {{"n", 2}, {"c", 2}, {"ih", 2}, {"iw", 2}}, dx, want, testkit::kDoubleEq,
                                      {{"every dy sent to plane 0 (the arg-max is a cell of its own plane (n, c), which "
                                        "starts at (n*C + c)*H*W in dx)",
                                        {2, 4, 3, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}}}));
}
