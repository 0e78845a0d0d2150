// Stage 09's engine in one process, on one GPU: a data-parallel run of one
// rank is stage 06 bit for bit (the multi-process code path: the shard plan,
// the weighted all-reduce, its schedules, the sums over the ranks), and the
// step of a rank without examples updates as it must.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "06_cudnn/cudnn_step.hpp"
#include "common/gpu/gpu_engine.hpp"
#include "09_multi_gpu/communicator.hpp"
#include "09_multi_gpu/data_parallel_engine.hpp"
#include "common/data/data.hpp"
#include "common/train/trainer.hpp"
#include "s09_support.hpp"

using namespace course;
using namespace course::s09test;

namespace {

EngineConfig config(const std::string& spec, int batch, bool profile = false) {
  EngineConfig cfg;
  cfg.arch = parse_arch(spec);
  cfg.input = {1, 28, 28};
  cfg.classes = 10;
  cfg.batch = batch;
  cfg.lr = 0.05;
  cfg.momentum = 0.9;
  cfg.seed = 13;
  cfg.profile = profile;
  return cfg;
}

// Stage 06's step in the one GPU engine: what stage 09's trainer gives each rank by default.
std::unique_ptr<GpuEngine> cudnn_engine(const EngineConfig& cfg, bool graph) {
  return std::make_unique<GpuEngine>(cfg, std::make_unique<CudnnStep>(cfg), std::vector<NamedTensor>{},
                                     GpuEngineOptions{graph});
}

std::unique_ptr<DataParallelEngine> world_of_one(const EngineConfig& cfg, bool graph, const std::string& allreduce,
                                                 std::size_t bucket_bytes) {
  auto comm = std::make_unique<Communicator>(new_unique_id(), 0, 1, 60);
  return std::make_unique<DataParallelEngine>(cudnn_engine(cfg, graph), std::move(comm), cfg,
                                              DataParallelOptions{allreduce, bucket_bytes});
}

std::size_t differing_bits(const std::vector<NamedTensor>& a, const std::vector<NamedTensor>& b, std::string* where) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const std::size_t here = differing_values(a[i].tensor.data, b[i].tensor.data);
    if (here > 0 && where->empty()) *where = a[i].name;
    n += here;
  }
  return n + (a.size() != b.size() ? 1 : 0);
}

}  // namespace

// Two epochs of 20 steps and a short one (batch 32, 647 examples), the learning
// rate changed between them, then an evaluation: the same bits as stage 06.
TEST(Stage09_Engine, AWorldOfOneIsStage06BitForBit) {
  S09_SKIP_WITHOUT_GPUS(1);
  const EngineConfig cfg = config(named_model_spec("cnn"), 32);
  const Dataset train = make_synthetic(20 * 32 + 7, cfg.input, 10, 21), test = make_synthetic(333, cfg.input, 10, 22);
  for (const bool graph : {true, false})
    for (const std::string allreduce : {"flat", "buckets"}) {
      const std::string what = std::string("graph ") + (graph ? "on" : "off") + ", " + allreduce;
      SCOPED_TRACE(what);
      GpuEngine reference(cfg, std::make_unique<CudnnStep>(cfg), {}, GpuEngineOptions{graph});
      // 16 KiB: the cnn's gradients in 3 buckets, fc2-fc1 (617 KiB), conv2 (18 KiB), conv1 (under 1 KiB)
      auto dp = world_of_one(cfg, graph, allreduce, 16 * 1024);
      if (allreduce == "buckets") {
        EXPECT_EQ(dp->buckets().size(), 3u);
      }
      for (int epoch = 0; epoch < 2; ++epoch) {
        const double lr = scheduled_learning_rate(cfg.lr, "cosine", epoch, 2);
        reference.set_learning_rate(lr);
        dp->set_learning_rate(lr);
        const EpochStats want = reference.train_epoch(train, epoch, {});
        long last_done = 0;
        int calls = 0;
        const EpochStats got = dp->train_epoch(train, epoch, [&](long done, double) {
          last_done = done;
          ++calls;
        });
        EXPECT_EQ(got.loss_sum, want.loss_sum) << "epoch " << epoch;
        EXPECT_EQ(got.correct, want.correct) << "epoch " << epoch;
        EXPECT_EQ(got.seen, want.seen) << "epoch " << epoch;
        EXPECT_EQ(calls, 21) << "one callback per step";
        EXPECT_EQ(last_done, train.size());
      }
      std::string where;
      EXPECT_EQ(differing_bits(dp->get_parameters(), reference.get_parameters(), &where), 0u)
          << "parameters differ, the first in " << where;
      EXPECT_EQ(differing_bits(dp->get_optimizer_state(), reference.get_optimizer_state(), &where), 0u)
          << "velocities differ, the first in " << where;
      if (graph) {
        EXPECT_GT(dp->local().graph_replays(), 0) << "full steps replay a graph, all-reduce included";
      }
      std::vector<int> got_pred, want_pred;
      const EpochStats got = dp->evaluate(test, &got_pred), want = reference.evaluate(test, &want_pred);
      EXPECT_EQ(got.loss_sum, want.loss_sum);
      EXPECT_EQ(got.correct, want.correct);
      EXPECT_EQ(got_pred, want_pred);
    }
}

