// Stage 06 end to end: the cuDNN engine trains like the CPU stages (20 steps of
// the CNN land on stage 02's parameters), runs every layer kind of the course,
// profiles every layer, and refuses what it cannot run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "01_fc_softmax/cpu_engine.hpp"
#include "02_conv_pool/cnn.hpp"
#include "cudnn_step_engine.hpp"
#include "cnn_comparison.hpp"
#include "common/data/data.hpp"
#include "s06_support.hpp"

using namespace course;
using namespace course::s06test;

namespace {

// The settings, tolerances and starting weights of the comparisons: tests/support/cnn_comparison.hpp.
using namespace course::testkit;

// One epoch (the last batch smaller when `examples` is not a multiple) on the
// GPU and on the stage 02 CPU engine, from the same initial weights in the same
// order: `initial`, or when empty the weights every stage starts from.
void expect_matches_cpu(const std::string& spec, Shape3 input, int batch, int examples, const std::string& loss,
                        bool graph, double lr = 0.05, const std::vector<NamedTensor>& initial = {}) {
  const std::string context = spec + " on " + input.str() + ", batch " + std::to_string(batch) + ", " + loss +
                              (graph ? ", graph on" : ", graph off");
  const EngineConfig cfg = comparison_config(spec, input, batch, lr, loss);
  CudnnStepEngine gpu(cfg, graph, initial);
  testkit::expect_epoch_like_stage02(gpu, cfg, make_synthetic(examples, input, 10, 5), make_synthetic(100, input, 10, 6),
                                     context, /*absolute_errors=*/loss == "mse");
}

/// The 20 steps of testkit::CnnTwentySteps on cuDNN, with the step captured in a graph or not.
void expect_twenty_cnn_steps_match(bool graph) {
  using T = testkit::CnnTwentySteps;
  expect_matches_cpu(named_model_spec("cnn"), T::input(), T::batch, T::examples, "cross-entropy", graph, kCnnStepsLr,
                     T::start());
}

}  // namespace

// 20 steps: 19 batches of 32 and a last one of 16.
TEST(Stage06_Engine, TwentyCnnStepsMatchStage02) {
  S06_SKIP_WITHOUT_GPU();
  expect_twenty_cnn_steps_match(true);
}

TEST(Stage06_Engine, TwentyCnnStepsMatchStage02WithoutTheGraph) {
  S06_SKIP_WITHOUT_GPU();
  expect_twenty_cnn_steps_match(false);
}

// What the two tests above rely on, checked on the CPU (no GPU needed): the
// same 20 steps run twice on stage 02, the second time from weights each moved
// by 1e-6 of itself (about ten times float's rounding, more than a GPU's
// different summation order moves them), end well inside the comparison's
// tolerance. From the He-initialised weights at lr 0.05 they do not (see
// kCnnStepsLr): this test fails there.
TEST(Stage06_Engine, TwentyStepComparisonDoesNotBranchOnTheCpu) { testkit::expect_cnn_twenty_steps_do_not_branch(); }

// Every other layer kind of the course: stride, padding 2, a padded
// overlapping pool, leaky ReLU and softplus (stage 04's kernels), tanh and
// sigmoid (cuDNN's), a dense layer straight after a conv (no flatten), three channels.
TEST(Stage06_Engine, EveryLayerKindMatchesStage02) {
  S06_SKIP_WITHOUT_GPU();
  expect_matches_cpu("conv6k5p2s2,leaky,pool3s2p1,conv8k3p1,softplus,flatten,fc24,tanh,fc16,sigmoid,fc10",
                     {3, 13, 12}, 16, 10 * 16, "cross-entropy", true);
  expect_matches_cpu("conv4k3,relu,fc10", {1, 9, 9}, 8, 8 * 8 + 3, "mse", true);
}

