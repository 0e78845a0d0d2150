// Stage 04: the GPU engine with the MLP step, as the trainer uses it: what it refuses,
// where it starts, its parameters, its profile, its CUDA graph, and every gemm kernel inside it.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "01_fc_softmax/network.hpp"
#include "common/train/checkpoint.hpp"
#include "engine_config.hpp"
#include "gpu_testkit.hpp"
#include "mlp_comparison.hpp"
#include "mlp_engine.hpp"

using namespace course;
using namespace course::gputest;

namespace {

EngineConfig config_for(const std::string& spec, Shape3 input, int batch) {
  EngineConfig cfg = testkit::engine_config(spec, input, 10, batch);
  cfg.seed = 23;
  return cfg;
}

}  // namespace

// The refusals come before any GPU work, so these run anywhere.
TEST(Stage04_GpuEngine, RefusesConvolutionsAndSaysWhy) {
  const EngineConfig cfg = config_for("conv8k3p1,relu,pool2,fc10", {1, 28, 28}, 8);
  const std::string m = message_of([&] { GpuEngine engine = mlp_engine(cfg); });
  EXPECT_NE(m.find("conv8k3p1"), std::string::npos) << m;
  EXPECT_NE(m.find("dense networks"), std::string::npos) << m;
}

TEST(Stage04_GpuEngine, RefusesUnknownLossAndKernel) {
  EngineConfig cfg = config_for("fc16,relu,fc10", {1, 28, 28}, 8);
  EXPECT_THROW({ GpuEngine engine = mlp_engine(cfg, kNumGemmKernels); }, std::invalid_argument);
  cfg.loss = "hinge";
  EXPECT_NE(message_of([&] { GpuEngine engine = mlp_engine(cfg); }).find("hinge"), std::string::npos);
}

TEST(Stage04_GpuEngine, RefusesSingleBlockKernelForTheMlp) {
  const EngineConfig cfg = config_for("fc256,relu,fc128,relu,fc10", {1, 28, 28}, 64);
  const std::string m = message_of([&] { GpuEngine engine = mlp_engine(cfg, kGemmSingleBlock); });
  EXPECT_NE(m.find("kernel 1"), std::string::npos) << m;
  EXPECT_NE(m.find("1024"), std::string::npos) << m;
}

// course::upload_once copies a data set to the device again only when its fingerprint
// changes, so the fingerprint must change with every part it reads. Host code: runs anywhere.
TEST(Stage04_GpuEngine, DatasetFingerprintChangesWithEveryPartItReads) {
  const int n = 5000;  // more than the 4096 images sampled: image s * n / 4096 is sample s
  const Dataset data = make_synthetic(n, {1, 28, 28}, 10, 3);
  const long D = data.shape.size();
  const std::uint64_t fp = dataset_fingerprint(data);
  EXPECT_EQ(dataset_fingerprint(Dataset(data)), fp) << "a copy";
  const auto edited = [&](const std::function<void(Dataset&)>& edit) {
    Dataset d = data;
    edit(d);
    return dataset_fingerprint(d);
  };
  EXPECT_NE(edited([](Dataset& d) { d.labels[2500] = (d.labels[2500] + 1) % 10; }), fp) << "a label";
  EXPECT_NE(edited([&](Dataset& d) { d.images[D - 1] += 1.0f; }), fp) << "the first image's last value";
  EXPECT_NE(edited([&](Dataset& d) { d.images[(n - 1) * D + 400] += 1.0f; }), fp) << "a value of the last image";
  // Sample 100 is image 100 * 5000 / 4096 = 122, its run values 1600 % 769 = 62 to 77.
  EXPECT_NE(edited([&](Dataset& d) { d.images[122 * D + 62] += 1.0f; }), fp) << "the run's first value";
  EXPECT_NE(edited([&](Dataset& d) { d.images[122 * D + 77] += 1.0f; }), fp) << "the run's last value";
  EXPECT_NE(dataset_fingerprint(make_synthetic(n, {1, 28, 28}, 10, 4)), fp) << "another set of the same size";
  EXPECT_NE(dataset_fingerprint(remaining_examples(data, 3, 0, 64)), fp) << "a resumed epoch's remaining examples";
  Dataset shorter = data;
  shorter.truncate(n - 1);
  EXPECT_NE(dataset_fingerprint(shorter), fp) << "one example fewer";
}

