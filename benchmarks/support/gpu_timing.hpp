// GPU time from CUDA events: the one way every GPU benchmark and sweep of the course
// (stages 04 to 09) measures, so that their figures can be set side by side.
//
// An event recorded on a stream completes when the GPU reaches it, so the time between
// two events is the GPU's time for the work queued between them, not the host's time to
// queue it. gpu_benchmark.hpp builds Google Benchmark's loop on this; the sweeps take the
// median of many timed runs (median_call_ms).
#pragma once

#include <algorithm>
#include <vector>

#include <cuda_runtime.h>

#include "common/gpu/cuda_check.hpp"

namespace course::bench {

/// One CUDA event, destroyed with the object. Not copyable.
class Event {
 public:
  Event() { CUDA_CHECK(cudaEventCreate(&e_)); }
  ~Event() { cudaEventDestroy(e_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

/// A start and a stop event around work queued on one stream.
class EventTimer {
 public:
  /// Records start on `stream`, calls `work` (which queues its GPU work on `stream`), records
  /// stop, waits for it and returns the milliseconds between the two events.
  template <typename Work>
  double time_ms(cudaStream_t stream, Work&& work) {
    CUDA_CHECK(cudaEventRecord(start_.get(), stream));
    work();
    CUDA_CHECK(cudaEventRecord(stop_.get(), stream));
    CUDA_CHECK(cudaEventSynchronize(stop_.get()));
    float ms = 0.f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start_.get(), stop_.get()));
    return ms;
  }
  /// The same on the default stream.
  template <typename Work>
  double time_ms(Work&& work) {
    return time_ms(nullptr, work);
  }

 private:
  Event start_, stop_;
};

/// How many timed runs make one figure: at least min_runs, and more while their total
/// stays under min_ms milliseconds, up to max_runs (which bounds the time a very short
/// call takes to reach min_ms).
struct Runs {
  int min_runs;
  double min_ms;
  int max_runs;
};

/// The median of the milliseconds that `run_ms` returns, one timed run per call, over as
/// many runs as `rule` asks for (at least one). The median, not the mean: a run that
/// waits on something else (a clock ramping up, another process) moves it least.
template <typename RunMs>
double median_of_runs(RunMs&& run_ms, const Runs& rule) {
  std::vector<double> runs;
  double total = 0;
  while (runs.empty() || static_cast<int>(runs.size()) < rule.min_runs ||
         (total < rule.min_ms && static_cast<int>(runs.size()) < rule.max_runs)) {
    runs.push_back(run_ms());
    total += runs.back();
  }
  std::sort(runs.begin(), runs.end());
  return runs[runs.size() / 2];
}

/// The median GPU milliseconds of one call of `work` (queued on the default stream), each
/// call timed alone between two events, after one untimed warm-up call (module loading,
/// library handles, a kernel's tuning, first touches of the buffers).
template <typename Work>
double median_call_ms(Work&& work, const Runs& rule) {
  work();
  CUDA_CHECK(cudaDeviceSynchronize());
  EventTimer timer;
  return median_of_runs([&] { return timer.time_ms(work); }, rule);
}

}  // namespace course::bench
