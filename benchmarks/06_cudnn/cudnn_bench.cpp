// Stage 06 benchmarks: cuDNN's conv forward, backward-data and backward-filter
// and max-pool forward and backward for every such layer of the `cnn` model on
// Fashion-MNIST's 1x28x28 at batch 64, and one training step of the CNN and of
// the MLP, with and without the CUDA graph.
//
//   build/bin/s06_bench
//   build/bin/s06_bench --benchmark_filter='Conv.*/conv2'
//   compare.py benchmarks s02.json s06.json      (Google Benchmark's tool: same names, same shapes)
//
// The names are stage 02's (benchmarks/02_conv_pool): BM_<operation>/<layer>,
// BM_TrainStep_CNN, BM_TrainStep_MLP. As there, BackwardFilter includes the
// bias gradient and ConvForward the bias; items are images, and FLOP/s counts
// 2 FLOPs per multiply-add of the forward pass (the backward passes do as many).
//
// Timing: CUDA events on the stream, reported through UseManualTime. A single
// small cuDNN call takes a few microseconds on the GPU but longer to launch, so
// one call between two events would time the launch. Each layer benchmark
// therefore records kReps calls as one CUDA graph and times its replay: the
// figure is GPU time per call. The training steps are timed kSteps at a time,
// back to back, as the trainer queues them: with the graph that is GPU time,
// without it (BM_TrainStepEager_*) whatever bounds the step, launches included.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "../02_conv_pool/model_layers.hpp"
#include "06_cudnn/conv_algorithms.hpp"
#include "06_cudnn/conv_cudnn.hpp"
#include "06_cudnn/cudnn_step.hpp"
#include "06_cudnn/descriptors.hpp"
#include "06_cudnn/gpu_handles.hpp"
#include "06_cudnn/pool_cudnn.hpp"
#include "common/gpu/gpu_engine.hpp"
#include "common/gpu/step_capture.hpp"
#include "benchmarks/support/gpu_benchmark.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/gpu/cudnn_check.hpp"
#include "common/data/data.hpp"
#include "common/core/rng.hpp"

