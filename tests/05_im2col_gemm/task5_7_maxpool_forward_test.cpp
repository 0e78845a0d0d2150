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

// The arg-maxes as three slips would store them instead of the cell's index ih * W + iw in its
// H x W plane: the offset in the window, the index in the whole input tensor, and iw * H + ih.
std::vector<testkit::KnownSlip> argmax_slips(const std::vector<int>& argmax, const PoolCase& c) {
  const PoolGeometry& g = c.g;
  std::vector<double> in_window(argmax.size()), in_tensor(argmax.size()), swapped(argmax.size());
  for (std::size_t o = 0; o < argmax.size(); ++o) {
    const int ow = static_cast<int>(o % g.out_w()), oh = static_cast<int>(o / g.out_w() % g.out_h());
    const long plane = static_cast<long>(o / (static_cast<std::size_t>(g.out_h()) * g.out_w()));
    const int ih = argmax[o] / g.W, iw = argmax[o] % g.W;
    in_window[o] = (ih - (oh * g.S - g.P)) * g.K + (iw - (ow * g.S - g.P));
    in_tensor[o] = static_cast<double>(plane * g.H * g.W + argmax[o]);
    swapped[o] = iw * g.H + ih;
  }
  return {{"the offset in the window (dh * K + dw) instead of the index ih * W + iw in the plane", in_window},
          {"the index in the whole input tensor instead of in the cell's H x W plane", in_tensor},
          {"iw * H + ih (row and column swapped) instead of ih * W + iw", swapped}};
}

void check_against_stage02(const std::vector<float>& x, const PoolCase& c, const std::string& what) {
  const PoolOut got = pool_on_gpu(x, c);
  std::vector<float> y(got.y.size());
  std::vector<int> argmax(got.argmax.size());
  maxpool_forward(x.data(), y.data(), argmax.data(), c.B, c.g);
  EXPECT_TRUE(close("y, " + what + ", " + c.describe(), got.y, y, pool_output_shape(c), 0, 0));
  EXPECT_TRUE(close("argmax (the winning cell's index ih * W + iw in its plane), " + what + ", " + c.describe(),
                    got.argmax, argmax, pool_output_shape(c), 0, 0, argmax_slips(argmax, c)));
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
  EXPECT_TRUE(close("y", got.y, std::vector<float>{5, 8, 9, 2}, pool_output_shape(c), 0, 0));
  EXPECT_TRUE(close("argmax (the winning cell's index in the 4 x 4 plane)", got.argmax, std::vector<int>{1, 6, 12, 15},
                    pool_output_shape(c), 0, 0));
}
