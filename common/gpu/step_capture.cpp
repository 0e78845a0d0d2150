/// @file step_capture.cpp
/// @brief Capturing a step into a CUDA graph and replaying it (see the header).
#include "common/gpu/step_capture.hpp"

#include <stdexcept>

#include "common/gpu/cuda_check.hpp"

namespace course {

void StepCapture::capture(cudaStream_t stream, const std::function<void()>& queue_step) {
  reset();
  // Thread-local mode: this thread may not allocate or synchronise while it captures.
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    queue_step();
  } catch (...) {
    cudaGraph_t partial = nullptr;
    cudaStreamEndCapture(stream, &partial);  // ends the capture; its own error is secondary here
    if (partial != nullptr) cudaGraphDestroy(partial);
    cudaGetLastError();
    throw;
  }
  CUDA_CHECK(cudaStreamEndCapture(stream, &graph_));
  CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0));
}

void StepCapture::replay(cudaStream_t stream) {
  if (!ready()) throw std::logic_error("StepCapture::replay: no step was captured");
  CUDA_CHECK(cudaGraphLaunch(exec_, stream));
}

std::size_t StepCapture::nodes() const {
  if (graph_ == nullptr) return 0;
  std::size_t n = 0;
  CUDA_CHECK(cudaGraphGetNodes(graph_, nullptr, &n));
  return n;
}

void StepCapture::reset() {
  if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
  if (graph_ != nullptr) cudaGraphDestroy(graph_);
  exec_ = nullptr;
  graph_ = nullptr;
}

}  // namespace course
