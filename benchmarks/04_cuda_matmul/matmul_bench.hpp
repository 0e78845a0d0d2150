// BM_Matmul/<kernel>/<n>, stage 04's matmul benchmark: C[n, n] = A[n, n] B[n, n] through
// course::gemm, FP32 in and out; GFLOP/s counts 2 n^3. A later stage that adds kernels runs the same benchmark on
// them, under the same name, so Google Benchmark's compare.py sets the two side by side.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "04_cuda_matmul/gemm.hpp"
#include "benchmarks/support/gpu_benchmark.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/core/rng.hpp"

namespace course::bench {

/// n values uniform in [-1, 1) on the device (never zeros, which some hardware multiplies faster).
inline DeviceBuffer<float> random_device(std::size_t n, std::uint64_t seed) {
  Rng rng(seed, 13);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(rng.uniform(-1.0, 1.0));
  DeviceBuffer<float> d;
  d.upload(v);
  return d;
}

/// Times kernel state.range(0) at n = state.range(1) and sets the GFLOP/s counter; the
/// caller labels the run (each stage names its kernels its own way).
inline void time_square_matmul(benchmark::State& state) {
  const int kernel = static_cast<int>(state.range(0)), n = static_cast<int>(state.range(1));
  const std::size_t size = static_cast<std::size_t>(n) * n;
  DeviceBuffer<float> A, B, C;
  time_on_gpu(state, [&] {
    A = random_device(size, 1);
    B = random_device(size, 2);
    C.resize(size);
    return [&] { gemm(kernel, false, false, n, n, n, 1.f, A.get(), B.get(), 0.f, C.get()); };
  });
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * n * n * static_cast<double>(n) * 1e-9 * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}

}  // namespace course::bench
