// Stage 08 end to end: the one GPU engine on the fused step trains like the CPU stages (20 steps of the
// CNN land on stage 02's parameters), with the graph, without it and persistent the
// same bits, every layer kind it fuses, the learning-rate schedule reaching the
// captured step, profiles per fused layer, and its step's kernel table.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "01_fc_softmax/cpu_engine.hpp"
#include "02_conv_pool/cnn.hpp"
#include "08_fused/fused_step.hpp"
#include "cnn_comparison.hpp"
#include "common/data/data.hpp"
#include "common/gpu/gpu_capability.hpp"
#include "s08_support.hpp"

using namespace course;
using namespace course::s08test;

namespace {

// The settings, tolerances and starting weights of the comparisons: tests/support/cnn_comparison.hpp.
using namespace course::testkit;

/// The one GPU engine on the fused step, as these tests hold it.
class Fused {
 public:
  explicit Fused(const EngineConfig& cfg, const FusedOptions& options = {}, const std::vector<NamedTensor>& initial = {})
      : engine_(make_fused_engine(cfg, options, initial)) {}
  GpuEngine* operator->() { return engine_.get(); }
  GpuEngine& operator*() { return *engine_; }
  const FusedStep& step() const { return fused_step(*engine_); }

 private:
  std::unique_ptr<GpuEngine> engine_;
};

void expect_same_bits(const std::vector<NamedTensor>& p, const std::vector<NamedTensor>& q, const std::string& context) {
  ASSERT_EQ(p.size(), q.size()) << context;
  for (std::size_t i = 0; i < p.size(); ++i) {
    std::size_t differ = 0;
    for (std::size_t k = 0; k < p[i].tensor.size(); ++k) differ += p[i].tensor.data[k] != q[i].tensor.data[k];
    EXPECT_EQ(differ, 0u) << context << ", " << p[i].name << ": " << differ << " of " << p[i].tensor.size()
                          << " values differ";
  }
}

// One epoch on the fused step and on stage 02's CPU engine from the same weights, in the same order.
void expect_matches_cpu(const std::string& spec, Shape3 input, int batch, int examples, const std::string& loss,
                        const FusedOptions& options, double lr, const std::vector<NamedTensor>& initial = {},
                        int classes = 10) {
  const std::string context = spec + " on " + input.str() + ", batch " + std::to_string(batch) + ", " + loss +
                              ", " + std::to_string(classes) + " classes" +
                              (options.persistent ? ", persistent" : options.graph ? ", graph on" : ", graph off") +
                              (options.dense_chain ? "" : ", dense chain off");
  EngineConfig cfg = comparison_config(spec, input, batch, lr, loss);
  cfg.classes = classes;
  Fused gpu(cfg, options, initial);
  // The fused head adds no absolute errors (GpuEngine::reports_mae() is false): only the loss is compared.
  testkit::expect_epoch_like_stage02(*gpu, cfg, make_synthetic(examples, input, classes, 5),
                                     make_synthetic(100, input, classes, 6), context, /*absolute_errors=*/false);
}

}  // namespace

// 20 steps: 19 batches of 32 and a last one of 16 (which runs uncaptured, with its own plan).
TEST(Stage08_Engine, TwentyCnnStepsMatchStage02) {
  SKIP_WITHOUT_GPU();
  using T = testkit::CnnTwentySteps;
  for (const FusedOptions& o : {FusedOptions{true, false}, FusedOptions{false, false}, FusedOptions{false, true}})
    expect_matches_cpu(named_model_spec("cnn"), T::input(), T::batch, T::examples, "cross-entropy", o, kCnnStepsLr,
                       T::start());
}

// What the test above relies on, on the CPU alone (no GPU needed): a 1e-6 change of the
// weights stays well inside the tolerance over the same 20 steps.
TEST(Stage08_Engine, TwentyStepComparisonDoesNotBranchOnTheCpu) { testkit::expect_cnn_twenty_steps_do_not_branch(); }

