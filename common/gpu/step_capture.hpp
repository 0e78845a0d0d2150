/// @file step_capture.hpp
/// @brief A training step recorded once as a CUDA graph and replayed for every full batch (given code).
///
/// While a stream is capturing, nothing queued on it runs: every launch is recorded, with
/// its arguments, as a node of a graph, and one cudaGraphLaunch then queues the whole step
/// at the cost of one launch. A replay repeats the recorded arguments exactly, so what
/// changes from batch to batch lives in device memory: the step counter the gather reads
/// (device_epoch.hpp). A capture forbids waiting for the device and allocating memory.
#pragma once

#include <cstddef>
#include <functional>

#include <cuda_runtime.h>

namespace course {

class StepCapture {
 public:
  StepCapture() = default;
  ~StepCapture() { reset(); }
  StepCapture(const StepCapture&) = delete;
  StepCapture& operator=(const StepCapture&) = delete;

  /// Records what `queue_step` queues on `stream` (none of it runs now) and instantiates
  /// it, replacing any graph before. When queue_step throws or the capture fails, the
  /// stream is left capturing nothing, no graph is kept, and the error propagates.
  void capture(cudaStream_t stream, const std::function<void()>& queue_step);
  /// Queues one run of the recorded step on `stream`; std::logic_error when none was captured.
  void replay(cudaStream_t stream);
  bool ready() const { return exec_ != nullptr; }
  /// Nodes of the captured graph; 0 when none.
  std::size_t nodes() const;
  void reset();

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace course