// The practice's network (--leaky-slope 0.3 --output sigmoid --loss mse): leaky ReLU on stage
// 04's kernel with the layer's slope, the output sigmoid on cuDNN, and the MSE's absolute errors;
// with the graph and without.
TEST(Stage06_Engine, LeakySlopeAndSigmoidOutputMatchStage02) {
  S06_SKIP_WITHOUT_GPU();
  const std::string spec = "conv4k3p1,leaky0.3,pool2,flatten,fc16,leaky0.3,fc10,sigmoid";
  const EngineConfig cfg = comparison_config(spec, {1, 12, 12}, 8, kCnnStepsLr, "mse");
  expect_matches_cpu(spec, {1, 12, 12}, 8, 20 * 8, "mse", true, kCnnStepsLr, spread_parameters(cfg, 99));
  expect_matches_cpu(spec, {1, 12, 12}, 8, 20 * 8, "mse", false, kCnnStepsLr, spread_parameters(cfg, 99));
  const std::string m = [&] {
    try {
      CudnnStepEngine engine(comparison_config(spec, {1, 12, 12}, 8, 0.05, "cross-entropy"));
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  }();
  EXPECT_NE(m.find("--loss mse"), std::string::npos) << "a sigmoid output with cross-entropy: " << m;
}

// The MLP: dense layers on cuBLAS only.
TEST(Stage06_Engine, MlpStepsMatchStage01) {
  S06_SKIP_WITHOUT_GPU();
  expect_matches_cpu(named_model_spec("mlp"), {1, 28, 28}, 64, 10 * 64 + 20, "cross-entropy", true);
}

// Evaluation: the same loss, predictions and count as stage 02 on the same weights.
TEST(Stage06_Engine, EvaluateMatchesStage02) {
  S06_SKIP_WITHOUT_GPU();
  CudnnStepEngine gpu(cnn_evaluation_config());
  expect_cnn_evaluation_like_stage02(gpu);
}

// --profile: every layer, the gather, the loss and the update have GPU times, once per step.
TEST(Stage06_Engine, ProfileTimesEveryLayer) {
  S06_SKIP_WITHOUT_GPU();
  EngineConfig cfg = comparison_config(named_model_spec("cnn"), {1, 28, 28}, 64);
  cfg.profile = true;
  CudnnStepEngine gpu(cfg);
  EXPECT_FALSE(gpu.graph_enabled()) << "profiling times each layer, so it runs uncaptured";
  gpu.train_epoch(make_synthetic(5 * 64, {1, 28, 28}, 10, 8), 0, {});
  const std::vector<LayerTime> times = gpu.layer_times();
  ASSERT_EQ(times.size(), cfg.arch.layers.size() + 3) << "one row per layer, then gather, loss, update";
  for (const LayerTime& t : times) {
    if (t.layer.rfind("flatten", 0) == 0) continue;  // costs nothing: no work to time
    EXPECT_EQ(t.calls, 5) << t.layer;
    EXPECT_GT(t.forward_ms + t.backward_ms, 0.0) << t.layer;
  }
  EXPECT_GT(times[0].forward_ms, 0.0) << "conv1 forward";
  EXPECT_GT(times[0].backward_ms, 0.0) << "conv1 backward (weights and bias)";
  gpu.reset_layer_times();
  for (const LayerTime& t : gpu.layer_times()) EXPECT_EQ(t.calls, 0) << t.layer;
}

// Bad requests are refused with a message, before the GPU is touched where possible.
TEST(Stage06_Engine, RefusesWhatItCannotRun) {
  EngineConfig cfg = comparison_config(named_model_spec("cnn"), {1, 28, 28}, 64, 0.05, "hinge");
  EXPECT_THROW(CudnnStepEngine engine(cfg), std::invalid_argument);
  cfg = comparison_config(named_model_spec("cnn"), {1, 28, 28}, 0);
  EXPECT_THROW(CudnnStepEngine engine(cfg), std::invalid_argument);
  cfg = comparison_config("conv8k5,relu,pool2,fc10", {1, 4, 4}, 8);  // a 5x5 filter on a 4x4 image
  EXPECT_THROW(CudnnStepEngine engine(cfg), std::invalid_argument);
  S06_SKIP_WITHOUT_GPU();
  CudnnStepEngine engine(comparison_config(named_model_spec("cnn"), {1, 28, 28}, 64));
  auto params = engine.get_parameters();
  params[0].tensor.shape = {16, 1, 5, 5};
  EXPECT_THROW(engine.set_parameters(params), std::invalid_argument);
  EXPECT_THROW(engine.train_batch(0), std::logic_error) << "a batch before begin_epoch";
  EXPECT_THROW(engine.evaluate(make_synthetic(10, {3, 28, 28}, 10, 1), nullptr), std::invalid_argument)
      << "examples of another shape";
}

// A checkpoint holds parameters and velocities: an engine given both continues
// exactly as the one they came from (same kernels, same algorithms, same bits).
TEST(Stage06_Engine, OptimizerStateContinuesTheRunBitForBit) {
  S06_SKIP_WITHOUT_GPU();
  const Dataset train = make_synthetic(5 * 32 + 7, {1, 28, 28}, 10, 9);
  const EngineConfig cfg = comparison_config(named_model_spec("cnn"), {1, 28, 28}, 32);
  CudnnStepEngine first(cfg);
  first.train_epoch(train, 0, {});
  const auto velocity = first.get_optimizer_state();
  ASSERT_EQ(velocity.size(), first.get_parameters().size());
  EXPECT_EQ(velocity[0].name, "conv1.weight.velocity");
  CudnnStepEngine resumed(cfg);
  resumed.set_parameters(first.get_parameters());
  resumed.set_optimizer_state(velocity);
  first.train_epoch(train, 1, {});
  resumed.train_epoch(train, 1, {});
  const auto p = first.get_parameters(), q = resumed.get_parameters();
  for (std::size_t i = 0; i < p.size(); ++i) {
    std::size_t differ = 0;
    for (std::size_t k = 0; k < p[i].tensor.size(); ++k) differ += p[i].tensor.data[k] != q[i].tensor.data[k];
    EXPECT_EQ(differ, 0u) << p[i].name << ": " << differ << " of " << p[i].tensor.size() << " values differ";
  }
  auto wrong = velocity;
  wrong[0].name = "conv1.weight";
  EXPECT_THROW(resumed.set_optimizer_state(wrong), std::invalid_argument) << "names must end in .velocity";
}
