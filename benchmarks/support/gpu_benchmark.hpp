// Google Benchmark on the GPU, for the benchmarks of stages 04 to 08.
//
// Without a usable GPU a benchmark is skipped with the reason (course::gpu_available), so
// the binaries run, and say why, on a machine that only builds them. A failed CUDA, cuDNN
// or cuBLAS call (an exception) ends that one benchmark with its message, not the program.
// Iterations report GPU time from CUDA events (gpu_timing.hpp): register the benchmark
// with UseManualTime().
#pragma once

#include <benchmark/benchmark.h>

#include <exception>
#include <string>

#include "benchmarks/support/gpu_timing.hpp"
#include "common/gpu/cuda_check.hpp"

namespace course::bench {

/// True, and the benchmark skipped with the reason, where no GPU can be used.
inline bool skip_without_gpu(benchmark::State& state) {
  std::string why;
  if (course::gpu_available(&why)) return false;
  state.SkipWithError(why.c_str());
  return true;
}

/// Runs a benchmark's `body` where a GPU can be used; otherwise skips the benchmark with
/// the reason. An exception thrown by `body` skips the benchmark with its message.
template <typename Body>
void run_on_gpu(benchmark::State& state, Body&& body) {
  if (skip_without_gpu(state)) return;
  try {
    body();
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

/// One call of `work` (queued on the default stream) per iteration, its GPU time between
/// two events the iteration's manual time, after one untimed warm-up call (module loading,
/// library handles, first touches of the buffers). Call it inside run_on_gpu.
template <typename Work>
void time_each_call(benchmark::State& state, Work&& work) {
  work();
  CUDA_CHECK(cudaDeviceSynchronize());
  EventTimer timer;
  for (auto _ : state) state.SetIterationTime(timer.time_ms(work) / 1e3);
}

/// run_on_gpu and time_each_call in one: `setup` allocates and uploads (outside the
/// timing) and returns the work to time.
template <typename Setup>
void time_on_gpu(benchmark::State& state, Setup&& setup) {
  run_on_gpu(state, [&] {
    auto work = setup();
    time_each_call(state, work);
  });
}

}  // namespace course::bench
