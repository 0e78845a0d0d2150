// Average pooling on cuDNN (given code beside Task 6.6, not a task: avgpool_cudnn.hpp)
// against stage 02's avgpool_forward and avgpool_backward (Task 2.8), and the
// cuDNN engine training a model with average pools like stage 02 does.
//
// Tolerance of the layer against stage 02, derived. The reference runs in double
// on the float inputs the GPU sees, so only cuDNN's float rounding counts. A
// forward output sums n <= K*K floats of magnitude at most M (the largest |x|)
// and divides by K*K: in float, one after another, that is off by at most
// (K*K - 1) u M + u M = K*K u M from the exact mean (u = 2^-24), whatever
// order cuDNN adds in (it may also multiply by a rounded 1/(K*K): another
// u M). A backward cell sums at most ceil(K/S)^2 <= K*K shares dy / (K*K):
// the same bound with M the largest |dy|. The tests allow K*K * FLT_EPSILON * M,
// twice the bound (1.07e-6 M for 3x3 windows).
//
// The mode is the point of these tests: cuDNN's
// CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING would divide a padded window by
// the image cells it holds (the corner of a 2x2, pad 1 pool by 1, not 4), far
// outside the tolerance; the padded cases and the hand example catch it.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "01_fc_softmax/cpu_engine.hpp"
#include "02_conv_pool/avgpool.hpp"
#include "02_conv_pool/cnn.hpp"
#include "06_cudnn/avgpool_cudnn.hpp"
#include "avgpool_tolerance.hpp"
#include "cudnn_step_engine.hpp"
#include "cnn_comparison.hpp"
#include "common/data/data.hpp"
#include "course_test.hpp"
#include "s06_support.hpp"

using namespace course;
using namespace course::s06test;

namespace {

// Strides 1 and 2, padding 0, 1 and 2 (P = K - 1), overlapping windows, odd and
// non-square sizes, batches of 1 to 64 (pool1 of `cnn` at batch 64).
//                                C  H  W  K  S  P
const PoolCase kAvgPoolCases[] = {{2, {3, 6, 8, 2, 2, 0}}, {2, {2, 7, 5, 2, 2, 0}},  {2, {2, 9, 7, 3, 2, 0}},
                           {3, {2, 7, 8, 3, 2, 1}}, {2, {2, 5, 6, 2, 2, 1}},  {1, {2, 6, 5, 3, 1, 1}},
                           {2, {3, 7, 9, 2, 1, 0}}, {3, {2, 5, 6, 3, 1, 2}},  {2, {2, 8, 9, 3, 1, 1}},
                           {1, {1, 5, 5, 2, 2, 0}}, {64, {16, 28, 28, 2, 2, 0}}};

std::string describe_case(const PoolCase& c) { return c.g.str("average-pool") + ", batch " + std::to_string(c.B); }

// The given average pool's calls (avgpool_cudnn.hpp), for run_pool().
const PoolCalls kAvgPool{describe_avgpool, avgpool_forward_cudnn, avgpool_backward_cudnn};

}  // namespace

TEST(Stage06_AvgPool, MatchesStage02OnEveryShape) {
  S06_SKIP_WITHOUT_GPU();
  for (const PoolCase& c : kAvgPoolCases) {
    SCOPED_TRACE(describe_case(c));
    const PoolGeometry& g = c.g;
    const auto x = as_float_values(testkit::random_vector(static_cast<std::size_t>(c.B) * g.in_size(), 71));
    const auto dy = as_float_values(testkit::random_vector(static_cast<std::size_t>(c.B) * g.out_size(), 72));
    const auto [got_y, got_dx] = run_pool(kAvgPool, c, x, dy, -99.f);

    std::vector<double> want_y(got_y.size()), want_dx(got_dx.size());
    avgpool_forward(x.data(), want_y.data(), c.B, g);
    avgpool_backward(dy.data(), want_dx.data(), c.B, g);
    EXPECT_TRUE(all_close("y of " + describe_case(c), got_y, want_y, {c.B, g.C, g.out_h(), g.out_w()},
                          testkit::avgpool_atol(g, x), 0));
    EXPECT_TRUE(
        all_close("dx of " + describe_case(c), got_dx, want_dx, {c.B, g.C, g.H, g.W}, testkit::avgpool_atol(g, dy), 0));
  }
}

