/// @file step_graph.hpp
/// @brief Stage 06 (Task 6.10): one training step recorded as a CUDA graph and replayed for every batch.
///
/// At batch 64 a training step of `cnn` is 34 calls: cuDNN's and cuBLAS's
/// (each launching one or a few kernels) and our own kernels (gather, loss,
/// update, step counter). Each kernel works for a few microseconds, and
/// preparing and launching a library call costs the host several
/// microseconds too, so the GPU spends much of the step waiting for the next
/// launch. A CUDA graph removes that wait. While a stream is *capturing*,
/// nothing queued on it runs: every kernel launch, copy and library call is
/// recorded, with its arguments, as nodes of a graph. The graph is
/// instantiated once (checked and prepared as a whole), and then one
/// cudaGraphLaunch queues every kernel of the step at the cost of one launch.
///
/// A replay repeats the recorded arguments exactly: the same pointers, the same
/// sizes, the same scalars. Whatever must change between batches must
/// therefore live in device memory. Here that is the position in the epoch: a
/// step counter on the device. The batch gather reads the counter to find its
/// rows of the epoch's shuffled order (uploaded once per epoch), and the last
/// node of the step adds one to it. Loss and correct count are added up in
/// device memory too, so a step needs nothing from the host.
///
/// What a capture forbids: anything that waits for the GPU (a copy to the
/// host, cudaStreamSynchronize, cudnnFind*), allocation (cudaMalloc), and work
/// on the legacy default stream. So the algorithms are chosen and every buffer
/// allocated before the capture, and cuBLAS has its own workspace (Task 6.1).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>

namespace course {

/// A captured step: record once, replay many times. Not copyable.
class StepGraph {
 public:
  StepGraph() = default;
  ~StepGraph() { reset(); }
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;

  /// Records what `queue_step` queues on `stream` into a graph (none of it runs
  /// now) and instantiates it, replacing any earlier graph. If queue_step throws
  /// or the capture fails, the stream is left capturing nothing, no graph is
  /// kept, and the error propagates (course::GpuError names the failing call).
  void capture(cudaStream_t stream, const std::function<void()>& queue_step);

  /// Queues one run of the whole recorded step on `stream`.
  /// Throws std::logic_error when nothing was captured.
  void replay(cudaStream_t stream);

  /// True once a capture succeeded (and reset() was not called since).
  bool ready() const { return exec_ != nullptr; }
  /// Nodes (kernels, copies, memsets) in the captured graph; 0 when none.
  std::size_t nodes() const;
  /// Destroys the graph, e.g. when a buffer it points into was reallocated.
  void reset();

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

/// The batch gather of a captured step. For r in [0, B): x[r] = images[e] (D
/// floats) and y[r] = labels[e], with e = order[*step * batch + r]: the rows of
/// batch *step of the epoch's order, read from the device when the kernel runs.
void gather_batch_at_step_gpu(const float* images, const int* labels, const int* order, const int* step, int batch,
                              int B, long D, float* x, int* y, cudaStream_t stream);

/// *step += 1 on the device: the last node of a training step.
void advance_step_gpu(int* step, cudaStream_t stream);

}  // namespace course
