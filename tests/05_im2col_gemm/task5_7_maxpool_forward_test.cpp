// Task 5.7: max-pool forward on the GPU against stage 02's CPU layer on the
// same float inputs. Finding a maximum involves no rounding and both sides
// keep the first maximum, so the values and the arg-maxes must be identical.
#include <gtest/gtest.h>

#include <vector>

#include "02_conv_pool/pool.hpp"
#include "05_im2col_gemm/pool_gpu.hpp"
#include "pool_cases.hpp"
#include "stage05_support.hpp"

using namespace course;
using namespace course::s05test;

namespace {
struct PoolOut {
  std::vector<float> y;
  std::vector<int> argmax;
};

PoolOut pool_on_gpu(const std::vector<float>& x, const PoolCase& c) {
  const DeviceBuffer<float> dx = to_device(x);
  const std::size_t n = static_cast<std::size_t>(c.B) * c.g.out_size();
  DeviceBuffer<float> y = poisoned<float>(n);
  DeviceBuffer<int> argmax = poisoned<int>(n);
  maxpool_forward_gpu(dx.get(), y.get(), argmax.get(), c.B, c.g);
  return {to_host(y), to_host(argmax)};
}

void check_against_stage02(const std::vector<float>& x, const PoolCase& c, const std::string& what) {
  const PoolOut got = pool_on_gpu(x, c);
  std::vector<float> y(got.y.size());
  std::vector<int> argmax(got.argmax.size());
  maxpool_forward(x.data(), y.data(), argmax.data(), c.B, c.g);
  EXPECT_TRUE(close("y, " + what + ", " + c.describe(), got.y, y, pool_output_shape(c), 0, 0));
  EXPECT_TRUE(close("argmax, " + what + ", " + c.describe(), got.argmax, argmax, pool_output_shape(c), 0, 0));
}
}  // namespace

TEST(Task5_7_MaxPoolForward, MatchesStage02OnEveryShape) {
  SKIP_WITHOUT_GPU();
  for (const PoolCase& c : pool_cases())
    check_against_stage02(random_floats(static_cast<std::size_t>(c.B) * c.g.in_size(), 71), c, "random input");
}

// Ties: on a plane of equal values the first cell of each window (cut to the
// image) wins, never a padded one; with only two levels, many windows tie.
TEST(Task5_7_MaxPoolForward, TiesGoToTheFirstMaximumAndPaddingNeverWins) {
  SKIP_WITHOUT_GPU();
  for (const PoolCase& c : pool_cases()) {
    const std::size_t n = static_cast<std::size_t>(c.B) * c.g.in_size();
    check_against_stage02(std::vector<float>(n, -2.f), c, "every value -2");
    std::vector<float> two_levels = random_floats(n, 72);
    for (float& v : two_levels) v = v < 0 ? -1.f : 1.f;
    check_against_stage02(two_levels, c, "values -1 and 1");
  }
}

// 2x2 windows, stride 2 on a 4x4 plane, worked by hand.
TEST(Task5_7_MaxPoolForward, HandExample) {
  SKIP_WITHOUT_GPU();
  const PoolCase c{1, {1, 4, 4, 2, 2, 0}};
  const PoolOut got = pool_on_gpu({1, 5, 2, 0,    //
                                   3, 4, 8, 7,    //
                                   0, 0, 1, 1,    //
                                   9, 0, 1, 2},
                                  c);
  EXPECT_TRUE(close("y", got.y, std::vector<float>{5, 8, 9, 2}, {2, 2}, 0, 0));
  EXPECT_TRUE(close("argmax", got.argmax, std::vector<int>{1, 6, 12, 15}, {2, 2}, 0, 0));
}