// Same seed, same model: the weights every stage starts from, bit for bit.
TEST(Stage04_GpuEngine, StartsFromTheWeightsOfEveryStage) {
  SKIP_WITHOUT_GPU();
  const EngineConfig cfg = config_for("fc256,relu,fc128,relu,fc10", {1, 28, 28}, 64);
  GpuEngine engine = mlp_engine(cfg);
  const std::vector<NamedTensor> got = engine.get_parameters();
  const std::vector<NamedTensor> want = initial_parameters(cfg.arch, cfg.input, cfg.classes, cfg.seed);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].name, want[i].name);
    EXPECT_EQ(got[i].tensor.shape, want[i].tensor.shape);
    EXPECT_EQ(got[i].tensor.data, want[i].tensor.data) << got[i].name;
  }
}

TEST(Stage04_GpuEngine, SetParametersChecksAndRoundTrips) {
  SKIP_WITHOUT_GPU();
  const EngineConfig cfg = config_for("fc16,tanh,fc10", {1, 4, 4}, 8);
  GpuEngine engine = mlp_engine(cfg);
  std::vector<NamedTensor> params = engine.get_parameters();
  for (auto& p : params)
    for (auto& v : p.tensor.data) v += 0.5f;
  engine.set_parameters(params);
  const std::vector<NamedTensor> back = engine.get_parameters();
  for (std::size_t i = 0; i < params.size(); ++i) EXPECT_EQ(back[i].tensor.data, params[i].tensor.data);
  params[0].tensor.shape = {4, 16};
  EXPECT_THROW(engine.set_parameters(params), std::invalid_argument);
  params.pop_back();
  EXPECT_THROW(engine.set_parameters(params), std::invalid_argument);
}

// A checkpoint holds the parameters and the velocities: restored into a fresh
// engine, the next epoch must end exactly where an uninterrupted run ends.
TEST(Stage04_GpuEngine, OptimizerStateResumesBitForBit) {
  SKIP_WITHOUT_GPU();
  const Dataset data = make_synthetic(200, {1, 28, 28}, 10, 3);
  const EngineConfig cfg = config_for("fc32,relu,fc10", data.shape, 32);
  GpuEngine straight = mlp_engine(cfg), resumed = mlp_engine(cfg);
  straight.train_epoch(data, 0, {});
  resumed.set_parameters(straight.get_parameters());
  const std::vector<NamedTensor> velocity = straight.get_optimizer_state();
  ASSERT_EQ(velocity[0].name, "fc1.weight.velocity");
  resumed.set_optimizer_state(velocity);
  straight.train_epoch(data, 1, {});
  resumed.train_epoch(data, 1, {});
  const std::vector<NamedTensor> a = straight.get_parameters(), b = resumed.get_parameters();
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].tensor.data, b[i].tensor.data) << a[i].name;
}

TEST(Stage04_GpuEngine, RefusesDataThatDoesNotFit) {
  SKIP_WITHOUT_GPU();
  const EngineConfig cfg = config_for("fc16,relu,fc10", {1, 28, 28}, 8);
  GpuEngine engine = mlp_engine(cfg);
  const Dataset wrong_shape = make_synthetic(20, {3, 8, 8}, 10, 1);
  EXPECT_THROW(engine.evaluate(wrong_shape, nullptr), std::invalid_argument);
  Dataset bad_label = make_synthetic(20, {1, 28, 28}, 10, 1);
  bad_label.labels[7] = 10;
  EXPECT_NE(message_of([&] { engine.train_epoch(bad_label, 0, {}); }).find("example 7"), std::string::npos);
}

