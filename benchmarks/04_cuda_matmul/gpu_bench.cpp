// Stage 04 benchmarks: every matmul kernel, the dense layer and one MLP training step on the GPU.
//
//   build/bin/s04_bench                                   all of them
//   build/bin/s04_bench --benchmark_filter=BM_Matmul/6/   one kernel at every size
//
// Every figure is GPU time between two CUDA events around the work (manual
// time), after one untimed warm-up call (benchmarks/support/gpu_benchmark.hpp;
// BM_Matmul is matmul_bench.hpp, which a later stage runs too). The names match stage 01's
// benchmarks (BM_DenseForward/B/IN/OUT, BM_DenseBackward/..., BM_TrainStep_MLP),
// so Google Benchmark's compare.py sets the two stages side by side.
//
//   BM_Matmul/<kernel>/<n>           C[n, n] = A[n, n] B[n, n]; GFLOP/s counts 2 n^3
//   BM_DenseForward/<B>/<IN>/<OUT>   Y = X W^T + b on kernel kBestGemm; FLOP/s counts 2 B IN OUT
//   BM_DenseBackward/<B>/<IN>/<OUT>  dW, db, dX; FLOP/s counts 4 B IN OUT
//   BM_TrainStep_MLP                 one SGD step of the mlp at batch 64 (gather to update)
//   BM_DatasetFingerprint            host time (no GPU) of course::dataset_fingerprint for a set of
//                                    Fashion-MNIST's training size, which every GPU epoch computes
//                                    before its first step (course::upload_once)
//
// A training step is 21 small kernels; timed alone, the GPU also waits for
// the host to launch them. An epoch overlaps the launches of one step with the
// work of the step before, so epoch time / steps (the trainer) can be lower.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "04_cuda_matmul/gemm.hpp"
#include "04_cuda_matmul/mlp_step.hpp"
#include "common/gpu/engine_parts.hpp"
#include "common/gpu/gpu_engine.hpp"
#include "04_cuda_matmul/mlp_kernels.hpp"
#include "benchmarks/04_cuda_matmul/matmul_bench.hpp"
#include "benchmarks/support/gpu_benchmark.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/data/data.hpp"

namespace {

using course::DeviceBuffer;
using course::bench::random_device;
using course::bench::time_on_gpu;

void BM_Matmul(benchmark::State& state) {
  course::bench::time_square_matmul(state);
  state.SetLabel(course::gemm_kernel_name(static_cast<int>(state.range(0))));
}

void matmul_sizes(benchmark::internal::Benchmark* b) {
  b->Args({0, 32})->Args({1, 32});  // kernel 1 can do no more than 32 x 32 = 1024 outputs
  for (int kernel = 0; kernel < course::kNumGemmKernels; ++kernel) {
    if (kernel == course::kGemmSingleBlock) continue;
    for (int n = 128; n <= 4096; n *= 2) b->Args({kernel, n});
  }
}

void set_dense_counters(benchmark::State& state, int B, double flops_per_pass) {
  state.SetItemsProcessed(state.iterations() * B);
  state.counters["FLOP/s"] =
      benchmark::Counter(flops_per_pass * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_DenseForward(benchmark::State& state) {
  const int B = static_cast<int>(state.range(0)), IN = static_cast<int>(state.range(1)),
            OUT = static_cast<int>(state.range(2));
  DeviceBuffer<float> x, W, b, y;
  time_on_gpu(state, [&] {
    x = random_device(static_cast<std::size_t>(B) * IN, 1);
    W = random_device(static_cast<std::size_t>(OUT) * IN, 2);
    b = random_device(static_cast<std::size_t>(OUT), 3);
    y.resize(static_cast<std::size_t>(B) * OUT);
    return [&] { course::dense_forward_gpu(course::kBestGemm, x.get(), W.get(), b.get(), y.get(), B, IN, OUT); };
  });
  set_dense_counters(state, B, 2.0 * B * IN * OUT);
}

void BM_DenseBackward(benchmark::State& state) {
  const int B = static_cast<int>(state.range(0)), IN = static_cast<int>(state.range(1)),
            OUT = static_cast<int>(state.range(2));
  DeviceBuffer<float> x, W, dy, dW, db, dx;
  time_on_gpu(state, [&] {
    x = random_device(static_cast<std::size_t>(B) * IN, 1);
    W = random_device(static_cast<std::size_t>(OUT) * IN, 2);
    dy = random_device(static_cast<std::size_t>(B) * OUT, 4);
    dW.resize(W.size());
    db.resize(static_cast<std::size_t>(OUT));
    dx.resize(x.size());
    return [&] {
      course::dense_backward_gpu(course::kBestGemm, x.get(), W.get(), dy.get(), dW.get(), db.get(), dx.get(), B, IN,
                                 OUT);
    };
  });
  set_dense_counters(state, B, 4.0 * B * IN * OUT);
}

// Stage 01's sizes: the layers of the MLP (784-256-128-10) and of the CNN's classifier (1568-100-10).
void dense_sizes(benchmark::internal::Benchmark* b) {
  for (const auto& s :
       {std::vector<int64_t>{64, 784, 256}, {64, 256, 128}, {64, 128, 10}, {64, 1568, 100}, {256, 784, 256}})
    b->Args(s);
}

// One training step of the mlp at batch B: gather, forward, loss, backward, SGD (a CUDA graph
// replay, as the trainer runs it). The batches run in order, so the 17th starts the epoch again.
void train_step(benchmark::State& state, int B) {
  const course::Dataset data = course::make_synthetic(16 * B, {1, 28, 28}, 10, 1);
  std::unique_ptr<course::GpuEngine> engine;
  int b = 0;
  time_on_gpu(state, [&] {
    course::EngineConfig cfg;
    cfg.arch = course::parse_arch(course::named_model_spec("mlp"));
    cfg.input = data.shape;
    cfg.classes = data.classes;
    cfg.batch = B;
    cfg.seed = 42;
    engine = std::make_unique<course::GpuEngine>(cfg, std::make_unique<course::MlpStep>(cfg));
    engine->begin_epoch(data, 0);
    return [&] {
      if (b == engine->num_batches()) {
        engine->end_epoch();
        engine->begin_epoch(data, 0);
        b = 0;
      }
      engine->train_batch(b++);
    };
  });
  state.SetItemsProcessed(state.iterations() * B);
  state.SetLabel("mlp batch " + std::to_string(B) + " on 1x28x28, gemm kernel " + std::to_string(course::kBestGemm));
}

void BM_TrainStep_MLP(benchmark::State& state) { train_step(state, 64); }
void BM_TrainStep_MLP_Batch256(benchmark::State& state) { train_step(state, 256); }

// Host time, repeated on one set: after the first call its sampled lines are in cache,
// so this is the lower bound; an epoch's call may find them evicted.
void BM_DatasetFingerprint(benchmark::State& state) {
  const course::Dataset data = course::make_synthetic(60000, {1, 28, 28}, 10, 1);
  for (auto _ : state) benchmark::DoNotOptimize(course::dataset_fingerprint(data));
  state.SetLabel("60000 x 1x28x28 (Fashion-MNIST's training set), host only");
}

}  // namespace

BENCHMARK(BM_Matmul)->Apply(matmul_sizes)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DenseForward)->Apply(dense_sizes)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DenseBackward)->Apply(dense_sizes)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TrainStep_MLP)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TrainStep_MLP_Batch256)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DatasetFingerprint)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
