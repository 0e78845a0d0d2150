// Task 5.8: max-pool backward on the GPU against stage 02's CPU layer, given
// the same arg-maxes (from stage 02's plain test reference, so that this
// task's tests need no other task of this stage). Each input cell adds the
// gradients of the windows it won in the same order on both sides, so dx must
// be identical, overlapping windows included.
#include <gtest/gtest.h>

#include <vector>

#include "../02_conv_pool/reference.hpp"
#include "02_conv_pool/pool.hpp"
#include "05_im2col_gemm/pool_gpu.hpp"
#include "pool_cases.hpp"
#include "stage05_support.hpp"

using namespace course;
using namespace course::s05test;

namespace {
void check_backward(const std::vector<float>& x, const PoolCase& c, const std::string& what) {
  std::vector<int> argmax;
  reference::maxpool_forward(to_double(x), c.B, c.g, &argmax);
  const std::vector<float> dy = random_floats(argmax.size(), 81);
  const DeviceBuffer<float> d_dy = to_device(dy);
  const DeviceBuffer<int> d_argmax = to_device(argmax);
  DeviceBuffer<float> dx = poisoned<float>(x.size());
  maxpool_backward_gpu(d_dy.get(), d_argmax.get(), dx.get(), c.B, c.g);
  const std::vector<float> got = to_host(dx);
  std::vector<float> want(x.size());
  maxpool_backward(dy.data(), argmax.data(), want.data(), c.B, c.g);
  EXPECT_TRUE(close("dx, " + what + ", " + c.describe(), got, want, pool_input_shape(c), 0, 0));
}
}  // namespace

TEST(Task5_8_MaxPoolBackward, MatchesStage02OnEveryShape) {
  SKIP_WITHOUT_GPU();
  for (const PoolCase& c : pool_cases()) {
    const std::vector<double> v = reference::distinct_values(static_cast<std::size_t>(c.B) * c.g.in_size(), 82);
    check_backward(std::vector<float>(v.begin(), v.end()), c, "distinct values");
  }
}

// Equal values: every window's arg-max is its first cell, so with stride 1
// one cell wins up to K*K windows and must receive the sum of all of them.
TEST(Task5_8_MaxPoolBackward, ACellThatWinsSeveralWindowsGetsTheirSum) {
  SKIP_WITHOUT_GPU();
  for (const PoolCase& c : pool_cases())
    check_backward(std::vector<float>(static_cast<std::size_t>(c.B) * c.g.in_size(), 0.5f), c, "every value 0.5");
}

// 2x2 windows, stride 1 on a 3x3 plane whose centre is the largest: it wins
// all four windows and gets 1 + 2 + 3 + 4; every other cell gets 0.
TEST(Task5_8_MaxPoolBackward, HandExample) {
  SKIP_WITHOUT_GPU();
  const PoolGeometry g{1, 3, 3, 2, 1, 0};
  const DeviceBuffer<float> dy = to_device(std::vector<float>{1, 2, 3, 4});
  const DeviceBuffer<int> argmax = to_device(std::vector<int>{4, 4, 4, 4});
  DeviceBuffer<float> dx = poisoned<float>(9);
  maxpool_backward_gpu(dy.get(), argmax.get(), dx.get(), 1, g);
  EXPECT_TRUE(close("dx", to_host(dx), std::vector<float>{0, 0, 0, 0, 10, 0, 0, 0, 0}, {{"h", 3}, {"w", 3}}, 0, 0));
}