// `cnn-deep` on CIFAR-shaped input, and every other layer kind stage 08 fuses: 5x5 and
// 1x1 convolutions, a conv block without a pool, every activation, a dense layer
// without one, mean squared error, a head straight after a conv block, a short last batch.
TEST(Stage08_Engine, EveryLayerKindItFusesMatchesStage02) {
  SKIP_WITHOUT_GPU();
  const std::string deep = named_model_spec("cnn-deep");
  expect_matches_cpu(deep, {3, 32, 32}, 8, 20 * 8, "cross-entropy", {}, kCnnStepsLr,
                     spread_parameters(comparison_config(deep, {3, 32, 32}, 8), 98));
  const std::string spec = "conv6k5p2,leaky,pool2,conv8k3p1,softplus,conv4k1,tanh,pool2,flatten,fc24,sigmoid,fc16,fc10";
  expect_matches_cpu(spec, {3, 13, 12}, 16, 10 * 16, "cross-entropy", {}, kCnnStepsLr,
                     spread_parameters(comparison_config(spec, {3, 13, 12}, 16), 97));
  expect_matches_cpu("conv4k3,fc10", {1, 9, 9}, 8, 8 * 8 + 3, "mse", {}, 0.05);
}

// The `mlp` runs as the dense chain by default (dense_chain.cu), and with Tasks 8.4 to 8.7's kernels when
// asked (dense_chain off) or persistent: each way, 11 steps (the last of 20 examples) land on stage 01's parameters.
TEST(Stage08_Engine, MlpStepsMatchStage01) {
  SKIP_WITHOUT_GPU();
  FusedOptions chain_off;
  chain_off.dense_chain = false;
  for (const FusedOptions& o : {FusedOptions{}, FusedOptions{false, false}, chain_off, FusedOptions{false, true}})
    expect_matches_cpu(named_model_spec("mlp"), {1, 28, 28}, 64, 10 * 64 + 20, "cross-entropy", o, 0.05);
}

// The dense chain on other all-dense models: four hidden layers of odd widths and every activation (a layer of
// 37 inputs: no float4 rows), inputs of 105 values, a batch of 100 (the update stages it in two rounds, a
// cluster of 6 rows ends short), a batch of 5, mean squared error, a lone head (no hidden layer), and 3
// classes instead of 10 (the head's generic path).
TEST(Stage08_Engine, DenseChainMatchesStage01OnOtherMlps) {
  SKIP_WITHOUT_GPU();
  const std::string deep = "fc100,tanh,fc37,leaky,fc50,sigmoid,fc24,softplus,fc10";
  for (const auto& [spec, input] : {std::pair<std::string, Shape3>{deep, {1, 28, 28}}, {"fc33,relu,fc20,fc10", {3, 5, 7}},
                                    {"fc10", {1, 6, 6}}})
    EXPECT_EQ(Fused(comparison_config(spec, input, 8)).step().dense_chain_enabled(), gpu_has(GpuFeature::EarlyLaunch))
        << spec << " runs as the chain where the GPU has clusters, as separate kernels elsewhere";
  expect_matches_cpu(deep, {1, 28, 28}, 16, 12 * 16 + 5, "cross-entropy", {}, 0.05);
  expect_matches_cpu("fc33,relu,fc20,fc10", {3, 5, 7}, 100, 3 * 100 + 7, "cross-entropy", {}, 0.05);
  expect_matches_cpu("fc33,softplus,fc10", {3, 5, 7}, 5, 9 * 5 + 2, "mse", {}, 0.05);
  expect_matches_cpu("fc10", {1, 6, 6}, 8, 6 * 8 + 3, "cross-entropy", {}, 0.05);
  expect_matches_cpu("fc40,relu,fc3", {1, 28, 28}, 32, 4 * 32 + 9, "cross-entropy", {}, 0.05, {}, 3);
}

