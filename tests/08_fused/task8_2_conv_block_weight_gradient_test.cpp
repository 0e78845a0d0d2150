// Task 8.2: the weight and bias gradients of a fused conv block (pool backward, the
// activation's slope and the two sums over the batch, in one pass) against stages 01
// and 02's backward layers run one after another in double. The kernel gets the
// reference's own forward results (y and the window offsets of its arg-maxes), so
// that a near-tie the GPU's forward pass would break the other way cannot move a
// gradient: this test checks the backward pass alone. Its partial sums are added
// here, in double, as the update adds them (Task 8.7).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "08_fused/fused_kernels.hpp"
#include "s08_support.hpp"

using namespace course;
using namespace course::s08test;

namespace {

// wg_images 0: the planner chooses from target_blocks.
void check_weight_gradient(const ConvBlockCase& c, int target_blocks, int wg_images) {
  const ConvBlockShape s = c.shape();
  const ConvBlockInputs in(c, 91);
  const DeviceBuffer<float> x = gputest::to_device(in.x), w = gputest::to_device(in.w),
                            dy = gputest::to_device(in.dy);
  // y and the window offsets come from the reference, computed after the plan: with every
  // hole open (the exercise proof) the test then fails on Task 8.2's own code first, not on
  // the stage 02 tasks the reference is made of.
  const std::size_t outputs = static_cast<std::size_t>(c.B) * s.F * s.Hq * s.Wq;
  DeviceBuffer<float> y(outputs);
  DeviceBuffer<unsigned char> argmax(outputs);
  const std::size_t weights = static_cast<std::size_t>(s.F) * s.C * s.K * s.K;
  // At most one slice per example: room for the most any plan can use.
  DeviceBuffer<float> dw = poisoned<float>(static_cast<std::size_t>(c.B) * weights);
  DeviceBuffer<float> db = poisoned<float>(static_cast<std::size_t>(c.B) * s.F);
  const ConvBackwardArgs a = plan_conv_block_backward(s, c.B, x.get(), w.get(), y.get(), argmax.get(), dy.get(),
                                                      dw.get(), db.get(), nullptr, target_blocks, wg_images);
  ASSERT_EQ(a.input_blocks, 0) << c.describe() << ": input-gradient blocks planned, and no dx was asked for";
  ASSERT_LE(a.wg_slices, c.B) << c.describe() << ": slices of the weight gradient, more than one per example";
  const ConvBlockReference ref(c, in, /*backward=*/true);
  y.upload(to_float(ref.y).data(), outputs);
  argmax.upload(ref.window.data(), outputs);
  conv_block_backward_gpu(a);
  const std::vector<float> got_dw = sum_slices(to_host(dw), a.wg_slices, weights);
  const std::vector<float> got_db = sum_slices(to_host(db), a.wg_slices, static_cast<std::size_t>(s.F));
  const std::string context = c.describe() + ", " + std::to_string(a.wg_slices) + " slices of " +
                              std::to_string(a.wg_images) + " examples, " + std::to_string(a.weight_blocks) + " blocks";
  const double atol = sum_atol(c.B * s.Hq * s.Wq);
  EXPECT_TRUE(close("dW (" + context + ")", got_dw, ref.dw, {{"o", s.F}, {"c", s.C}, {"kh", s.K}, {"kw", s.K}}, atol));
  EXPECT_TRUE(close("db (" + context + ")", got_db, ref.db, {{"o", s.F}}, atol));
}

}  // namespace

TEST(Task8_2_ConvBlockWeightGradient, MatchesStage02OverTheShapeGrid) {
  SKIP_WITHOUT_GPU();
  for (const ConvBlockCase& c : conv_block_cases()) check_weight_gradient(c, kTargetBlocks, 0);
}

// Three examples a slice (the last slice shorter when B is not a multiple of 3), and one slice for the whole batch.
TEST(Task8_2_ConvBlockWeightGradient, AnySliceOfTheBatchGivesTheSameSums) {
  SKIP_WITHOUT_GPU();
  for (const ConvBlockCase& c : conv_block_cases()) {
    check_weight_gradient(c, kTargetBlocks, 3);
    check_weight_gradient(c, 1, c.B);
  }
}

// For the sanitizer runs: every path of the grid on small batches, with each slicing.
TEST(Task8_2_ConvBlockWeightGradient, MatchesStage02OnSmallShapes) {
  SKIP_WITHOUT_GPU();
  for (const ConvBlockCase& c : conv_block_small_cases()) {
    check_weight_gradient(c, kTargetBlocks, 0);
    check_weight_gradient(c, 1, 2);
  }
}
