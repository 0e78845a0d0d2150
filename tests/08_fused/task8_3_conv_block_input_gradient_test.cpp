// Task 8.3: the input gradient of a fused conv block (the full convolution of
// dL/dz, rebuilt from dy, y and the arg-maxes, with the flipped kernel) against
// stages 01 and 02's backward layers run one after another in double, on the
// reference's own forward results (as in Task 8.2).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "08_fused/fused_kernels.hpp"
#include "s08_support.hpp"

using namespace course;
using namespace course::s08test;

namespace {

void check_input_gradient(const ConvBlockCase& c, int target_blocks) {
  const ConvBlockShape s = c.shape();
  const ConvBlockInputs in(c, 101);
  const DeviceBuffer<float> w = gputest::to_device(in.w), dy = gputest::to_device(in.dy);
  // y and the window offsets come from the reference, computed after the plan, so that with
  // every hole open (the exercise proof) Task 8.3's own code fails first (see Task 8.2's test).
  const std::size_t outputs = static_cast<std::size_t>(c.B) * s.F * s.Hq * s.Wq;
  DeviceBuffer<float> y(outputs);
  DeviceBuffer<unsigned char> argmax(outputs);
  DeviceBuffer<float> dx = poisoned<float>(static_cast<std::size_t>(c.B) * s.C * s.H * s.W);
  const ConvBackwardArgs a = plan_conv_block_backward(s, c.B, nullptr, w.get(), y.get(), argmax.get(), dy.get(),
                                                      nullptr, nullptr, dx.get(), target_blocks);
  ASSERT_EQ(a.weight_blocks, 0) << c.describe() << ": weight-gradient blocks planned, and no dW was asked for";
  const ConvBlockReference ref(c, in, /*backward=*/true);
  y.upload(to_float(ref.y).data(), outputs);
  argmax.upload(ref.window.data(), outputs);
  conv_block_backward_gpu(a);
  const std::string context = c.describe() + ", " + std::to_string(a.input_blocks) + " blocks of " +
                              std::to_string(a.ig_images) + " examples";
  EXPECT_TRUE(close("dx (" + context + ")", to_host(dx), ref.dx, {{"n", c.B}, {"c", s.C}, {"h", s.H}, {"w", s.W}},
                    sum_atol(s.F * s.K * s.K)));
}

}  // namespace

// The shape grid at both tilings, and the small shapes for the sanitizer runs (s08_support.hpp).
S08_CONV_BLOCK_GRID_TESTS(Task8_3_ConvBlockInputGradient, check_input_gradient)

// Both parts in one launch: the weight-gradient blocks first, then the input-gradient
// blocks, each part's results as when it runs alone.
TEST(Task8_3_ConvBlockInputGradient, RunsBesideTheWeightGradientInOneLaunch) {
  SKIP_WITHOUT_GPU();
  const ConvBlockCase c{64, 16, 14, 14, 32, 3, 1, 2, FusedAct::ReLU};
  const ConvBlockShape s = c.shape();
  const ConvBlockInputs in(c, 111);
  const ConvBlockReference ref(c, in, /*backward=*/true);
  const DeviceBuffer<float> x = gputest::to_device(in.x), w = gputest::to_device(in.w),
                            dy = gputest::to_device(in.dy), y = gputest::to_device(to_float(ref.y));
  const DeviceBuffer<unsigned char> argmax = gputest::to_device(ref.window);
  const std::size_t weights = static_cast<std::size_t>(s.F) * s.C * s.K * s.K;
  DeviceBuffer<float> dw = poisoned<float>(c.B * weights), db = poisoned<float>(static_cast<std::size_t>(c.B) * s.F);
  DeviceBuffer<float> dx = poisoned<float>(static_cast<std::size_t>(c.B) * s.C * s.H * s.W);
  const ConvBackwardArgs a = plan_conv_block_backward(s, c.B, x.get(), w.get(), y.get(), argmax.get(), dy.get(),
                                                      dw.get(), db.get(), dx.get(), kTargetBlocks);
  ASSERT_GT(a.weight_blocks, 0) << c.describe() << ": weight-gradient blocks planned";
  ASSERT_GT(a.input_blocks, 0) << c.describe() << ": input-gradient blocks planned";
  conv_block_backward_gpu(a);
  EXPECT_TRUE(close("dx (" + c.describe() + ", beside the weight gradient)", to_host(dx), ref.dx,
                    {{"n", c.B}, {"c", s.C}, {"h", s.H}, {"w", s.W}}, sum_atol(s.F * s.K * s.K)));
  EXPECT_TRUE(close("dW (" + c.describe() + ", beside the input gradient)",
                    sum_slices(to_host(dw), a.wg_slices, weights), ref.dw,
                    {{"o", s.F}, {"c", s.C}, {"kh", s.K}, {"kw", s.K}}, sum_atol(c.B * s.Hq * s.Wq)));
}
