/// @file sgd_gpu.cu
/// @brief Stage 04 (Task 4.9): the SGD update with momentum, one thread per parameter.
///
///     v <- momentum * v + g
///     w <- w - lr * v
///
/// The GPU engine keeps every weight and bias of the model in one contiguous
/// buffer (and the gradients and velocities in two more, laid out alike), so
/// one launch updates the whole model after each batch instead of one launch
/// per tensor.
///
/// The learning rate and the momentum come from device memory (`hyper`), not
/// as the kernel's arguments: a step recorded as a CUDA graph keeps the
/// arguments it was recorded with, but reads memory when it runs, so the
/// engine changes the rate of a captured step by writing hyper[0].
#include "04_cuda_matmul/mlp_kernels.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

/// One parameter per thread: w[i], g[i], v[i] for i < n; lr = hyper[0], momentum = hyper[1].
__global__ void sgd_update_kernel(float* w, const float* g, float* v, long n, const float* hyper) {
  // TODO(Task 4.9): one thread per parameter: v = momentum * v + g, then w -= lr * v
}

void sgd_update_gpu(float* w, const float* g, float* v, long n, const float* hyper, cudaStream_t stream) {
  // TODO(Task 4.9): launch sgd_update_kernel with one thread per parameter
  throw course::NotImplemented("Task 4.9", "04_cuda_matmul/sgd_gpu.cu", "docs/lessons/04_cuda_matmul.md");
}

}  // namespace course