// The dense chain on shapes small enough for compute-sanitizer's racecheck: inputs of 25 values (no float4
// rows) and of 16 (float4 rows), short batches, three and two layers.
TEST(Stage08_Engine, DenseChainOnSmallShapes) {
  SKIP_WITHOUT_GPU();
  expect_matches_cpu("fc12,relu,fc9,tanh,fc10", {1, 5, 5}, 8, 3 * 8 + 3, "cross-entropy", {}, 0.05);
  expect_matches_cpu("fc8,relu,fc10", {1, 4, 4}, 7, 3 * 7 + 2, "mse", {}, 0.05);
}

// Which models the dense chain runs, and its step: two kernels, captured as a graph of two nodes, the same
// bits launched one by one; the `cnn` never (a conv layer), nor a persistent or profiled run.
TEST(Stage08_Engine, MlpStepIsTheDenseChainsTwoKernels) {
  SKIP_WITHOUT_GPU();
  if (!gpu_has(GpuFeature::EarlyLaunch)) GTEST_SKIP() << "the dense chain: " << without_feature_note(GpuFeature::EarlyLaunch);
  const Dataset train = make_synthetic(1000, {1, 28, 28}, 10, 101);
  const EngineConfig cfg = comparison_config(named_model_spec("mlp"), {1, 28, 28}, 64);
  Fused with_graph(cfg), without(cfg, FusedOptions{false, false});
  ASSERT_TRUE(with_graph.step().dense_chain_enabled()) << "an sm_90 GPU runs clusters";
  EXPECT_EQ(with_graph.step().kernels_per_step(), 2);
  for (int epoch = 0; epoch < 2; ++epoch) {
    const EpochStats a = with_graph->train_epoch(train, epoch, {});
    const EpochStats b = without->train_epoch(train, epoch, {});
    EXPECT_EQ(a.correct, b.correct) << "epoch " << epoch;
    EXPECT_NEAR(a.loss_sum, b.loss_sum, 1e-9 * b.loss_sum) << "epoch " << epoch << " (summed with atomics)";
  }
  EXPECT_EQ(with_graph->graph_nodes(), 2u) << "the chain and its update";
  expect_same_bits(with_graph->get_parameters(), without->get_parameters(), "the chain, graph against plain launches");
  const nlohmann::json j = with_graph->stage_results();
  ASSERT_EQ(j.at("step").at("kernels").size(), 2u);
  EXPECT_EQ(j.at("step").at("kernels")[0].at("kernel"), "dense chain (clusters)");
  EXPECT_EQ(j.at("step").at("kernels")[1].at("kernel"), "dense chain update");
  EXPECT_FALSE(Fused(comparison_config(named_model_spec("cnn"), {1, 28, 28}, 64)).step().dense_chain_enabled());
  EXPECT_FALSE(Fused(cfg, FusedOptions{false, true}).step().dense_chain_enabled()) << "persistent";
  EngineConfig profiled = cfg;
  profiled.profile = true;
  EXPECT_FALSE(Fused(profiled).step().dense_chain_enabled()) << "--profile times Tasks 8.4 to 8.7's kernels";
}

// The graph changes how a step is launched, not what it computes: the same kernels in
// the same order, every sum in a fixed order, so two epochs give the same bits. The
// set has 15 full batches of 64 and a last one of 40.
TEST(Stage08_Engine, GraphAndPlainLaunchesGiveTheSameBits) {
  SKIP_WITHOUT_GPU();
  const Dataset train = make_synthetic(1000, {1, 28, 28}, 10, 101);
  const EngineConfig cfg = comparison_config(named_model_spec("cnn"), {1, 28, 28}, 64);
  Fused with_graph(cfg, FusedOptions{true, false}), without(cfg, FusedOptions{false, false});
  for (int epoch = 0; epoch < 2; ++epoch) {
    const EpochStats a = with_graph->train_epoch(train, epoch, {});
    const EpochStats b = without->train_epoch(train, epoch, {});
    EXPECT_EQ(a.correct, b.correct) << "epoch " << epoch;
    EXPECT_NEAR(a.loss_sum, b.loss_sum, 1e-9 * b.loss_sum) << "epoch " << epoch << " (summed with atomics)";
  }
  EXPECT_EQ(with_graph->graph_replays(), 30) << "15 full batches an epoch, each one replay";
  EXPECT_EQ(with_graph->graph_nodes(), 9u) << "gather, 3 forward, the head, 3 backward, the update";
  EXPECT_EQ(with_graph.step().kernels_per_step(), 9);
  EXPECT_EQ(without->graph_replays(), 0);
  expect_same_bits(with_graph->get_parameters(), without->get_parameters(), "graph against plain launches");
}