// 2x2 windows, stride 2, padding 1 on a 3x3 plane, by hand: the windows hold 1,
// 2, 2 and 4 image cells and each divides by K*K = 4 (padded cells are zeros).
// Exact in float. _EXCLUDE_PADDING would give 1, 2.5, 5.5, 7 and dx 4, 4, 4, 6, ...
TEST(Stage06_AvgPool, PaddedCellsCountAsZerosHandExample) {
  S06_SKIP_WITHOUT_GPU();
  const PoolCase c{1, {1, 3, 3, 2, 2, 1}};
  const auto [y, dx] = run_pool(kAvgPool, c, {1, 2, 3, 4, 5, 6, 7, 8, 9}, {4, 8, 12, 16}, -99.f);
  EXPECT_EQ(y, (std::vector<double>{0.25, 1.25, 2.75, 7}));
  EXPECT_EQ(dx, (std::vector<double>{1, 2, 2, 3, 4, 4, 3, 4, 4}));
}

// Padding 2 on a 2x2 window (the max-pooling study's "padding 2"): the first
// window would hold only padding. Refused, naming the layer, before cuDNN sees it.
TEST(Stage06_AvgPool, RefusesPaddingThatReachesTheWindow) {
  S06_SKIP_WITHOUT_GPU();
  PoolDescriptors d;
  try {
    describe_avgpool(d, PoolGeometry{1, 4, 4, 2, 2, 2}, 1);
    ADD_FAILURE() << "padding 2 on a 2x2 window was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("average-pool 2x2"), std::string::npos) << e.what();
  }
}

// 20 SGD steps of the cuDNN engine against stage 02's CPU engine from the same
// weights on the same batches, graph on and off, with the comparisons'
// tolerances (tests/support/cnn_comparison.hpp: parameters 5e-4 + 1e-3 |cpu|,
// loss 1e-4 relative). Average pools padded and overlapping, and a max-pool between.
TEST(Stage06_AvgPool, EngineMatchesStage02AfterTwentySteps) {
  S06_SKIP_WITHOUT_GPU();
  const std::string spec = "conv4k3p1,relu,avgpool2p1,conv6k3p1,tanh,avgpool3s1p1,pool2,flatten,fc16,relu,fc10";
  const Shape3 input{2, 11, 12};
  const EngineConfig cfg = testkit::comparison_config(spec, input, 8, testkit::kCnnStepsLr);
  const Dataset train = make_synthetic(19 * 8 + 5, input, 10, 61);
  const std::vector<NamedTensor> initial = testkit::spread_parameters(cfg, 63);
  for (const bool graph : {true, false}) {
    const std::string context = spec + (graph ? ", graph on" : ", graph off");
    CudnnStepEngine gpu(cfg, graph, initial);
    const EpochStats got = gpu.train_epoch(train, 0, {});
    CpuEngine cpu(cfg, make_cnn_layer<float>);
    cpu.set_parameters(initial);
    const EpochStats want = cpu.train_epoch(train, 0, {});
    EXPECT_EQ(got.seen, want.seen) << context;
    EXPECT_NEAR(got.loss_sum, want.loss_sum, testkit::kStepsLossRtol * want.loss_sum) << context;
    const std::vector<NamedTensor> g = gpu.get_parameters(), w = cpu.get_parameters();
    ASSERT_EQ(g.size(), w.size()) << context;
    bool moved = false;
    for (std::size_t i = 0; i < w.size(); ++i) {
      ASSERT_EQ(g[i].name, w[i].name) << context;
      const std::vector<double> gv(g[i].tensor.data.begin(), g[i].tensor.data.end()),
          wv(w[i].tensor.data.begin(), w[i].tensor.data.end());
      EXPECT_TRUE(all_close(context + ", " + w[i].name, gv, wv, w[i].tensor.shape, testkit::kStepsParamAtol,
                            testkit::kStepsParamRtol));
      for (std::size_t j = 0; j < wv.size(); ++j)
        moved = moved || std::fabs(wv[j] - initial[i].tensor.data[j]) > 10 * testkit::kStepsParamAtol;
    }
    EXPECT_TRUE(moved) << context << ": the parameters hardly moved, so the comparison proves little";
  }
}
