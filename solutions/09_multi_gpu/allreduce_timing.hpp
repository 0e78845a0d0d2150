/// @file allreduce_timing.hpp
/// @brief Stage 09: --profile's rows for the all-reduce (glue, not a task).
///
/// With --profile the trainer's table has, after every layer's row, one row per
/// all-reduce (flat: one; buckets: one per bucket, timed on the communication
/// stream, so they overlap the layers' rows) and, for buckets, the time the
/// compute stream waits for the last all-reduce: the part of the all-reduce that
/// the backward pass did not hide.
#pragma once

#include <cstddef>
#include <string>

#include "common/gpu/engine_parts.hpp"

namespace course {

/// A profiler's rows, used in the steps the engine records (`recording`); nothing without a profiler.
struct AllReduceTiming {
  GpuProfiler* profiler = nullptr;  ///< the data-parallel engine's own (rows are added before it is enabled)
  bool recording = false;           ///< set by the engine for each step it profiles

  /// A new row, or 0 when there is no profiler (nothing is timed then).
  std::size_t add_row(const std::string& name) { return profiler != nullptr ? profiler->add_row(name) : 0; }
  /// Runs `work`; when recording, between two events on `stream`, added to row `row` (backward pass).
  template <typename Work>
  void time(std::size_t row, cudaStream_t stream, Work&& work) {
    if (profiler == nullptr) {
      work();
      return;
    }
    profiler->time(row, GpuProfiler::Pass::Backward, recording, stream, work);
  }
};

}  // namespace course