namespace {

using course::bench::ConvLayerShape;
using course::bench::EventTimer;
using course::bench::PoolLayerShape;
using course::bench::run_on_gpu;

constexpr int kBatch = 64;
constexpr int kReps = 20;   // calls per timed graph replay (layer benchmarks)
constexpr int kSteps = 16;  // training steps per timed interval

course::DeviceBuffer<float> random_device(std::size_t n, std::uint64_t seed) {
  std::vector<float> v(n);
  course::Rng rng(seed);
  rng.fill_normal(v.data(), n, 1.0);
  course::DeviceBuffer<float> d;
  d.upload(v);
  return d;
}

course::ConvGeometry geometry(const ConvLayerShape& s) { return {s.C_in, s.H, s.W, s.C_out, s.K, s.P, s.S}; }
course::PoolGeometry geometry(const PoolLayerShape& s) { return {s.C, s.H, s.W, s.K, s.S, s.P}; }

/// Times `call` (one cuDNN call on the context's stream) as GPU time per call:
/// kReps calls recorded as one graph, replayed once per iteration.
template <typename Call>
void time_calls(benchmark::State& state, const course::GpuContext& ctx, Call&& call) {
  for (int i = 0; i < 3; ++i) call();  // warm-up: one-time setup outside the capture and the timing
  CUDA_CHECK(cudaStreamSynchronize(ctx.stream()));
  course::StepCapture graph;
  graph.capture(ctx.stream(), [&] {
    for (int i = 0; i < kReps; ++i) call();
  });
  EventTimer timer;
  for (auto _ : state) {
    const double ms = timer.time_ms(ctx.stream(), [&] { graph.replay(ctx.stream()); });
    state.SetIterationTime(ms / 1e3 / kReps);
  }
}

void set_conv_counters(benchmark::State& state, const ConvLayerShape& s, const std::string& algorithm) {
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.counters["FLOP/s"] = benchmark::Counter(s.flops_per_example() * kBatch * static_cast<double>(state.iterations()),
                                                benchmark::Counter::kIsRate);
  state.SetLabel(geometry(s).str() + ", batch " + std::to_string(kBatch) + ", " + algorithm);
}

/// A conv layer ready to run: descriptors, measured algorithms, workspace and buffers.
struct ConvSetup {
  course::ConvGeometry g;
  course::ConvDescriptors d;
  course::ConvAlgorithms a;
  course::DeviceBuffer<unsigned char> ws;
  course::DeviceBuffer<float> x, W, b, y, dx, dW, db;
  ConvSetup(const course::GpuContext& ctx, const ConvLayerShape& s) : g(geometry(s)) {
    course::describe_conv(d, g, kBatch);
    a = course::choose_conv_algorithms(ctx.handles(), d);
    ws.resize(std::max<std::size_t>(a.workspace_bytes(), 1));
    x = random_device(kBatch * g.in_size(), 1);
    W = random_device(g.weight_size(), 2);
    b = random_device(g.C_out, 3);
    y = random_device(kBatch * g.out_size(), 4);  // also the dy of the backward passes
    dx.resize(kBatch * g.in_size());
    dW.resize(g.weight_size());
    db.resize(g.C_out);
  }
  course::Workspace workspace() { return {ws.get(), a.workspace_bytes()}; }
};

void conv_forward(benchmark::State& state, const ConvLayerShape& s) {
  run_on_gpu(state, [&] {
    course::GpuContext ctx;
    ConvSetup c(ctx, s);
    time_calls(state, ctx, [&] {
      course::conv_forward_cudnn(ctx.handles(), c.d, c.a, c.workspace(), c.x.get(), c.W.get(), c.b.get(), c.y.get());
    });
    set_conv_counters(state, s, course::algorithm_name(c.a.forward));
  });
}

void conv_backward_data(benchmark::State& state, const ConvLayerShape& s) {
  run_on_gpu(state, [&] {
    course::GpuContext ctx;
    ConvSetup c(ctx, s);
    const float one = 1.f, zero = 0.f;
    // The backward-data call alone (conv_backward_cudnn also computes dW and db).
    time_calls(state, ctx, [&] {
      CUDNN_CHECK(cudnnConvolutionBackwardData(ctx.handles().cudnn, &one, c.d.w, c.W.get(), c.d.y, c.y.get(), c.d.conv,
                                               c.a.backward_data, c.ws.get(), c.a.workspace_bytes(), &zero, c.d.x,
                                               c.dx.get()));
    });
    set_conv_counters(state, s, course::algorithm_name(c.a.backward_data));
  });
}

void conv_backward_filter(benchmark::State& state, const ConvLayerShape& s) {
  run_on_gpu(state, [&] {
    course::GpuContext ctx;
    ConvSetup c(ctx, s);
    // dW and db, as stage 02's conv2d_backward_weight: conv_backward_cudnn with a null dx.
    time_calls(state, ctx, [&] {
      course::conv_backward_cudnn(ctx.handles(), c.d, c.a, c.workspace(), c.x.get(), c.W.get(), c.y.get(), c.dW.get(),
                                  c.db.get(), nullptr);
    });
    set_conv_counters(state, s, course::algorithm_name(c.a.backward_filter));
  });
}

void maxpool_forward(benchmark::State& state, const PoolLayerShape& s) {
  run_on_gpu(state, [&] {
    course::GpuContext ctx;
    const course::PoolGeometry g = geometry(s);
    course::PoolDescriptors d;
    course::describe_pool(d, g, kBatch);
    auto x = random_device(kBatch * g.in_size(), 1), y = random_device(kBatch * g.out_size(), 2);
    time_calls(state, ctx, [&] { course::maxpool_forward_cudnn(ctx.handles(), d, x.get(), y.get()); });
    state.SetItemsProcessed(state.iterations() * kBatch);
    state.SetLabel(g.str() + ", batch " + std::to_string(kBatch));
  });
}

void maxpool_backward(benchmark::State& state, const PoolLayerShape& s) {
  run_on_gpu(state, [&] {
    course::GpuContext ctx;
    const course::PoolGeometry g = geometry(s);
    course::PoolDescriptors d;
    course::describe_pool(d, g, kBatch);
    auto x = random_device(kBatch * g.in_size(), 1), y = random_device(kBatch * g.out_size(), 2),
         dy = random_device(kBatch * g.out_size(), 3), dx = random_device(kBatch * g.in_size(), 4);
    course::maxpool_forward_cudnn(ctx.handles(), d, x.get(), y.get());  // a real y for the arg-max search
    time_calls(state, ctx, [&] { course::maxpool_backward_cudnn(ctx.handles(), d, x.get(), y.get(), dy.get(), dx.get()); });
    state.SetItemsProcessed(state.iterations() * kBatch);
    state.SetLabel(g.str() + ", batch " + std::to_string(kBatch));
  });
}

/// kSteps training steps of `model` per iteration, timed with events; epochs
/// of 64 batches roll over between iterations, outside the timing.
void train_steps(benchmark::State& state, const std::string& model, bool graph) {
  run_on_gpu(state, [&] {
    course::EngineConfig cfg;
    cfg.arch = course::parse_arch(course::named_model_spec(model));
    cfg.input = {1, 28, 28};
    cfg.classes = 10;
    cfg.batch = kBatch;
    const course::Dataset data = course::make_synthetic(64 * kBatch, cfg.input, cfg.classes, 1);
    course::GpuEngine engine(cfg, std::make_unique<course::CudnnStep>(cfg), {}, course::GpuEngineOptions{graph});
    int epoch = 0, next = 0;
    engine.begin_epoch(data, epoch);
    auto step = [&] {
      if (next == engine.num_batches()) {
        engine.end_epoch();
        engine.begin_epoch(data, ++epoch);
        next = 0;
      }
      engine.train_batch(next++);
    };
    for (int i = 0; i < 8; ++i) step();  // warm-up: the capture happens here
    EventTimer timer;
    for (auto _ : state) {
      if (next + kSteps > engine.num_batches()) {  // roll the epoch over before the timing starts
        engine.end_epoch();
        engine.begin_epoch(data, ++epoch);
        next = 0;
      }
      const double ms = timer.time_ms(engine.stream(), [&] {
        for (int i = 0; i < kSteps; ++i) step();
      });
      state.SetIterationTime(ms / 1e3 / kSteps);
    }
    engine.end_epoch();
    state.SetItemsProcessed(state.iterations() * kBatch);
    state.SetLabel(model + " batch " + std::to_string(kBatch) + " on 1x28x28, " +
                   (engine.graph_enabled() ? "CUDA graph of " + std::to_string(engine.graph_nodes()) + " nodes"
                                           : std::string("uncaptured")));
  });
}

void BM_TrainStep_CNN(benchmark::State& state) { train_steps(state, "cnn", true); }
void BM_TrainStep_MLP(benchmark::State& state) { train_steps(state, "mlp", true); }
void BM_TrainStepEager_CNN(benchmark::State& state) { train_steps(state, "cnn", false); }
void BM_TrainStepEager_MLP(benchmark::State& state) { train_steps(state, "mlp", false); }

void register_layer_benchmarks() {
  std::vector<ConvLayerShape> convs;
  std::vector<PoolLayerShape> pools;
  course::bench::model_layers("cnn", {1, 28, 28}, 10, &convs, &pools);
  for (const auto& s : convs) {
    benchmark::RegisterBenchmark(("BM_ConvForward/" + s.name).c_str(), conv_forward, s)->UseManualTime();
    benchmark::RegisterBenchmark(("BM_ConvBackwardData/" + s.name).c_str(), conv_backward_data, s)->UseManualTime();
    benchmark::RegisterBenchmark(("BM_ConvBackwardFilter/" + s.name).c_str(), conv_backward_filter, s)->UseManualTime();
  }
  for (const auto& s : pools) {
    benchmark::RegisterBenchmark(("BM_MaxPoolForward/" + s.name).c_str(), maxpool_forward, s)->UseManualTime();
    benchmark::RegisterBenchmark(("BM_MaxPoolBackward/" + s.name).c_str(), maxpool_backward, s)->UseManualTime();
  }
}

}  // namespace

BENCHMARK(BM_TrainStep_CNN)->UseManualTime();
BENCHMARK(BM_TrainStep_MLP)->UseManualTime();
BENCHMARK(BM_TrainStepEager_CNN)->UseManualTime();
BENCHMARK(BM_TrainStepEager_MLP)->UseManualTime();

int main(int argc, char** argv) {
  register_layer_benchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