// --profile: one row per layer plus gather, loss and SGD, each with GPU time.
TEST(Stage04_GpuEngine, ProfileTimesEveryLayerAndStep) {
  SKIP_WITHOUT_GPU();
  const Dataset data = make_synthetic(100, {1, 28, 28}, 10, 1);
  EngineConfig cfg = config_for("fc32,relu,fc10", data.shape, 32);
  cfg.profile = true;
  GpuEngine engine = mlp_engine(cfg);
  engine.train_epoch(data, 0, {});
  engine.evaluate(data, nullptr);  // evaluation is not profiled
  const std::vector<LayerTime> t = engine.layer_times();
  ASSERT_EQ(t.size(), 3u + 3u);
  EXPECT_EQ(t[0].layer, "fc1 (fc32)");
  EXPECT_EQ(t[3].layer, "batch gather");
  for (std::size_t i = 0; i < t.size(); ++i) {
    EXPECT_EQ(t[i].calls, 4) << t[i].layer << ": 4 batches were trained";
    EXPECT_GT(t[i].forward_ms + t[i].backward_ms, 0.0) << t[i].layer;
  }
  engine.reset_layer_times();
  EXPECT_EQ(engine.layer_times()[0].calls, 0);
}

// The same 6 steps on every gemm kernel end where cuBLAS ends (needs Tasks 4.1 to 4.5 too).
// Kernel 1 runs a model small enough for one block per product.
TEST(Stage04_GpuEngine, EveryKernelTrainsLikeCublas) {
  SKIP_WITHOUT_GPU();
  for (int kernel = kGemmSingleBlock; kernel < kNumGemmKernels; ++kernel) {
    const bool tiny = kernel == kGemmSingleBlock;
    const Dataset data = make_synthetic(tiny ? 45 : 6 * 64 - 10, tiny ? Shape3{1, 4, 4} : Shape3{1, 28, 28}, 10, 2);
    const EngineConfig cfg =
        config_for(tiny ? "fc16,relu,fc10" : "fc256,relu,fc128,relu,fc10", data.shape, tiny ? 8 : 64);
    GpuEngine reference = mlp_engine(cfg, kGemmCublas), engine = mlp_engine(cfg, kernel);
    const EpochStats r = reference.train_epoch(data, 0, {});
    const EpochStats s = engine.train_epoch(data, 0, {});
    EXPECT_NEAR(s.loss_sum, r.loss_sum, 1e-4 * r.loss_sum) << "kernel " << kernel;
    const std::vector<NamedTensor> want = reference.get_parameters(), got = engine.get_parameters();
    for (std::size_t i = 0; i < got.size(); ++i)
      EXPECT_TRUE(close_enough(got[i].name + " with kernel " + std::to_string(kernel), got[i].tensor.data,
                               want[i].tensor.data, got[i].tensor.shape, 1e-3, 0.0, 1e-4));
  }
}

// The warm-up before the first epoch (Engine::warm_up: the upload, each batch size's setup, one
// uncounted pass of each, the capture) changes nothing training computes: two epochs after it end
// bit for bit where two epochs without it end, and the step it captured is the one epoch 1 replays.
TEST(Stage04_GpuEngine, WarmUpChangesNothingTrainingComputes) {
  SKIP_WITHOUT_GPU();
  const Dataset data = make_synthetic(5 * 32 + 7, {1, 28, 28}, 10, 5);
  const EngineConfig cfg = config_for("fc32,relu,fc10", data.shape, 32);
  GpuEngine warmed = mlp_engine(cfg, kBestGemm, {}, true), cold = mlp_engine(cfg, kBestGemm, {}, true);
  const std::string what = warmed.warm_up(data);
  EXPECT_NE(what.find("captured as a CUDA graph"), std::string::npos) << what;
  EXPECT_NE(what.find("last batch's 7"), std::string::npos) << what;
  EXPECT_EQ(warmed.graph_captures(), 1);
  EXPECT_EQ(warmed.graph_replays(), 0) << "the warm-up trains nothing";
  for (int epoch = 0; epoch < 2; ++epoch) {
    const EpochStats a = warmed.train_epoch(data, epoch, {}), b = cold.train_epoch(data, epoch, {});
    EXPECT_NEAR(a.loss_sum, b.loss_sum, 1e-12 * b.loss_sum) << "epoch " << epoch << " (summed with atomics)";
    EXPECT_EQ(a.correct, b.correct) << "epoch " << epoch;
    EXPECT_EQ(a.seen, b.seen) << "epoch " << epoch;
  }
  EXPECT_EQ(warmed.graph_captures(), 1) << "epoch 1 replays the step the warm-up captured";
  EXPECT_EQ(cold.graph_captures(), 1);
  EXPECT_EQ(warmed.graph_replays(), cold.graph_replays());
  const std::vector<NamedTensor> a = warmed.get_parameters(), b = cold.get_parameters();
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].tensor.data, b[i].tensor.data) << a[i].name;
  EXPECT_EQ(warmed.get_optimizer_state()[0].tensor.data, cold.get_optimizer_state()[0].tensor.data);
}

