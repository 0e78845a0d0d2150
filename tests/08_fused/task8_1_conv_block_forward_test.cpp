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

/// What y would be after a mistake in one of the device function's holes, each named: references of
/// the case with some channels' weights, the bias or the activation left out.
std::vector<testkit::KnownSlip> forward_slips(const ConvBlockCase& c, const ConvBlockInputs& in,
                                              const ConvForwardArgs& a) {
  const ConvBlockShape s = c.shape();
  const auto without_channels = [&](auto&& left_out) {  // y with the weights of the channels left out at 0
    ConvBlockInputs changed = in;
    for (int f = 0; f < s.F; ++f)
      for (int ch = 0; ch < s.C; ++ch)
        if (left_out(ch))
          for (int t = 0; t < s.K * s.K; ++t) changed.w[(static_cast<std::size_t>(f) * s.C + ch) * s.K * s.K + t] = 0.f;
    return ConvBlockReference(c, changed, /*backward=*/false).y;
  };
  std::vector<testkit::KnownSlip> slips;
  slips.push_back({"nothing summed, y = act(b) everywhere (Task 8.1's first two holes: the staging, or the "
                   "window's multiply-adds, left empty)",
                   without_channels([](int) { return true; })});
  if (a.splits > 1)
    slips.push_back({"only part 0's channels summed, the other " + std::to_string(a.splits - 1) +
                         " parts' sums never added (Task 8.1's third hole: the parts' sums)",
                     without_channels([&](int ch) { return ch % a.chans % a.splits != 0; })});
  if (a.chans < s.C) {
    const int last_pass = (s.C - 1) / a.chans * a.chans;
    slips.push_back({"only the last pass's channels (from " + std::to_string(last_pass) + ", " +
                         std::to_string(a.chans) + " a pass) summed: the sums started again at each pass "
                         "(Task 8.1's second hole)",
                     without_channels([&](int ch) { return ch < last_pass; })});
  }
  ConvBlockInputs no_bias = in;
  std::fill(no_bias.b.begin(), no_bias.b.end(), 0.f);
  slips.push_back({"the bias left out (Task 8.1's last hole: the epilogue)",
                   ConvBlockReference(c, no_bias, /*backward=*/false).y});
  if (c.act != FusedAct::None) {
    ConvBlockCase linear = c;
    linear.act = FusedAct::None;
    slips.push_back({"the activation left out (Task 8.1's last hole: the epilogue)",
                     ConvBlockReference(linear, in, /*backward=*/false).y});
  }
  return slips;
}

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
  EXPECT_TRUE(close_or_diagnosed("y (" + context + ")", got, ref.y, y_shape, atol,
                                 [&] { return forward_slips(c, in, a); }));
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
