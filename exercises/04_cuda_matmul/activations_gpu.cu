/// @file activations_gpu.cu
/// @brief Stage 04 (Task 4.7): element-wise activations and their derivatives, one thread per value.
///
/// The formulas are stage 01's (activations.hpp), in float: expf, tanhf and
/// log1pf are CUDA's single-precision functions (within 2 ulp of the exact
/// value). The activation is a kernel argument, the same for every thread, so
/// the switch costs no divergence; so is leaky ReLU's slope (stage 01's
/// `slope`, 0.01 unless --leaky-slope says otherwise).
#include "01_fc_softmax/activations.hpp"
#include "04_cuda_matmul/mlp_kernels.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

/// y[i] = f(x[i]) for i < n; `slope` is leaky ReLU's.
__global__ void activation_forward_kernel(Activation f, const float* x, float* y, long n, float slope) {
  // TODO(Task 4.7): one thread per value: y[i] = f(x[i]) for relu, leaky, sigmoid, tanh and softplus
  // HINT: softplus as fmaxf(v, 0) + log1pf(expf(-fabsf(v))), as in stage 01, so that it never overflows.
  // HINT: leaky ReLU's slope is the kernel's argument `slope`, as stage 01's.
}

/// dx[i] = dy[i] * f'(x[i]) for i < n, with y = f(x); `slope` is leaky ReLU's.
__global__ void activation_backward_kernel(Activation f, const float* x, const float* y, const float* dy, float* dx,
                                           long n, float slope) {
  // TODO(Task 4.7): one thread per value: dx[i] = dy[i] * f'(x[i]), from x (relu, leaky, softplus) or y (sigmoid, tanh)
}

void activation_forward_gpu(Activation f, const float* x, float* y, long n, float slope, cudaStream_t stream) {
  // TODO(Task 4.7): launch activation_forward_kernel with one thread per value
  // HINT: blocks_for(n) blocks of kElementwiseThreads threads (mlp_kernels.hpp).
  throw course::NotImplemented("Task 4.7", "04_cuda_matmul/activations_gpu.cu", "docs/lessons/04_cuda_matmul.md");
}

void activation_backward_gpu(Activation f, const float* x, const float* y, const float* dy, float* dx, long n,
                             float slope, cudaStream_t stream) {
  // TODO(Task 4.7): launch activation_backward_kernel with one thread per value
  throw course::NotImplemented("Task 4.7", "04_cuda_matmul/activations_gpu.cu", "docs/lessons/04_cuda_matmul.md");
}

}  // namespace course
