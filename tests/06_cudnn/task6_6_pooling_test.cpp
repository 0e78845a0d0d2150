// Task 6.6: cuDNN's max-pool forward and backward against stage 02's
// maxpool_forward and maxpool_backward, for the shapes of stage 02's tests.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../02_conv_pool/reference.hpp"
#include "02_conv_pool/pool.hpp"
#include "06_cudnn/pool_cudnn.hpp"
#include "course_test.hpp"
#include "s06_support.hpp"

using namespace course;
using namespace course::s06test;

namespace {

// Stage 02's forward and backward shapes: overlapping windows, padding, odd sizes.
//                                C  H  W  K  S  P
const PoolCase kCases[] = {{2, {3, 6, 8, 2, 2, 0}}, {2, {2, 7, 6, 3, 2, 0}}, {2, {2, 7, 7, 3, 2, 1}},
                           {1, {1, 5, 5, 2, 2, 0}}, {3, {2, 6, 5, 2, 2, 1}}, {2, {2, 8, 9, 3, 1, 1}},
                           {2, {2, 7, 5, 2, 2, 0}}, {2, {2, 9, 7, 3, 2, 0}}, {3, {2, 7, 8, 3, 2, 1}},
                           {2, {2, 5, 6, 2, 2, 1}}, {1, {2, 6, 5, 3, 1, 1}}, {64, {16, 28, 28, 2, 2, 0}}};

std::string describe(const PoolCase& c) { return c.g.str() + ", batch " + std::to_string(c.B); }

// Task 6.6's max pool, its descriptors set without Task 6.2, for run_pool().
const PoolCalls kMaxPool{test_pool_descriptors, maxpool_forward_cudnn, maxpool_backward_cudnn};

// Distinct values (no ties, so one arg-max per window) run through stage 02's
// layer and cuDNN's. The maximum is a value of x itself, so the forward pass
// agrees exactly; dx adds at most K*K gradients per cell, in float.
void check_pool(const PoolCase& c) {
  S06_SKIP_WITHOUT_GPU();
  const PoolGeometry& g = c.g;
  const auto x = as_float_values(reference::distinct_values(c.B * g.in_size(), 61));
  const auto dy = as_float_values(testkit::random_vector(c.B * g.out_size(), 62));
  const auto [got_y, got_dx] = run_pool(kMaxPool, c, x, dy, -99.f);

  std::vector<double> want_y(got_y.size()), want_dx(got_dx.size());
  std::vector<int> argmax(got_y.size());
  maxpool_forward(x.data(), want_y.data(), argmax.data(), c.B, g);
  maxpool_backward(dy.data(), argmax.data(), want_dx.data(), c.B, g);
  EXPECT_TRUE(all_close("y of " + describe(c), got_y, want_y,
                        {{"n", c.B}, {"c", g.C}, {"h", g.out_h()}, {"w", g.out_w()}}, 0.0, 0.0));
  EXPECT_TRUE(
      all_close("dx of " + describe(c), got_dx, want_dx, {{"n", c.B}, {"c", g.C}, {"h", g.H}, {"w", g.W}}, 1e-6, 1e-6));
}

}  // namespace

TEST(Task6_6_MaxPool, MatchesStage02OnEveryShape) {
  for (const PoolCase& c : kCases) {
    SCOPED_TRACE(describe(c));
    check_pool(c);
  }
}

// Padding is not a zero that competes: with every value negative, each padded
// window still returns its largest image cell, and its gradient lands there.
TEST(Task6_6_MaxPool, PaddedCellsNeverWin) {
  S06_SKIP_WITHOUT_GPU();
  const PoolCase c{1, {1, 3, 3, 2, 2, 1}};
  const auto [y, dx] = run_pool(kMaxPool, c, {-5, -4, -3, -2, -1, -6, -7, -8, -9}, {1, 2, 3, 4}, 0.f);
  EXPECT_TRUE(all_close("y", y, {-5, -3, -2, -1}, {{"h", 2}, {"w", 2}}, 0, 0,
                        {{"padded cells competing as 0 (a padded cell won with 0)", {0, 0, 0, -1}}}));
  EXPECT_TRUE(all_close("dx", dx, {1, 0, 2, 3, 4, 0, 0, 0, 0}, {{"h", 3}, {"w", 3}}, 0, 0));
}

// Overlapping windows add up: the middle of a 3x3 plane wins all four 2x2
// windows at stride 1 and receives the sum of their gradients.
TEST(Task6_6_MaxPool, OverlappingWindowsAreSummed) {
  S06_SKIP_WITHOUT_GPU();
  const PoolCase c{1, {1, 3, 3, 2, 1, 0}};
  const auto [y, dx] = run_pool(kMaxPool, c, {1, 2, 3, 4, 9, 5, 6, 7, 8}, {1, 2, 3, 4}, 0.f);
  EXPECT_TRUE(all_close("y", y, {9, 9, 9, 9}, {{"h", 2}, {"w", 2}}, 0, 0));
  EXPECT_TRUE(all_close("dx (the centre wins all four windows: 1 + 2 + 3 + 4)", dx,
                        {0, 0, 0, 0, 10, 0, 0, 0, 0}, {{"h", 3}, {"w", 3}}, 0, 0,
                        {{"the last window's gradient alone (written, not added)", {0, 0, 0, 0, 4, 0, 0, 0, 0}},
                         {"the first window's gradient alone (written, not added)", {0, 0, 0, 0, 1, 0, 0, 0, 0}}}));
}
