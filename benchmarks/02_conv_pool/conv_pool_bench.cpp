// Stage 02 benchmarks: conv forward, backward-data and backward-filter and
// max-pool forward and backward for every such layer of the `cnn` model on
// Fashion-MNIST (1x28x28) at batch 64, and one training step of the CNN and
// of the MLP.
//
//   build/bin/s02_bench
//   build/bin/s02_bench --benchmark_filter='Conv.*/conv2'
//
// Names are BM_<operation>/<layer>, e.g. BM_ConvBackwardFilter/conv2; stages
// 03, 05 and 06 register the same names for the same shapes (model_layers.hpp),
// so `compare.py benchmarks s02.json s05.json` lines them up. Items are images,
// so items_per_second is images/s. FLOP/s counts 2 multiply-add FLOPs per
// forward tap; backward-data and backward-filter do the same number of taps.
// BackwardFilter includes the bias gradient.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "../01_fc_softmax/train_step.hpp"
#include "02_conv_pool/cnn.hpp"
#include "02_conv_pool/conv.hpp"
#include "02_conv_pool/pool.hpp"
#include "common/core/rng.hpp"
#include "model_layers.hpp"

namespace {

using course::bench::ConvLayerShape;
using course::bench::PoolLayerShape;

constexpr int kBatch = 64;

std::vector<float> random_values(std::size_t n, std::uint64_t seed) {
  std::vector<float> v(n);
  course::Rng rng(seed);
  rng.fill_normal(v.data(), n, 1.0);
  return v;
}

course::ConvGeometry geometry(const ConvLayerShape& s) { return {s.C_in, s.H, s.W, s.C_out, s.K, s.P, s.S}; }
course::PoolGeometry geometry(const PoolLayerShape& s) { return {s.C, s.H, s.W, s.K, s.S, s.P}; }

void set_counters(benchmark::State& state, const ConvLayerShape& s) {
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.counters["FLOP/s"] = benchmark::Counter(s.flops_per_example() * kBatch * static_cast<double>(state.iterations()),
                                                benchmark::Counter::kIsRate);
  const course::ConvGeometry g = geometry(s);
  state.SetLabel(g.str() + ", batch " + std::to_string(kBatch));
}

void conv_forward(benchmark::State& state, const ConvLayerShape& s) {
  const course::ConvGeometry g = geometry(s);
  const auto x = random_values(kBatch * g.in_size(), 1), W = random_values(g.weight_size(), 2),
             b = random_values(g.C_out, 3);
  std::vector<float> y(kBatch * g.out_size());
  for (auto _ : state) {
    course::conv2d_forward(x.data(), W.data(), b.data(), y.data(), kBatch, g);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, s);
}

void conv_backward_data(benchmark::State& state, const ConvLayerShape& s) {
  const course::ConvGeometry g = geometry(s);
  const auto dy = random_values(kBatch * g.out_size(), 1), W = random_values(g.weight_size(), 2);
  std::vector<float> dx(kBatch * g.in_size());
  for (auto _ : state) {
    course::conv2d_backward_input(dy.data(), W.data(), dx.data(), kBatch, g);
    benchmark::DoNotOptimize(dx.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, s);
}

void conv_backward_filter(benchmark::State& state, const ConvLayerShape& s) {
  const course::ConvGeometry g = geometry(s);
  const auto x = random_values(kBatch * g.in_size(), 1), dy = random_values(kBatch * g.out_size(), 2);
  std::vector<float> dW(g.weight_size()), db(g.C_out);
  for (auto _ : state) {
    course::conv2d_backward_weight(x.data(), dy.data(), dW.data(), db.data(), kBatch, g);
    benchmark::DoNotOptimize(dW.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, s);
}

void maxpool_forward(benchmark::State& state, const PoolLayerShape& s) {
  const course::PoolGeometry g = geometry(s);
  const auto x = random_values(kBatch * g.in_size(), 1);
  std::vector<float> y(kBatch * g.out_size());
  std::vector<int> argmax(y.size());
  for (auto _ : state) {
    course::maxpool_forward(x.data(), y.data(), argmax.data(), kBatch, g);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.SetLabel(g.str() + ", batch " + std::to_string(kBatch));
}

void maxpool_backward(benchmark::State& state, const PoolLayerShape& s) {
  const course::PoolGeometry g = geometry(s);
  const auto x = random_values(kBatch * g.in_size(), 1), dy = random_values(kBatch * g.out_size(), 2);
  std::vector<float> y(dy.size()), dx(x.size());
  std::vector<int> argmax(y.size());
  course::maxpool_forward(x.data(), y.data(), argmax.data(), kBatch, g);  // a real arg-max pattern
  for (auto _ : state) {
    course::maxpool_backward(dy.data(), argmax.data(), dx.data(), kBatch, g);
    benchmark::DoNotOptimize(dx.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.SetLabel(g.str() + ", batch " + std::to_string(kBatch));
}

void BM_TrainStep_CNN(benchmark::State& state) {
  course::bench::run_train_step(state, "cnn", {1, 28, 28}, kBatch, course::make_cnn_layer<float>);
}

void BM_TrainStep_MLP(benchmark::State& state) {
  course::bench::run_train_step(state, "mlp", {1, 28, 28}, kBatch, course::make_cnn_layer<float>);
}

void register_layer_benchmarks() {
  std::vector<ConvLayerShape> convs;
  std::vector<PoolLayerShape> pools;
  course::bench::model_layers("cnn", {1, 28, 28}, 10, &convs, &pools);
  for (const auto& s : convs) {
    benchmark::RegisterBenchmark(("BM_ConvForward/" + s.name).c_str(), conv_forward, s);
    benchmark::RegisterBenchmark(("BM_ConvBackwardData/" + s.name).c_str(), conv_backward_data, s);
    benchmark::RegisterBenchmark(("BM_ConvBackwardFilter/" + s.name).c_str(), conv_backward_filter, s);
  }
  for (const auto& s : pools) {
    benchmark::RegisterBenchmark(("BM_MaxPoolForward/" + s.name).c_str(), maxpool_forward, s);
    benchmark::RegisterBenchmark(("BM_MaxPoolBackward/" + s.name).c_str(), maxpool_backward, s);
  }
}

}  // namespace

BENCHMARK(BM_TrainStep_CNN);
BENCHMARK(BM_TrainStep_MLP);

int main(int argc, char** argv) {
  register_layer_benchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
