// Task 8.4: the dense layer with its bias and activation in the epilogue, the sum
// over IN split across blocks and finished by the last block of each tile, against
// stage 01's dense_forward and activation_forward in double.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "01_fc_softmax/activations.hpp"
#include "01_fc_softmax/dense.hpp"
#include "08_fused/fused_kernels.hpp"
#include "s08_support.hpp"

using namespace course;
using namespace course::s08test;

namespace {

// fc1 of cnn, of the mlp and of cnn-deep; tiny, odd and larger-than-a-tile sizes; every activation.
std::vector<DenseCase> dense_cases() {
  return {{64, 1568, 100, FusedAct::ReLU}, {64, 784, 256, FusedAct::ReLU}, {64, 288, 128, FusedAct::Sigmoid},
          {1, 5, 3, FusedAct::None},       {37, 300, 70, FusedAct::Tanh},  {130, 33, 65, FusedAct::Softplus},
          {64, 100, 10, FusedAct::LeakyReLU}};
}

/// y = act(x W^T + b) in double, stage 01's way.
std::vector<double> reference(const DenseCase& c, const std::vector<float>& x, const std::vector<float>& w,
                              const std::vector<float>& b) {
  std::vector<double> z(static_cast<std::size_t>(c.B) * c.OUT), y(z.size());
  dense_forward(to_double(x).data(), to_double(w).data(), to_double(b).data(), z.data(), c.B, c.IN, c.OUT);
  if (c.act == FusedAct::None) return z;
  activation_forward(activation_of(c.act), z.data(), y.data(), static_cast<long>(z.size()));
  return y;
}

/// What y would be after a mistake in one of the device function's holes, each named.
std::vector<testkit::KnownSlip> dense_forward_slips(const DenseCase& c, const DenseForwardArgs& a,
                                                    const std::vector<float>& x, const std::vector<float>& w,
                                                    const std::vector<float>& b) {
  std::vector<testkit::KnownSlip> slips;
  slips.push_back({"nothing summed, y = act(b) everywhere (Task 8.4's first hole: the staged sums)",
                   reference(c, x, std::vector<float>(w.size(), 0.f), b)});
  if (a.k_slices > 1) {
    // Slice 0's columns of W alone: the last block's own sums, or slice 0's, with no others added.
    std::vector<float> first_slice = w;
    for (int o = 0; o < c.OUT; ++o)
      for (int i = a.k_len; i < c.IN; ++i) first_slice[static_cast<std::size_t>(o) * c.IN + i] = 0.f;
    slips.push_back({"slice 0's sum alone (of " + std::to_string(a.k_slices) + " slices of " +
                         std::to_string(a.k_len) + "): the other slices never added (Task 8.4's last hole: the last "
                         "block's fix-up)",
                     reference(c, x, first_slice, b)});
  }
  slips.push_back({"the bias left out (Task 8.4's second or last hole: the epilogue)",
                   reference(c, x, w, std::vector<float>(b.size(), 0.f))});
  if (c.act != FusedAct::None) {
    DenseCase linear = c;
    linear.act = FusedAct::None;
    slips.push_back({"the activation left out (Task 8.4's second or last hole: the epilogue)",
                     reference(linear, x, w, b)});
  }
  return slips;
}

// Runs the layer with at most max_slices slices of the sum, `repeat` times on the
// same buffers (the tickets must be back at 0 after each launch).
void check_dense_forward(const DenseCase& c, int max_slices, int repeat = 1) {
  const std::vector<float> hx = gputest::random_floats(static_cast<std::size_t>(c.B) * c.IN, 121),
                           hw = gputest::random_floats(static_cast<std::size_t>(c.OUT) * c.IN, 122),
                           hb = gputest::random_floats(static_cast<std::size_t>(c.OUT), 123);
  const DeviceBuffer<float> x = gputest::to_device(hx), w = gputest::to_device(hw), b = gputest::to_device(hb);
  const int tiles = (c.B + kDenseTile - 1) / kDenseTile * ((c.OUT + kDenseTile - 1) / kDenseTile);
  DeviceBuffer<float> partials = poisoned<float>(static_cast<std::size_t>(std::min(max_slices, (c.IN + 31) / 32)) * c.B * c.OUT);
  DeviceBuffer<unsigned int> counters = gputest::to_device(std::vector<unsigned int>(static_cast<std::size_t>(tiles), 0u));
  const std::vector<double> want = reference(c, hx, hw, hb);
  for (int r = 0; r < repeat; ++r) {
    DeviceBuffer<float> y = poisoned<float>(static_cast<std::size_t>(c.B) * c.OUT);
    const DenseForwardArgs a = plan_dense_forward(c.B, c.IN, c.OUT, c.act, x.get(), w.get(), b.get(), y.get(),
                                                  partials.get(), counters.get(), kTargetBlocks, max_slices);
    ASSERT_LE(a.k_slices, max_slices) << c.describe() << ": slices of the sum planned";
    dense_forward_gpu(a);
    const std::string context = c.describe() + ", the sum in " + std::to_string(a.k_slices) + " slices of " +
                                std::to_string(a.k_len) + ", launch " + std::to_string(r + 1);
    EXPECT_TRUE(close_or_diagnosed("y (" + context + ")", to_host(y), want, {{"n", c.B}, {"o", c.OUT}},
                                   sum_atol(c.IN + 1), [&] { return dense_forward_slips(c, a, hx, hw, hb); }));
    EXPECT_TRUE(testkit::tensor_matches(
        context + ": the tiles' ticket counters after the launch (each put back to 0)", {{"tile", tiles}},
        to_host(counters), std::vector<unsigned int>(tiles, 0u), testkit::Tolerance{0, 0},
        {{"counters left at the number of slices (the last block did not put its tile's back to 0)",
          std::vector<double>(static_cast<std::size_t>(tiles), (r + 1.0) * a.k_slices)}}));
  }
}

}  // namespace