// The warm-up before the first epoch runs the whole step once uncounted (its update off, the step
// counter untouched) for the full batch and the last one of 40, and captures it: the run that
// follows ends on the same bits as one without it.
TEST(Stage08_Engine, WarmUpChangesNothingTrainingComputes) {
  SKIP_WITHOUT_GPU();
  const Dataset train = make_synthetic(1000, {1, 28, 28}, 10, 101);
  const EngineConfig cfg = comparison_config(named_model_spec("cnn"), {1, 28, 28}, 64);
  Fused warmed(cfg, FusedOptions{true, false}), cold(cfg, FusedOptions{true, false});
  const std::string what = warmed->warm_up(train);
  EXPECT_NE(what.find("captured as a CUDA graph"), std::string::npos) << what;
  EXPECT_EQ(warmed->graph_captures(), 1);
  for (int epoch = 0; epoch < 2; ++epoch) {
    const EpochStats a = warmed->train_epoch(train, epoch, {}), b = cold->train_epoch(train, epoch, {});
    EXPECT_EQ(a.correct, b.correct) << "epoch " << epoch;
    EXPECT_NEAR(a.loss_sum, b.loss_sum, 1e-9 * b.loss_sum) << "epoch " << epoch << " (summed with atomics)";
  }
  EXPECT_EQ(warmed->graph_captures(), 1) << "epoch 1 replays the step the warm-up captured";
  EXPECT_EQ(warmed->graph_replays(), 30);
  expect_same_bits(warmed->get_parameters(), cold->get_parameters(), "warmed up against cold");
  expect_same_bits(warmed->get_optimizer_state(), cold->get_optimizer_state(), "their velocities");
}

/// A GradientSync that only counts its calls: with one, the engine runs the step its own way, as data parallelism does.
class CountingSync : public GradientSync {
 public:
  void gradients_queued(const GradientRange& range, cudaStream_t) override {
    ++queued;
    values += range.size();
  }
  void before_update(cudaStream_t) override { ++updates; }
  bool uses_each_layer() const override { return each_layer; }
  bool each_layer = true;  // false: the flat schedules, which let backward() finish every layer at the end
  long queued = 0, updates = 0;
  std::size_t values = 0;
};

