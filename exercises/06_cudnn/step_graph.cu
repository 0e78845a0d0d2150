/// @file step_graph.cu
/// @brief Stage 06 (Task 6.10): capturing the training step, replaying it, and the batch gather that follows a device counter.
#include <stdexcept>

#include "04_cuda_matmul/mlp_kernels.hpp"
#include "06_cudnn/step_graph.hpp"
#include "common/cuda_check.hpp"
#include "common/not_implemented.hpp"

namespace course {

void StepGraph::capture(cudaStream_t stream, const std::function<void()>& queue_step) {
  reset();
  // TODO(Task 6.10): record queue_step's work on `stream` into graph_ (cudaStreamBeginCapture ... cudaStreamEndCapture) and instantiate it into exec_
  // HINT: cudaStreamCaptureModeThreadLocal forbids unsafe calls (allocation, synchronisation) from this thread during the capture.
  // HINT: if queue_step throws, end the capture anyway (and destroy what it returns) before rethrowing, or the stream stays capturing.
  // HINT: cudaGraphInstantiate(&exec_, graph_, 0).
  throw course::NotImplemented("Task 6.10", "06_cudnn/step_graph.cu", "docs/lessons/06_cudnn.md");
}

void StepGraph::replay(cudaStream_t stream) {
  if (!ready()) throw std::logic_error("StepGraph::replay: no step was captured");
  // TODO(Task 6.10): queue one run of the instantiated graph on `stream`
  throw course::NotImplemented("Task 6.10", "06_cudnn/step_graph.cu", "docs/lessons/06_cudnn.md");
}

std::size_t StepGraph::nodes() const {
  if (graph_ == nullptr) return 0;
  std::size_t n = 0;
  CUDA_CHECK(cudaGraphGetNodes(graph_, nullptr, &n));
  return n;
}

void StepGraph::reset() {
  if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
  if (graph_ != nullptr) cudaGraphDestroy(graph_);
  exec_ = nullptr;
  graph_ = nullptr;
}

/// One thread per value of x [B, D]; the batch's rows of `order` start at *step * batch.
__global__ void gather_batch_at_step_kernel(const float* images, const int* labels, const int* order, const int* step,
                                            int batch, int B, long D, float* x, int* y) {
  // TODO(Task 6.10): x[r][d] = images[e][d] and (once per row) y[r] = labels[e], with e = order[*step * batch + r]
  // HINT: every thread reads the same *step (one cached load); neighbouring threads take neighbouring d, as in stage 04's gather.
}

__global__ void advance_step_kernel(int* step) {
  // TODO(Task 6.10): one thread adds one to the step counter
}

void gather_batch_at_step_gpu(const float* images, const int* labels, const int* order, const int* step, int batch,
                              int B, long D, float* x, int* y, cudaStream_t stream) {
  // TODO(Task 6.10): launch gather_batch_at_step_kernel with one thread per value of the batch, on `stream`, then check the launch
  throw course::NotImplemented("Task 6.10", "06_cudnn/step_graph.cu", "docs/lessons/06_cudnn.md");
}

void advance_step_gpu(int* step, cudaStream_t stream) {
  // TODO(Task 6.10): launch advance_step_kernel with a single thread on `stream`, then check the launch
  throw course::NotImplemented("Task 6.10", "06_cudnn/step_graph.cu", "docs/lessons/06_cudnn.md");
}

}  // namespace course
