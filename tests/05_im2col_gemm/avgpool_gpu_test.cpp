// Average pooling on the GPU (given code beside Tasks 5.7 and 5.8, not a task)
// against stage 02's CPU layer (Task 2.8) on the same float inputs, and the
// engine training a model with average pools like stage 02 does.
//
// Tolerance of the kernels against stage 02, derived. A forward output sums
// n <= K*K floats of magnitude at most M (the largest |x|) and divides once by
// K*K. Summed in float, one after another, the sum is off by at most
// (n - 1) u (sum of |x|) <= (K*K - 1) u K*K M, with u = 2^-24; after the
// division that is (K*K - 1) u M, and the division's own rounding adds u M: at
// most K*K u M from the exact mean on either side. So
//
//     |gpu - cpu| <= 2 K*K u M = K*K * FLT_EPSILON * M     (FLT_EPSILON = 2^-23)
//
// (1.07e-6 M for 3x3 windows). A backward cell sums at most ceil(K/S)^2 <= K*K
// shares dy / (K*K), each rounded once: the same bound with M the largest |dy|.
// Both sides add the same terms in the same order (rows of the window, or the
// windows in row-major order) and divide rather than multiply by a reciprocal,
// so they should agree bit for bit; the bound is what a correct kernel that adds
// in another order could still be off by.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "01_fc_softmax/cpu_engine.hpp"
#include "02_conv_pool/avgpool.hpp"
#include "02_conv_pool/cnn.hpp"
#include "05_im2col_gemm/cnn_step.hpp"
#include "cnn_engine.hpp"
#include "common/gpu/gpu_engine.hpp"
#include "05_im2col_gemm/pool_gpu.hpp"
#include "avgpool_tolerance.hpp"
#include "cnn_comparison.hpp"
#include "common/data/data.hpp"
#include "pool_cases.hpp"
#include "stage05_support.hpp"

using namespace course;
using namespace course::s05test;

namespace {

// Stage 02's max-pool shapes (pool_cases.hpp: strides 1 and 2, padding 0 and 1,
// overlapping windows, odd sizes, batches of 1 to 8, pool1 of `cnn`), and two
// more: 2x2 windows at stride 1, and padding 2 on 3x3 windows (P = K - 1, whose
// corner windows hold a single image cell).
std::vector<PoolCase> avgpool_cases() {
  std::vector<PoolCase> cases = pool_cases();
  cases.push_back({2, {3, 7, 9, 2, 1, 0}});
  cases.push_back({3, {2, 5, 6, 3, 1, 2}});
  return cases;
}

std::string describe(const PoolCase& c) { return "batch " + std::to_string(c.B) + ", " + c.g.str("average-pool"); }

/// One pass of case `c` on the GPU and on stage 02 from the same random input (`seed`): the forward
/// pass (x -> y) or the backward (dy -> dx), into a poisoned buffer, within the tolerance above.
void expect_pass_like_stage02(const std::string& what, const PoolCase& c, bool forward, std::uint64_t seed) {
  const std::size_t in = static_cast<std::size_t>(c.B) * (forward ? c.g.in_size() : c.g.out_size());
  const std::size_t out = static_cast<std::size_t>(c.B) * (forward ? c.g.out_size() : c.g.in_size());
  const std::vector<float> x = random_floats(in, seed);
  const DeviceBuffer<float> dev_x = to_device(x);
  DeviceBuffer<float> y = poisoned<float>(out);
  std::vector<float> want(out);
  if (forward) {
    avgpool_forward_gpu(dev_x.get(), y.get(), c.B, c.g);
    avgpool_forward(x.data(), want.data(), c.B, c.g);
  } else {
    avgpool_backward_gpu(dev_x.get(), y.get(), c.B, c.g);
    avgpool_backward(x.data(), want.data(), c.B, c.g);
  }
  EXPECT_TRUE(close(what, to_host(y), want, forward ? pool_output_shape(c) : pool_input_shape(c),
                    testkit::avgpool_atol(c.g, x), 0));
}

}  // namespace

TEST(Stage05_AvgPool, ForwardMatchesStage02OnEveryShape) {
  SKIP_WITHOUT_GPU();
  for (const PoolCase& c : avgpool_cases())
    expect_pass_like_stage02("y, " + describe(c), c, /*forward=*/true, 81);
}

// dx is written everywhere (the buffer starts poisoned), with each cell's share of every window that holds it.
TEST(Stage05_AvgPool, BackwardMatchesStage02OnEveryShape) {
  SKIP_WITHOUT_GPU();
  for (const PoolCase& c : avgpool_cases())
    expect_pass_like_stage02("dx, " + describe(c), c, /*forward=*/false, 82);
}

// 2x2 windows, stride 2, padding 1 on a 3x3 plane, worked by hand: the windows
// hold 1, 2, 2 and 4 image cells and each divides by K*K = 4 (padded cells are
// zeros); backward hands every image cell dy / 4. Exact in float.
TEST(Stage05_AvgPool, PaddedCellsCountAsZerosHandExample) {
  SKIP_WITHOUT_GPU();
  const PoolCase c{1, {1, 3, 3, 2, 2, 1}};
  const DeviceBuffer<float> x = to_device(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9});
  DeviceBuffer<float> y = poisoned<float>(4);
  avgpool_forward_gpu(x.get(), y.get(), 1, c.g);
  EXPECT_TRUE(close("y", to_host(y), std::vector<float>{0.25f, 1.25f, 2.75f, 7.f}, {2, 2}, 0, 0));
  const DeviceBuffer<float> dy = to_device(std::vector<float>{4, 8, 12, 16});
  DeviceBuffer<float> dx = poisoned<float>(9);
  avgpool_backward_gpu(dy.get(), dx.get(), 1, c.g);
  EXPECT_TRUE(close("dx", to_host(dx), std::vector<float>{1, 2, 2, 3, 4, 4, 3, 4, 4}, {3, 3}, 0, 0));
}

