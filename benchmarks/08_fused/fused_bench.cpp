// Stage 08 benchmarks: one training step of the CNN and of the MLP at batch 64 on
// Fashion-MNIST's 1x28x28, as the fused engine runs it: replayed as one CUDA graph
// (BM_TrainStep_*, the names of stages 05 and 06, so that Google Benchmark's compare
// tool sets the stages side by side), the same graph with every kernel waiting for the
// one before it to finish before it is scheduled (BM_TrainStepLateLaunch_*, --early-launch off),
// launched kernel by kernel (BM_TrainStepEager_*, as stage 06 names its uncaptured step) and
// as one persistent kernel (BM_TrainStepPersistent_*).
//
//   build/bin/s08_bench
//   compare.py benchmarks s06.json s08.json      (Google Benchmark's tool: same names)
//
// Timing: CUDA events on the engine's stream around kSteps steps queued back to back,
// as the trainer queues them, through UseManualTime; items are images.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "08_fused/fused_step.hpp"
#include "benchmarks/support/gpu_benchmark.hpp"
#include "common/data/data.hpp"

namespace {

constexpr int kBatch = 64;
constexpr int kSteps = 16;  // training steps per timed interval

/// kSteps training steps of `model` per iteration; epochs of 64 batches roll over between
/// iterations, outside the timing. A failed CUDA call ends this benchmark with its message.
void train_steps(benchmark::State& state, const std::string& model, const course::FusedOptions& options) {
  course::bench::run_on_gpu(state, [&] {
    course::EngineConfig cfg;
    cfg.arch = course::parse_arch(course::named_model_spec(model));
    cfg.input = {1, 28, 28};
    cfg.classes = 10;
    cfg.batch = kBatch;
    const course::Dataset data = course::make_synthetic(64 * kBatch, cfg.input, cfg.classes, 1);
    const std::unique_ptr<course::GpuEngine> owned = course::make_fused_engine(cfg, options);
    course::GpuEngine& engine = *owned;
    const course::FusedStep& step = course::fused_step(engine);
    int epoch = 0, next = 0;
    engine.begin_epoch(data, epoch);
    auto roll_over = [&] {
      engine.end_epoch();
      engine.begin_epoch(data, ++epoch);
      next = 0;
    };
    for (int i = 0; i < 8; ++i) engine.train_batch(next++);  // warm-up: the capture happens here
    course::bench::EventTimer timer;
    for (auto _ : state) {
      if (next + kSteps > engine.num_batches()) roll_over();  // before the timing starts
      const double ms = timer.time_ms(engine.stream(), [&] {
        for (int i = 0; i < kSteps; ++i) engine.train_batch(next++);
      });
      state.SetIterationTime(ms / 1e3 / kSteps);
    }
    engine.end_epoch();
    state.SetItemsProcessed(state.iterations() * kBatch);
    state.SetLabel(model + " batch " + std::to_string(kBatch) + " on 1x28x28, " +
                   (step.early_launch_enabled() ? "kernels launched early, " : "") +
                   (step.persistent_enabled() ? "1 persistent kernel of " + std::to_string(step.persistent_grid()) + " blocks"
                    : engine.graph_enabled()  ? "CUDA graph of " + std::to_string(engine.graph_nodes()) + " kernels"
                                              : std::to_string(step.kernels_per_step()) + " kernels, uncaptured"));
  });
}

void BM_TrainStep_CNN(benchmark::State& state) { train_steps(state, "cnn", {true, false}); }
void BM_TrainStep_MLP(benchmark::State& state) { train_steps(state, "mlp", {true, false}); }
void BM_TrainStepLateLaunch_CNN(benchmark::State& state) { train_steps(state, "cnn", {true, false, false}); }
void BM_TrainStepLateLaunch_MLP(benchmark::State& state) { train_steps(state, "mlp", {true, false, false}); }
void BM_TrainStepEager_CNN(benchmark::State& state) { train_steps(state, "cnn", {false, false}); }
void BM_TrainStepEager_MLP(benchmark::State& state) { train_steps(state, "mlp", {false, false}); }
void BM_TrainStepPersistent_CNN(benchmark::State& state) { train_steps(state, "cnn", {false, true}); }
void BM_TrainStepPersistent_MLP(benchmark::State& state) { train_steps(state, "mlp", {false, true}); }

}  // namespace

BENCHMARK(BM_TrainStep_CNN)->UseManualTime();
BENCHMARK(BM_TrainStep_MLP)->UseManualTime();
BENCHMARK(BM_TrainStepLateLaunch_CNN)->UseManualTime();
BENCHMARK(BM_TrainStepLateLaunch_MLP)->UseManualTime();
BENCHMARK(BM_TrainStepEager_CNN)->UseManualTime();
BENCHMARK(BM_TrainStepEager_MLP)->UseManualTime();
BENCHMARK(BM_TrainStepPersistent_CNN)->UseManualTime();
BENCHMARK(BM_TrainStepPersistent_MLP)->UseManualTime();

BENCHMARK_MAIN();
