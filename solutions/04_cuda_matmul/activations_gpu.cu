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
  // BEGIN Task 4.7 (device): one thread per value: y[i] = f(x[i]) for relu, leaky, sigmoid, tanh and softplus
  // HINT: softplus as fmaxf(v, 0) + log1pf(expf(-fabsf(v))), as in stage 01, so that it never overflows.
  // HINT: leaky ReLU's slope is the kernel's argument `slope`, as stage 01's.
  const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float v = x[i];
  float out = 0.f;
  switch (f) {
    case Activation::ReLU:
      out = v > 0.f ? v : 0.f;
      break;
    case Activation::LeakyReLU:
      out = v > 0.f ? v : slope * v;
      break;
    case Activation::Sigmoid:
      out = 1.f / (1.f + expf(-v));
      break;
    case Activation::Tanh:
      out = tanhf(v);
      break;
    case Activation::Softplus:
      out = fmaxf(v, 0.f) + log1pf(expf(-fabsf(v)));
      break;
  }
  y[i] = out;
  // END Task 4.7
}

/// dx[i] = dy[i] * f'(x[i]) for i < n, with y = f(x); `slope` is leaky ReLU's.
__global__ void activation_backward_kernel(Activation f, const float* x, const float* y, const float* dy, float* dx,
                                           long n, float slope) {
  // BEGIN Task 4.7 (device): one thread per value: dx[i] = dy[i] * f'(x[i]), from x (relu, leaky, softplus) or y (sigmoid, tanh)
  const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float g = dy[i];
  float out = 0.f;
  switch (f) {
    case Activation::ReLU:
      out = x[i] > 0.f ? g : 0.f;
      break;
    case Activation::LeakyReLU:
      out = x[i] > 0.f ? g : slope * g;
      break;
    case Activation::Sigmoid:
      out = g * y[i] * (1.f - y[i]);
      break;
    case Activation::Tanh:
      out = g * (1.f - y[i] * y[i]);
      break;
    case Activation::Softplus:
      out = g / (1.f + expf(-x[i]));
      break;
  }
  dx[i] = out;
  // END Task 4.7
}

void activation_forward_gpu(Activation f, const float* x, float* y, long n, float slope, cudaStream_t stream) {
  // BEGIN Task 4.7: launch activation_forward_kernel with one thread per value
  // HINT: blocks_for(n) blocks of kElementwiseThreads threads (mlp_kernels.hpp).
  activation_forward_kernel<<<blocks_for(n), kElementwiseThreads, 0, stream>>>(f, x, y, n, slope);
  CUDA_CHECK_LAUNCH();
  // END Task 4.7
}

void activation_backward_gpu(Activation f, const float* x, const float* y, const float* dy, float* dx, long n,
                             float slope, cudaStream_t stream) {
  // BEGIN Task 4.7: launch activation_backward_kernel with one thread per value
  activation_backward_kernel<<<blocks_for(n), kElementwiseThreads, 0, stream>>>(f, x, y, dy, dx, n, slope);
  CUDA_CHECK_LAUNCH();
  // END Task 4.7
}

}  // namespace course