TEST(Stage05_AvgPool, RefusesWhatItCannotRun) {
  // Checked before anything touches the device: no GPU needed.
  float* none = nullptr;
  float one = 0.f;
  EXPECT_THROW(avgpool_forward_gpu(&one, &one, 1, PoolGeometry{1, 4, 4, 2, 2, 2}), std::invalid_argument)
      << "padding 2 on a 2x2 window: the first window holds only padding";
  EXPECT_THROW(avgpool_forward_gpu(none, &one, 1, PoolGeometry{1, 4, 4, 2, 2, 0}), std::invalid_argument);
  EXPECT_THROW(avgpool_backward_gpu(&one, none, 1, PoolGeometry{1, 4, 4, 2, 2, 0}), std::invalid_argument);
  EXPECT_THROW(avgpool_backward_gpu(&one, &one, 0, PoolGeometry{1, 4, 4, 2, 2, 0}), std::invalid_argument);
}

namespace {

// A model with average pools: padded, overlapping (stride 1), after ReLU and tanh,
// and a max-pool between, as tests/02_conv_pool's end-to-end gradient check runs.
const char* const kAvgSpec = "conv4k3p1,relu,avgpool2p1,conv6k3p1,tanh,avgpool3s1p1,pool2,flatten,fc16,relu,fc10";
const Shape3 kAvgInput{2, 11, 12};
constexpr int kAvgBatch = 8, kAvgExamples = 19 * 8 + 5;  // 20 steps, the last of 5

}  // namespace

// 20 SGD steps of stage 05's engine against stage 02's CPU engine from the same
// weights on the same batches, with the comparisons' shared tolerances
// (tests/support/cnn_comparison.hpp, the same for every GPU CNN: parameters
// 5e-4 + 1e-3 |cpu|, loss 1e-4 relative). Measured on the CPU, the parameters
// move up to 0.02 in these steps: 40 times the tolerance.
TEST(Stage05_AvgPool, EngineMatchesStage02AfterTwentySteps) {
  SKIP_WITHOUT_GPU();
  const EngineConfig cfg = testkit::comparison_config(kAvgSpec, kAvgInput, kAvgBatch, testkit::kCnnStepsLr);
  const Dataset train = make_synthetic(kAvgExamples, kAvgInput, 10, 61);
  const Dataset test = make_synthetic(60, kAvgInput, 10, 62);
  const std::vector<NamedTensor> initial = testkit::spread_parameters(cfg, 63);
  for (const GpuCnnOptions& o : std::vector<GpuCnnOptions>{{kBestGemm, Unroll::Batch, kDefaultSplitK},
                                                           {kGemmCublas, Unroll::Image, kDefaultSplitK}}) {
    const std::string context = std::string(kAvgSpec) + ", " + gemm_kernel_name(o.gemm_kernel);
    GpuEngine gpu = cnn_engine(cfg, o, initial);
    const testkit::SideBySide r = testkit::train_side_by_side(gpu, cfg, train, test, initial);
    ASSERT_EQ(r.gpu_train.seen, r.cpu_train.seen) << context;
    EXPECT_NEAR(r.gpu_train.loss_sum, r.cpu_train.loss_sum, testkit::kStepsLossRtol * r.cpu_train.loss_sum) << context;
    EXPECT_NEAR(r.gpu_test.loss_sum, r.cpu_test.loss_sum, testkit::kStepsLossRtol * r.cpu_test.loss_sum) << context;
    ASSERT_EQ(r.gpu_params.size(), r.cpu_params.size()) << context;
    bool moved = false;
    for (std::size_t i = 0; i < r.cpu_params.size(); ++i) {
      EXPECT_TRUE(close(context + ", " + r.cpu_params[i].name, r.gpu_params[i].tensor.data,
                        r.cpu_params[i].tensor.data, r.cpu_params[i].tensor.shape, testkit::kStepsParamAtol,
                        testkit::kStepsParamRtol));
      for (std::size_t j = 0; j < r.cpu_params[i].tensor.size(); ++j)
        moved = moved || std::fabs(r.cpu_params[i].tensor.data[j] - initial[i].tensor.data[j]) >
                             10 * testkit::kStepsParamAtol;
    }
    EXPECT_TRUE(moved) << context << ": the parameters hardly moved, so the comparison proves little";
  }
}

// What that comparison relies on, on the CPU alone: its 20 steps do not branch.
TEST(Stage05_AvgPool, TwentyStepsDoNotBranchOnTheCpu) {
  const EngineConfig cfg = testkit::comparison_config(kAvgSpec, kAvgInput, kAvgBatch, testkit::kCnnStepsLr);
  const Dataset train = make_synthetic(kAvgExamples, kAvgInput, 10, 61);
  testkit::expect_training_does_not_branch(cfg, train, testkit::spread_parameters(cfg, 63), testkit::kStepsParamAtol,
                                           testkit::kStepsParamRtol);
}
