/// @file gpu_profiler.hpp
/// @brief --profile on the GPU: CUDA events around each piece of a step, summed per row and pass (given code).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "common/gpu/cuda_check.hpp"
#include "common/train/engine.hpp"

namespace course {

/// --profile on the GPU: a pair of CUDA events around each piece of work, read
/// back after each step and summed per row (a layer, the gather, the loss, ...)
/// and pass. Reading the events waits for the GPU, so a profiled epoch is slower.
class GpuProfiler {
 public:
  enum class Pass { Forward, Backward };

  GpuProfiler() = default;
  ~GpuProfiler();
  GpuProfiler(const GpuProfiler&) = delete;
  GpuProfiler& operator=(const GpuProfiler&) = delete;

  /// Adds a row named `name` and returns its index. Call before enable().
  std::size_t add_row(const std::string& name);
  /// Creates the events: until then time() only runs the work.
  void enable();
  /// Runs `work`; when enabled and `recording`, between two events recorded on `stream`.
  template <typename Work>
  void time(std::size_t row, Pass pass, bool recording, cudaStream_t stream, Work&& work) {
    if (!recording || sections_.empty()) {
      work();
      return;
    }
    Section& s = sections_[2 * row + (pass == Pass::Forward ? 0 : 1)];
    CUDA_CHECK(cudaEventRecord(s.start, stream));
    work();
    CUDA_CHECK(cudaEventRecord(s.stop, stream));
    s.pending = true;
  }
  /// Waits for the recorded events and adds their times to the rows; a row timed in
  /// this step counts one more call.
  void collect();
  /// Every row back to zero.
  void reset();
  const std::vector<LayerTime>& times() const { return times_; }
  /// Whether `row` was timed at least once since the profiler was made (reset() leaves it).
  bool ever_timed(std::size_t row) const { return ever_timed_[row]; }

 private:
  struct Section {
    cudaEvent_t start = nullptr, stop = nullptr;
    bool pending = false;  ///< recorded and not yet read
  };
  std::vector<LayerTime> times_;
  std::vector<bool> ever_timed_;   ///< per row: timed at least once (reset() leaves it)
  std::vector<Section> sections_;  ///< two per row: forward, backward
};

}  // namespace course