TEST(Task8_4_DenseForward, MatchesStage01WithTheSumSplit) {
  SKIP_WITHOUT_GPU();
  for (const DenseCase& c : dense_cases()) check_dense_forward(c, 1 << 20, /*repeat=*/2);
}

TEST(Task8_4_DenseForward, MatchesStage01WithTheSumInOneBlock) {
  SKIP_WITHOUT_GPU();
  for (const DenseCase& c : dense_cases()) check_dense_forward(c, 1);
}

// The last block adds the slices in a fixed order: ten launches, the same bits.
TEST(Task8_4_DenseForward, TheSplitSumGivesTheSameBitsEveryRun) {
  SKIP_WITHOUT_GPU();
  const DenseCase c{64, 1568, 100, FusedAct::ReLU};
  const DeviceBuffer<float> x = gputest::to_device(gputest::random_floats(64 * 1568, 131)),
                            w = gputest::to_device(gputest::random_floats(100 * 1568, 132)),
                            b = gputest::to_device(gputest::random_floats(100, 133));
  DeviceBuffer<float> partials(static_cast<std::size_t>(64) * 64 * 100), y(64 * 100);
  DeviceBuffer<unsigned int> counters = gputest::to_device(std::vector<unsigned int>(8, 0u));
  const DenseForwardArgs a = plan_dense_forward(c.B, c.IN, c.OUT, c.act, x.get(), w.get(), b.get(), y.get(),
                                                partials.get(), counters.get(), kTargetBlocks, 64);
  ASSERT_GT(a.k_slices, 1) << "the test needs a split sum";
  dense_forward_gpu(a);
  const std::vector<float> first = to_host(y);
  for (int r = 0; r < 10; ++r) {
    dense_forward_gpu(a);
    EXPECT_TRUE(testkit::tensor_matches("y of launch " + std::to_string(r + 2) + " (expected: launch 1's bits)",
                                        {{"n", 64}, {"o", 100}}, to_host(y), first, testkit::Tolerance{0, 0}));
  }
}