// The CUDA graph replays the recorded step for every full batch; the gather reads the
// device's step counter and a new learning rate means a new capture, so two epochs with
// a short last batch and another rate in the second end bit for bit where the step-by-step
// launches end.
TEST(Stage04_GpuEngine, GraphOnTrainsBitForBitAsGraphOff) {
  SKIP_WITHOUT_GPU();
  const Dataset data = make_synthetic(5 * 32 + 7, {1, 28, 28}, 10, 5);
  const EngineConfig cfg = config_for("fc32,relu,fc10", data.shape, 32);
  GpuEngine graph = mlp_engine(cfg, kBestGemm, {}, true), launches = mlp_engine(cfg, kBestGemm, {}, false);
  ASSERT_TRUE(graph.graph_enabled());
  ASSERT_FALSE(launches.graph_enabled());
  for (int epoch = 0; epoch < 2; ++epoch) {
    graph.set_learning_rate(0.01 / (epoch + 1));
    launches.set_learning_rate(0.01 / (epoch + 1));
    const EpochStats a = graph.train_epoch(data, epoch, {}), b = launches.train_epoch(data, epoch, {});
    // The loss is summed with atomicAdd in whatever order the threads come: equal up to that.
    EXPECT_NEAR(a.loss_sum, b.loss_sum, 1e-12 * b.loss_sum) << "epoch " << epoch;
    EXPECT_EQ(a.correct, b.correct) << "epoch " << epoch;
  }
  EXPECT_EQ(graph.graph_replays(), 2 * 5) << "every full batch replayed, the short ones launched";
  EXPECT_EQ(launches.graph_replays(), 0);
  const std::vector<NamedTensor> a = graph.get_parameters(), b = launches.get_parameters();
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].tensor.data, b[i].tensor.data) << a[i].name;
  EXPECT_EQ(graph.get_optimizer_state()[0].tensor.data, launches.get_optimizer_state()[0].tensor.data);
}

// The captured step reads the learning rate from device memory when it runs: a schedule's new rate
// takes effect in the graph already captured, without a second capture. At rate 0 the second
// epoch's replays leave every parameter where the first epoch left it (the velocity still moves).
TEST(Stage04_GpuEngine, NewRateReachesTheCapturedStepWithoutRecapture) {
  SKIP_WITHOUT_GPU();
  const Dataset data = make_synthetic(4 * 32, {1, 28, 28}, 10, 5);
  GpuEngine engine = mlp_engine(config_for("fc32,relu,fc10", data.shape, 32), kBestGemm, {}, true);
  ASSERT_TRUE(engine.graph_enabled());
  engine.set_learning_rate(0.05);
  engine.train_epoch(data, 0, {});
  const std::vector<NamedTensor> after_first = engine.get_parameters();
  const std::vector<float> velocity_first = engine.get_optimizer_state()[0].tensor.data;
  engine.set_learning_rate(0.0);
  engine.train_epoch(data, 1, {});
  EXPECT_EQ(engine.graph_captures(), 1) << "one capture for both rates";
  EXPECT_EQ(engine.graph_replays(), 2 * 4);
  const std::vector<NamedTensor> after_second = engine.get_parameters();
  for (std::size_t i = 0; i < after_first.size(); ++i)
    EXPECT_EQ(after_second[i].tensor.data, after_first[i].tensor.data) << after_first[i].name << " moved at rate 0";
  EXPECT_NE(engine.get_optimizer_state()[0].tensor.data, velocity_first) << "the replays did run";
}
