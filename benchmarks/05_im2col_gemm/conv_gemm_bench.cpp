// Stage 05 benchmarks: conv forward, backward-data and backward-filter and
// max-pool forward and backward for every such layer of the `cnn` model on
// Fashion-MNIST (1x28x28) at batch 64, and one training step of the CNN and
// of the MLP, on the GPU.
//
//   build/bin/s05_bench
//   build/bin/s05_bench --benchmark_filter='Conv.*/conv2'
//   compare.py benchmarks s02.json s05.json      (stage 02's names, same shapes)
//
// Names are stage 02's (BM_<operation>/<layer>, model_layers.hpp), measured
// with the stage's own GEMM (kernel 6) and the whole batch unrolled at once;
// beside each, "/cublas" runs the same with cuBLAS and "/image" unrolls one
// image at a time. Every figure is GPU time from CUDA events around the
// operation (UseManualTime), after one warm-up call; items are images, so
// items_per_second is images/s. FLOP/s counts 2 FLOPs per multiply-add of the
// forward pass; backward-data and backward-filter do the same number.
// BackwardFilter includes the bias gradient. A TrainStep is one train_batch()
// of the engine: gather, forward, loss, backward and the SGD update.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "../02_conv_pool/model_layers.hpp"
#include "05_im2col_gemm/conv_gpu.hpp"
#include "05_im2col_gemm/cnn_step.hpp"
#include "common/gpu/gpu_engine.hpp"
#include "05_im2col_gemm/pool_gpu.hpp"
#include "benchmarks/support/gpu_benchmark.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/data/data.hpp"
#include "common/core/rng.hpp"

