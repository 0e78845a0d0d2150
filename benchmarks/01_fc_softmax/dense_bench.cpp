// Stage 01 benchmarks: the dense layer of a whole batch, and one MLP training step.
//
//   build/bin/s01_bench                                   all of them
//   build/bin/s01_bench --benchmark_filter=DenseForward   one family
//
// Arguments are B/IN/OUT. Items are examples (images), so items_per_second is
// images/s; FLOP/s counts 2 * B * IN * OUT per dense pass (a multiply and an add),
// twice that for backward (dW and dX; db is negligible).
#include <benchmark/benchmark.h>

#include <vector>

#include "01_fc_softmax/dense.hpp"
#include "common/core/rng.hpp"
#include "train_step.hpp"

namespace {

std::vector<float> random_values(std::size_t n, std::uint64_t seed) {
  std::vector<float> v(n);
  course::Rng rng(seed);
  rng.fill_normal(v.data(), n, 1.0);
  return v;
}

void set_counters(benchmark::State& state, int B, double flops_per_pass) {
  state.SetItemsProcessed(state.iterations() * B);
  state.counters["FLOP/s"] =
      benchmark::Counter(flops_per_pass * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_DenseForward(benchmark::State& state) {
  const int B = static_cast<int>(state.range(0)), IN = static_cast<int>(state.range(1)),
            OUT = static_cast<int>(state.range(2));
  const auto x = random_values(std::size_t(B) * IN, 1), W = random_values(std::size_t(OUT) * IN, 2),
             b = random_values(std::size_t(OUT), 3);
  std::vector<float> y(std::size_t(B) * OUT);
  for (auto _ : state) {
    course::dense_forward(x.data(), W.data(), b.data(), y.data(), B, IN, OUT);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, B, 2.0 * B * IN * OUT);
}

void BM_DenseBackward(benchmark::State& state) {
  const int B = static_cast<int>(state.range(0)), IN = static_cast<int>(state.range(1)),
            OUT = static_cast<int>(state.range(2));
  const auto x = random_values(std::size_t(B) * IN, 1), W = random_values(std::size_t(OUT) * IN, 2),
             dy = random_values(std::size_t(B) * OUT, 4);
  std::vector<float> dW(W.size()), db(static_cast<std::size_t>(OUT)), dx(x.size());
  for (auto _ : state) {
    course::dense_backward(x.data(), W.data(), dy.data(), dW.data(), db.data(), dx.data(), B, IN, OUT);
    benchmark::DoNotOptimize(dx.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, B, 4.0 * B * IN * OUT);
}

// The layers of the MLP (784-256-128-10) and of the CNN's classifier (1568-100-10), at batch 64.
void dense_sizes(benchmark::internal::Benchmark* b) {
  for (const auto& s : {std::vector<int64_t>{64, 784, 256}, {64, 256, 128}, {64, 128, 10}, {64, 1568, 100},
                        {256, 784, 256}})
    b->Args(s);
}

void BM_TrainStep_MLP(benchmark::State& state) {
  course::bench::run_train_step(state, "mlp", {1, 28, 28}, 64, course::make_dense_or_activation<float>);
}

}  // namespace

BENCHMARK(BM_DenseForward)->Apply(dense_sizes);
BENCHMARK(BM_DenseBackward)->Apply(dense_sizes);
BENCHMARK(BM_TrainStep_MLP);

BENCHMARK_MAIN();