// Under data parallelism the all-reduce needs every gradient whole in the engine's buffer, so
// the step runs the engine's sequence (its gather, then forward, loss, backward, update), and
// backward() adds each layer's partial sums into the buffer as the layer finishes (or every
// layer's in one launch at the end, for a sync that waits for the whole pass). Those sums run
// in the order the fused update adds them, so all ways end with the same bits; the hooks see
// every layer once a step queued, its whole gradient.
TEST(Stage08_Engine, TheEnginesSequenceTrainsTheSameBitsAsTheFusedStep) {
  SKIP_WITHOUT_GPU();
  const Dataset train = make_synthetic(1000, {1, 28, 28}, 10, 103);  // 15 batches of 64 and one of 40
  FusedOptions chain_off;  // the chain runs only as whole steps: compare what the engine's way runs
  chain_off.dense_chain = false;
  for (const std::string model : {"cnn", "mlp", "cnn/at the end"}) {
    const bool each_layer = model.find('/') == std::string::npos;
    const EngineConfig cfg = comparison_config(named_model_spec(model.substr(0, model.find('/'))), {1, 28, 28}, 64);
    Fused whole(cfg, chain_off), engines_way(cfg, chain_off);
    CountingSync sync;
    sync.each_layer = each_layer;
    engines_way->set_gradient_sync(&sync);
    for (int epoch = 0; epoch < 2; ++epoch) {
      const EpochStats a = whole->train_epoch(train, epoch, {});
      const EpochStats b = engines_way->train_epoch(train, epoch, {});
      EXPECT_EQ(a.correct, b.correct) << model << ", epoch " << epoch;
      EXPECT_NEAR(a.loss_sum, b.loss_sum, 1e-9 * a.loss_sum) << model << ", epoch " << epoch;
    }
    // The hooks run as a step is queued: a replay of the captured step repeats what they queued.
    const auto steps_queued = static_cast<std::size_t>(sync.updates);
    EXPECT_GT(steps_queued, 0u) << model;
    EXPECT_EQ(static_cast<std::size_t>(sync.queued), steps_queued * whole.step().layers().size())
        << model << ": every layer once a step";
    EXPECT_EQ(sync.values, steps_queued * engines_way->parameter_count()) << model << ": every gradient value once a step";
    EXPECT_GT(engines_way->graph_replays(), 0) << model << ": the engine's way is captured too";
    expect_same_bits(whole->get_parameters(), engines_way->get_parameters(), model + ", the engine's way");
  }
}

// The learning rate lives in device memory, where the update reads it: a schedule's new
// rate reaches the captured step (which the engine captures anew) as it reaches the plain launches.
TEST(Stage08_Engine, TheLearningRateScheduleReachesTheCapturedStep) {
  SKIP_WITHOUT_GPU();
  const Dataset train = make_synthetic(6 * 64, {1, 28, 28}, 10, 102);
  const EngineConfig cfg = comparison_config(named_model_spec("cnn"), {1, 28, 28}, 64, 0.05);
  Fused with_graph(cfg, FusedOptions{true, false}), without(cfg, FusedOptions{false, false}), fixed(cfg);
  for (int epoch = 0; epoch < 3; ++epoch) {
    const double lr = 0.05 / (epoch + 1);
    with_graph->set_learning_rate(lr);
    without->set_learning_rate(lr);
    with_graph->train_epoch(train, epoch, {});
    without->train_epoch(train, epoch, {});
    fixed->train_epoch(train, epoch, {});
  }
  expect_same_bits(with_graph->get_parameters(), without->get_parameters(), "a new rate every epoch");
  const auto p = with_graph->get_parameters(), q = fixed->get_parameters();
  std::size_t differ = 0;
  for (std::size_t k = 0; k < p[0].tensor.size(); ++k) differ += p[0].tensor.data[k] != q[0].tensor.data[k];
  EXPECT_GT(differ, 0u) << "the rates of epochs 2 and 3 changed nothing: the captured step kept the first";
}

// Evaluation: the same loss, predictions and count as stage 02 on the same weights.
TEST(Stage08_Engine, EvaluateMatchesStage02) {
  SKIP_WITHOUT_GPU();
  Fused gpu(cnn_evaluation_config());
  expect_cnn_evaluation_like_stage02(*gpu);
}

// --profile: a row per fused layer, then the gather and the update, timed every step.
TEST(Stage08_Engine, ProfileTimesEveryFusedLayer) {
  SKIP_WITHOUT_GPU();
  EngineConfig cfg = comparison_config(named_model_spec("cnn"), {1, 28, 28}, 64);
  cfg.profile = true;
  Fused gpu(cfg);
  EXPECT_FALSE(gpu->graph_enabled()) << "profiling times each kernel, so it runs uncaptured";
  gpu->train_epoch(make_synthetic(5 * 64, {1, 28, 28}, 10, 8), 0, {});
  const std::vector<LayerTime> times = gpu->layer_times();
  ASSERT_EQ(times.size(), 4u + 2u) << "conv1, conv2, fc1, the head, then gather and update (the loss is the head's)";
  EXPECT_EQ(times[0].layer, "conv1+relu1+pool1 (conv16k3p1,relu,pool2)");
  EXPECT_EQ(times[3].layer, "fc2+loss (fc10)");
  for (const LayerTime& t : times) {
    EXPECT_EQ(t.calls, 5) << t.layer;
    EXPECT_GT(t.forward_ms + t.backward_ms, 0.0) << t.layer;
  }
  EXPECT_GT(times[0].backward_ms, 0.0) << "conv1's weight gradient";
}