// The trainer's facts about the run, and the one-rank answers to the questions of several.
TEST(Stage09_Engine, AWorldOfOneSpeaksForItselfAndStopsWhereAsked) {
  S09_SKIP_WITHOUT_GPUS(1);
  auto dp = world_of_one(config(named_model_spec("mlp"), 64), true, "buckets", 128 * 1024);
  EXPECT_TRUE(dp->writes_files());
  EXPECT_TRUE(dp->stop_requested(true, false)) << "alone, a rank stops after the step, as stage 06 does";
  EXPECT_FALSE(dp->stop_requested(false, true));
  const nlohmann::json facts = dp->stage_results();
  EXPECT_EQ(facts.at("ranks"), 1);
  EXPECT_EQ(facts.at("global_batch"), 64);
  EXPECT_EQ(facts.at("nccl_nvls_enable"), keep_nvlink_multicast_off()) << "the run reports NVLink multicast's setting";
  EXPECT_EQ(facts.at("gradient_bytes"), 235146 * 4) << "the mlp's parameters";
  EXPECT_EQ(dp->device().rfind("1 x ", 0), 0u) << dp->device();
}

// --profile: the local engine's rows, then one per bucket and the wait.
TEST(Stage09_Engine, ProfileTimesTheAllReduce) {
  S09_SKIP_WITHOUT_GPUS(1);
  auto dp = world_of_one(config(named_model_spec("cnn"), 64, /*profile=*/true), true, "buckets", 128 * 1024);
  dp->train_epoch(make_synthetic(4 * 64, {1, 28, 28}, 10, 8), 0, {});
  const std::vector<LayerTime> rows = dp->layer_times();
  int buckets = 0, waits = 0;
  for (const LayerTime& t : rows) {
    if (t.layer.rfind("all-reduce, bucket", 0) == 0) {
      ++buckets;
      EXPECT_EQ(t.calls, 4) << t.layer;
      EXPECT_GT(t.backward_ms, 0.0) << t.layer;
    }
    if (t.layer == "wait for the all-reduce") ++waits;
  }
  EXPECT_EQ(buckets, 2) << "fc2-fc1 and conv2-conv1";
  EXPECT_EQ(waits, 1);
}

// The step of a rank whose slice of a short last step is empty: no examples,
// zero gradients, the same update as every other rank (here: momentum alone).
TEST(Stage09_Engine, AStepWithoutExamplesIsAnUpdateWithZeroGradients) {
  S09_SKIP_WITHOUT_GPUS(1);
  EngineConfig cfg = config(named_model_spec("mlp"), 64);
  GpuEngine engine(cfg, std::make_unique<CudnnStep>(cfg), {}, GpuEngineOptions{true});
  const Dataset train = make_synthetic(100, cfg.input, 10, 3);
  engine.begin_epoch(train, 0);
  ASSERT_EQ(engine.num_batches(), 2);
  EXPECT_THROW(engine.train_batch_without_examples(), std::logic_error) << "batch 0 has examples";
  engine.train_batch(0);
  engine.train_batch(1);
  const auto w = engine.get_parameters(), v = engine.get_optimizer_state();
  engine.train_batch_without_examples();
  const EpochStats stats = engine.end_epoch();
  EXPECT_EQ(stats.seen, 100);
  const auto w2 = engine.get_parameters(), v2 = engine.get_optimizer_state();
  for (std::size_t t = 0; t < w.size(); ++t)
    for (std::size_t i = 0; i < w[t].tensor.size(); ++i) {
      const float velocity = 0.9f * v[t].tensor.data[i];
      ASSERT_EQ(v2[t].tensor.data[i], velocity) << w[t].name << " " << i << ": v = momentum v + 0";
      const float want = w[t].tensor.data[i] - 0.05f * velocity;
      ASSERT_NEAR(w2[t].tensor.data[i], want, 1e-6f * (1.f + std::fabs(want))) << w[t].name << " " << i;
    }
  // An order other than the epoch's: begin_epoch_in_order checks its indices.
  EXPECT_THROW(engine.begin_epoch_in_order(train, {0, 5, 100}), std::invalid_argument);
}

TEST(Stage09_Engine, RefusesABatchThatDoesNotMatchItsShare) {
  S09_SKIP_WITHOUT_GPUS(1);
  const EngineConfig global = config(named_model_spec("mlp"), 64);
  EngineConfig local = global;
  local.batch = 32;  // a rank of one holds the whole global batch
  auto comm = std::make_unique<Communicator>(new_unique_id(), 0, 1, 60);
  EXPECT_THROW(DataParallelEngine(cudnn_engine(local, true), std::move(comm), global,
                                  DataParallelOptions{}),
               std::invalid_argument);
}
