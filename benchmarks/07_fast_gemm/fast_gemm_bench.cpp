// Stage 07 benchmarks: the matmul kernels (stage 04's names) and one training step per precision
// (the names of stages 04 to 06, so Google Benchmark's compare.py sets the stages side by side).
//
//   build/bin/s07_bench                                    all of them
//   build/bin/s07_bench --benchmark_filter=BM_Matmul/13/    one kernel at every size
//
//   BM_Matmul/<kernel>/<n>       C[n, n] = A[n, n] B[n, n] through course::gemm (FP32 in and out); GFLOP/s counts 2 n^3
//   BM_TrainStep_MLP[_tf32|_bf16] one SGD step of mlp at batch 64: kernel 10 (autotuned FP32), 11 (TF32) or 12 (BF16)
//   BM_TrainStep_CNN[_tf32|_bf16] the same for cnn
//
// Every figure is GPU time between CUDA events around the work (manual time), after an untimed
// warm-up call, in which kernel 10 also tunes every shape it meets (benchmarks/support/gpu_benchmark.hpp).
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "04_cuda_matmul/gemm.hpp"
#include "07_fast_gemm/autotune.hpp"
#include "07_fast_gemm/fast_gemm.hpp"
#include "07_fast_gemm/fast_gemm_step.hpp"
#include "common/gpu/gpu_engine.hpp"
#include "benchmarks/04_cuda_matmul/matmul_bench.hpp"
#include "benchmarks/support/gpu_benchmark.hpp"
#include "common/data/data.hpp"

namespace {

using course::bench::time_on_gpu;

// Stage 07's kernels in gemm()'s table, and kernel 10's tuning report silenced (the
// benchmark's output is Google Benchmark's table); before any timing and any kernel name.
void use_fast_gemm_kernels() {
  course::register_fast_gemm_kernels();
  course::kernel10_autotuner().set_report(nullptr);
}

// Stage 04's BM_Matmul (matmul_bench.hpp), on this stage's kernels.
void BM_Matmul(benchmark::State& state) {
  use_fast_gemm_kernels();
  course::bench::time_square_matmul(state);
  const int kernel = static_cast<int>(state.range(0));
  state.SetLabel(course::gemm_kernel_name(kernel) + " (" +
                 course::precision_name(course::gemm_precision(kernel)) + ")");
}

void matmul_sizes(benchmark::internal::Benchmark* b) {
  for (int kernel : {0, 6, 7, 8, 9, 10, 11, 12, 13, 14})
    for (int n = 1024; n <= 4096; n *= 2) b->Args({kernel, n});
}

// One training step at batch 64: stage 05's step on the precision's default kernel, in the GPU
// engine (a CUDA graph replay, as the trainer runs it). After 16 batches the epoch starts again.
void train_step(benchmark::State& state, const std::string& model, const std::string& precision) {
  const course::Dataset data = course::make_synthetic(16 * 64, {1, 28, 28}, 10, 1);
  std::unique_ptr<course::GpuEngine> engine;
  int b = 0;
  int kernel = -1;
  use_fast_gemm_kernels();
  time_on_gpu(state, [&] {
    course::EngineConfig cfg;
    cfg.arch = course::parse_arch(course::named_model_spec(model));
    cfg.input = data.shape;
    cfg.classes = data.classes;
    cfg.batch = 64;
    cfg.seed = 42;
    course::GpuCnnOptions options;
    options.gemm_kernel = kernel = course::default_kernel(course::parse_precision(precision));
    engine = std::make_unique<course::GpuEngine>(cfg, std::make_unique<course::FastGemmStep>(cfg, options));
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
  state.SetItemsProcessed(state.iterations() * 64);
  state.SetLabel(model + " batch 64, gemm kernel " + std::to_string(kernel) + ", " + precision);
}

void BM_TrainStep_MLP(benchmark::State& state) { train_step(state, "mlp", "fp32"); }
void BM_TrainStep_MLP_tf32(benchmark::State& state) { train_step(state, "mlp", "tf32"); }
void BM_TrainStep_MLP_bf16(benchmark::State& state) { train_step(state, "mlp", "bf16"); }
void BM_TrainStep_CNN(benchmark::State& state) { train_step(state, "cnn", "fp32"); }
void BM_TrainStep_CNN_tf32(benchmark::State& state) { train_step(state, "cnn", "tf32"); }
void BM_TrainStep_CNN_bf16(benchmark::State& state) { train_step(state, "cnn", "bf16"); }

}  // namespace

BENCHMARK(BM_Matmul)->Apply(matmul_sizes)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TrainStep_MLP)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TrainStep_MLP_tf32)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TrainStep_MLP_bf16)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TrainStep_CNN)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TrainStep_CNN_tf32)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TrainStep_CNN_bf16)->UseManualTime()->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