namespace {

using course::bench::ConvLayerShape;
using course::bench::PoolLayerShape;
using course::bench::skip_without_gpu;
using course::bench::time_each_call;

constexpr int kBatch = 64;

/// One way to run the layers: the name suffix, the GEMM kernel and the unroll.
struct Variant {
  std::string suffix;
  int gemm_kernel;
  course::Unroll unroll;
};

const std::vector<Variant>& variants() {
  static const std::vector<Variant> v = {{"", course::kBestGemm, course::Unroll::Batch},
                                         {"/cublas", course::kGemmCublas, course::Unroll::Batch},
                                         {"/image", course::kBestGemm, course::Unroll::Image}};
  return v;
}

/// A device buffer of n normal random values (never zeros: zeros can run faster than data).
course::DeviceBuffer<float> random_buffer(std::size_t n, std::uint64_t seed) {
  std::vector<float> v(n);
  course::Rng rng(seed);
  rng.fill_normal(v.data(), n, 1.0);
  course::DeviceBuffer<float> d;
  d.upload(v);
  return d;
}

course::ConvGeometry geometry(const ConvLayerShape& s) { return {s.C_in, s.H, s.W, s.C_out, s.K, s.P, s.S}; }
course::PoolGeometry geometry(const PoolLayerShape& s) { return {s.C, s.H, s.W, s.K, s.S, s.P}; }

/// A conv context for a variant, with its workspace and split-K streams.
struct ConvSetup {
  std::unique_ptr<course::SplitKGemm> split_k;
  course::DeviceBuffer<float> workspace;
  course::ConvContext ctx;
  ConvSetup(const Variant& v, const course::ConvGeometry& g) {
    ctx.gemm_kernel = v.gemm_kernel;
    ctx.unroll = v.unroll;
    split_k = std::make_unique<course::SplitKGemm>(course::kDefaultSplitK);
    ctx.split_k = split_k.get();
    workspace.resize(course::conv_workspace_floats(ctx, kBatch, g));
    ctx.workspace = workspace.get();
    ctx.workspace_floats = workspace.size();
  }
};

void set_conv_counters(benchmark::State& state, const ConvLayerShape& s, const ConvSetup& setup) {
  const course::ConvGeometry g = geometry(s);
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.counters["FLOP/s"] = benchmark::Counter(s.flops_per_example() * kBatch * static_cast<double>(state.iterations()),
                                                benchmark::Counter::kIsRate);
  state.counters["workspace_MB"] = static_cast<double>(setup.workspace.size() * sizeof(float)) / 1e6;
  state.SetLabel(g.str() + ", batch " + std::to_string(kBatch) + ", " + course::gemm_kernel_name(setup.ctx.gemm_kernel) +
                 ", unroll " + course::unroll_name(setup.ctx.unroll));
}

void conv_forward(benchmark::State& state, const ConvLayerShape& s, const Variant& v) {
  if (skip_without_gpu(state)) return;
  const course::ConvGeometry g = geometry(s);
  ConvSetup setup(v, g);
  const auto x = random_buffer(kBatch * g.in_size(), 1), W = random_buffer(g.weight_size(), 2),
             b = random_buffer(g.C_out, 3);
  course::DeviceBuffer<float> y(kBatch * g.out_size());
  time_each_call(state, [&] { course::conv_forward_gpu(setup.ctx, x.get(), W.get(), b.get(), y.get(), kBatch, g); });
  set_conv_counters(state, s, setup);
}

void conv_backward_data(benchmark::State& state, const ConvLayerShape& s, const Variant& v) {
  if (skip_without_gpu(state)) return;
  const course::ConvGeometry g = geometry(s);
  ConvSetup setup(v, g);
  const auto dy = random_buffer(kBatch * g.out_size(), 1), W = random_buffer(g.weight_size(), 2);
  course::DeviceBuffer<float> dx(kBatch * g.in_size());
  time_each_call(state, [&] { course::conv_backward_input_gpu(setup.ctx, dy.get(), W.get(), dx.get(), kBatch, g); });
  set_conv_counters(state, s, setup);
}

void conv_backward_filter(benchmark::State& state, const ConvLayerShape& s, const Variant& v) {
  if (skip_without_gpu(state)) return;
  const course::ConvGeometry g = geometry(s);
  ConvSetup setup(v, g);
  const auto x = random_buffer(kBatch * g.in_size(), 1), dy = random_buffer(kBatch * g.out_size(), 2);
  course::DeviceBuffer<float> dW(g.weight_size()), db(g.C_out);
  time_each_call(state, [&] {
    course::conv_backward_weight_gpu(setup.ctx, x.get(), dy.get(), dW.get(), kBatch, g);
    course::conv_backward_bias_gpu(dy.get(), db.get(), kBatch, g);
  });
  set_conv_counters(state, s, setup);
}

void maxpool_forward(benchmark::State& state, const PoolLayerShape& s) {
  if (skip_without_gpu(state)) return;
  const course::PoolGeometry g = geometry(s);
  const auto x = random_buffer(kBatch * g.in_size(), 1);
  course::DeviceBuffer<float> y(kBatch * g.out_size());
  course::DeviceBuffer<int> argmax(y.size());
  time_each_call(state, [&] { course::maxpool_forward_gpu(x.get(), y.get(), argmax.get(), kBatch, g); });
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.SetLabel(g.str() + ", batch " + std::to_string(kBatch));
}

void maxpool_backward(benchmark::State& state, const PoolLayerShape& s) {
  if (skip_without_gpu(state)) return;
  const course::PoolGeometry g = geometry(s);
  const auto x = random_buffer(kBatch * g.in_size(), 1), dy = random_buffer(kBatch * g.out_size(), 2);
  course::DeviceBuffer<float> y(dy.size()), dx(x.size());
  course::DeviceBuffer<int> argmax(y.size());
  course::maxpool_forward_gpu(x.get(), y.get(), argmax.get(), kBatch, g);  // a real arg-max pattern
  time_each_call(state, [&] { course::maxpool_backward_gpu(dy.get(), argmax.get(), dx.get(), kBatch, g); });
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.SetLabel(g.str() + ", batch " + std::to_string(kBatch));
}

/// One training step of the engine (a CUDA graph replay, as the trainer runs it) on a synthetic
/// Fashion-MNIST-shaped set of 16 batches; the batches run in order, so after the last the epoch starts again.
void train_step(benchmark::State& state, const std::string& model, const Variant& v) {
  if (skip_without_gpu(state)) return;
  course::EngineConfig cfg;
  cfg.arch = course::parse_arch(course::named_model_spec(model));
  cfg.input = {1, 28, 28};
  cfg.classes = 10;
  cfg.batch = kBatch;
  auto step = std::make_unique<course::CnnStep>(cfg, course::GpuCnnOptions{v.gemm_kernel, v.unroll, course::kDefaultSplitK});
  const course::CnnStep& cnn = *step;
  course::GpuEngine engine(cfg, std::move(step));
  const course::Dataset data = course::make_synthetic(16 * kBatch, cfg.input, cfg.classes, 1);
  engine.begin_epoch(data, 0);
  int b = 0;
  time_each_call(state, [&] {
    if (b == engine.num_batches()) {
      engine.end_epoch();
      engine.begin_epoch(data, 0);
      b = 0;
    }
    engine.train_batch(b++);
  });
  engine.end_epoch();
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.counters["workspace_MB"] = static_cast<double>(cnn.workspace_bytes()) / 1e6;
  state.SetLabel(model + " batch " + std::to_string(kBatch) + " on 1x28x28, " + course::gemm_kernel_name(v.gemm_kernel) +
                 ", unroll " + course::unroll_name(v.unroll));
}

void register_benchmarks() {
  std::vector<ConvLayerShape> convs;
  std::vector<PoolLayerShape> pools;
  course::bench::model_layers("cnn", {1, 28, 28}, 10, &convs, &pools);
  for (const Variant& v : variants())
    for (const auto& s : convs) {
      benchmark::RegisterBenchmark(("BM_ConvForward/" + s.name + v.suffix).c_str(), conv_forward, s, v)->UseManualTime();
      benchmark::RegisterBenchmark(("BM_ConvBackwardData/" + s.name + v.suffix).c_str(), conv_backward_data, s, v)
          ->UseManualTime();
      benchmark::RegisterBenchmark(("BM_ConvBackwardFilter/" + s.name + v.suffix).c_str(), conv_backward_filter, s, v)
          ->UseManualTime();
    }
  for (const auto& s : pools) {
    benchmark::RegisterBenchmark(("BM_MaxPoolForward/" + s.name).c_str(), maxpool_forward, s)->UseManualTime();
    benchmark::RegisterBenchmark(("BM_MaxPoolBackward/" + s.name).c_str(), maxpool_backward, s)->UseManualTime();
  }
  for (const Variant& v : variants()) {
    benchmark::RegisterBenchmark(("BM_TrainStep_CNN" + v.suffix).c_str(), train_step, std::string("cnn"), v)
        ->UseManualTime();
    if (v.unroll == course::Unroll::Batch)  // the MLP has no conv layer to unroll
      benchmark::RegisterBenchmark(("BM_TrainStep_MLP" + v.suffix).c_str(), train_step, std::string("mlp"), v)
          ->UseManualTime();
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_benchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