// A checkpoint holds parameters and velocities: an engine given both continues exactly
// as the one they came from.
TEST(Stage08_Engine, OptimizerStateContinuesTheRunBitForBit) {
  SKIP_WITHOUT_GPU();
  const Dataset train = make_synthetic(5 * 32 + 7, {1, 28, 28}, 10, 9);
  const EngineConfig cfg = comparison_config(named_model_spec("cnn"), {1, 28, 28}, 32);
  Fused first(cfg);
  first->train_epoch(train, 0, {});
  const auto velocity = first->get_optimizer_state();
  EXPECT_EQ(velocity[0].name, "conv1.weight.velocity");
  Fused resumed(cfg);
  resumed->set_parameters(first->get_parameters());
  resumed->set_optimizer_state(velocity);
  first->train_epoch(train, 1, {});
  resumed->train_epoch(train, 1, {});
  expect_same_bits(first->get_parameters(), resumed->get_parameters(), "resumed");
  auto wrong = velocity;
  wrong[0].name = "conv1.weight";
  EXPECT_THROW(resumed->set_optimizer_state(wrong), std::invalid_argument) << "names must end in .velocity";
}

// The step's kernel table: nine kernels for cnn, each with what it reads and writes, and
// fewer bytes than the same step layer by layer.
TEST(Stage08_Engine, StepTableOfCnn) {
  SKIP_WITHOUT_GPU();
  Fused gpu(comparison_config(named_model_spec("cnn"), {1, 28, 28}, 64));
  const nlohmann::json j = gpu->stage_results();
  EXPECT_EQ(j.at("kernels_per_step").get<int>(), 9);
  ASSERT_EQ(j.at("step").at("kernels").size(), 9u);
  EXPECT_EQ(j.at("step").at("kernels")[0].at("kernel"), "batch gather");
  EXPECT_EQ(j.at("step").at("kernels")[8].at("kernel"), "sgd update (multi-tensor)");
  EXPECT_EQ(j.at("layer_by_layer").at("kernels").get<int>(), 21);
  EXPECT_LT(j.at("step").at("bytes_written").get<long long>(), j.at("layer_by_layer").at("bytes_written").get<long long>());
  EXPECT_NE(gpu.step().step_table().find("conv block backward"), std::string::npos);
}

// Bad requests are refused with a message, before the GPU is touched where possible.
TEST(Stage08_Engine, RefusesWhatItCannotRun) {
  EXPECT_THROW(FusedStep step(comparison_config("conv8k3p1s2,relu,pool2,fc10", {1, 28, 28}, 8)), std::invalid_argument);
  EXPECT_THROW(FusedStep step(comparison_config(named_model_spec("cnn"), {1, 28, 28}, 8, 0.05, "hinge")), std::invalid_argument);
  SKIP_WITHOUT_GPU();
  Fused engine(comparison_config(named_model_spec("cnn"), {1, 28, 28}, 64));
  auto params = engine->get_parameters();
  params[0].tensor.shape = {16, 1, 5, 5};
  EXPECT_THROW(engine->set_parameters(params), std::invalid_argument);
  EXPECT_THROW(engine->train_batch(0), std::logic_error) << "a batch before begin_epoch";
  EXPECT_THROW(engine->evaluate(make_synthetic(10, {3, 28, 28}, 10, 1), nullptr), std::invalid_argument)
      << "examples of another shape";
}
