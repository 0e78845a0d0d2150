// Task 8.1: the fused conv block forward pass (conv + bias + activation + max-pool)
// against stages 01 and 02's layers run one after another in double, over the
// shape grid of s08_support.hpp, each with two tilings: the planner aiming at
// kTargetBlocks (few examples per block) and at 1 block (as many examples per
// block as its tile holds).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "08_fused/fused_kernels.hpp"
#include "s08_support.hpp"

using namespace course;
using namespace course::s08test;

namespace {

void check_forward(const ConvBlockCase& c, int target_blocks) {
  const ConvBlockShape s = c.shape();
  const ConvBlockInputs in(c, 81);
  const DeviceBuffer<float> x = gputest::to_device(in.x), w = gputest::to_device(in.w), b = gputest::to_device(in.b);
  const std::size_t out = static_cast<std::size_t>(c.B) * s.F * s.Hq * s.Wq;
  DeviceBuffer<float> y = poisoned<float>(out);
  DeviceBuffer<unsigned char> argmax = poisoned<unsigned char>(out);
  const ConvForwardArgs a =
      plan_conv_block_forward(s, c.B, x.get(), w.get(), b.get(), y.get(), argmax.get(), target_blocks);
  conv_block_forward_gpu(a);
  const std::vector<float> got = to_host(y);
  const std::vector<unsigned char> got_window = to_host(argmax);

  const ConvBlockReference ref(c, in, /*backward=*/false);
  const std::string context = c.describe() + ", " + std::to_string(a.blocks) + " blocks of " +
                              std::to_string(a.images) + " examples";
  const double atol = sum_atol(s.C * s.K * s.K + 1);
  const TensorShape y_shape{{"n", c.B}, {"c", s.F}, {"h", s.Hq}, {"w", s.Wq}};
  EXPECT_TRUE(close("y (" + context + ")", got, ref.y, y_shape, atol));
  if (s.Q == 1) return;
  // The arg-max must be the reference's wherever the window's two largest values are
  // further apart than the two sides' rounding; within it, either cell is right.
  long differ = 0, first = -1;
  for (std::size_t o = 0; o < out; ++o)
    if (got_window[o] != ref.window[o] && ref.gap[o] > 2 * (atol + kSumRtol * std::fabs(ref.y[o]))) {
      ++differ;
      if (first < 0) first = static_cast<long>(o);
    }
  EXPECT_EQ(differ, 0) << "argmax (" << context << "), shape " << y_shape.str() << ": " << differ << " of " << out
                       << " windows name another maximum (away from near-ties); the first at "
                       << y_shape.where(static_cast<std::size_t>(std::max(first, 0L))) << ": expected offset "
                       << (first >= 0 ? int(ref.window[first]) : -1) << ", actual "
                       << (first >= 0 ? int(got_window[first]) : -1) << " (dh * Q + dw in the " << s.Q << " x " << s.Q
                       << " window)";
}

}  // namespace

// The shape grid at both tilings, and the small shapes for the sanitizer runs (s08_support.hpp).
S08_CONV_BLOCK_GRID_TESTS(Task8_1_ConvBlockForward, check_forward)

// Ties go to the first maximum of the window in row-major order, as in stage 02:
// with every input 0 and the bias 0, a ReLU block outputs 0 with offset 0 everywhere,
// and with a negative bias too (relu of a negative is 0: four equal zeros).
TEST(Task8_1_ConvBlockForward, TiesGoToTheFirstCellOfTheWindow) {
  SKIP_WITHOUT_GPU();
  const ConvBlockShape s = make_conv_block_shape(2, 6, 6, 3, 3, 1, 2, FusedAct::ReLU);
  const int B = 2;
  const DeviceBuffer<float> x = gputest::to_device(std::vector<float>(static_cast<std::size_t>(B) * 2 * 36, 0.f));
  const DeviceBuffer<float> w = gputest::to_device(gputest::random_floats(3 * 2 * 9, 5));
  for (float bias : {0.f, -0.5f}) {
    const DeviceBuffer<float> b = gputest::to_device(std::vector<float>(3, bias));
    DeviceBuffer<float> y = poisoned<float>(static_cast<std::size_t>(B) * 3 * 9);
    DeviceBuffer<unsigned char> argmax = poisoned<unsigned char>(y.size());
    conv_block_forward_gpu(plan_conv_block_forward(s, B, x.get(), w.get(), b.get(), y.get(), argmax.get(), kTargetBlocks));
    const TensorShape shape{{"n", B}, {"c", 3}, {"h", 3}, {"w", 3}};
    const std::vector<float> zeros(y.size(), 0.f);
    EXPECT_TRUE(testkit::tensor_matches("y, every input 0, bias " + std::to_string(bias), shape, to_host(y), zeros,
                                        testkit::Tolerance{0, 0}));
    EXPECT_TRUE(testkit::tensor_matches("argmax (window offsets), every input 0, bias " + std::to_string(bias) +
                                            ": the first cell of a window wins a tie",
                                        shape, to_host(argmax), zeros, testkit::Tolerance{0, 0}));
  }
}
