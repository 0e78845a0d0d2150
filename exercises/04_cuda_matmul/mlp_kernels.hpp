/// @file mlp_kernels.hpp
/// @brief Stage 04: the GPU versions of stage 01's layers, loss and update, for a whole minibatch.
///
/// Every pointer is device memory and every function is asynchronous on
/// `stream` (it returns once the work is queued; errors in the launch
/// configuration throw course::GpuError at once). The layouts are stage 01's,
/// row-major:
///
///     x, dx   [B, IN]      W, dW  [OUT, IN]      b, db  [OUT]      y, dy  [B, OUT]
///     logits, dlogits [B, K]      labels [B], each in [0, K)
///
/// | function                        | task | stage 01 counterpart                 |
/// |---------------------------------|------|--------------------------------------|
/// | dense_forward_gpu               | 4.6  | dense_forward (dense.hpp)            |
/// | dense_backward_gpu              | 4.6  | dense_backward                       |
/// | activation_forward_gpu          | 4.7  | activation_forward (activations.hpp) |
/// | activation_backward_gpu         | 4.7  | activation_backward                  |
/// | softmax_cross_entropy_gpu       | 4.8  | softmax_cross_entropy_forward + _backward, argmax (loss.hpp, train.hpp) |
/// | mse_gpu                         | 4.8  | mse_forward_backward                 |
/// | absolute_error_gpu (given)      |      | absolute_error_sum (the MAE)         |
/// | sgd_update_gpu                  | 4.9  | sgd_update (sgd.hpp)                 |
///
/// Task 4.10 runs them as the layers of a training step (mlp_step.cpp).
#pragma once

#include <string>

#include <cuda_runtime.h>

#include "common/model/arch.hpp"

namespace course {

/// y = x W^T + b: one GEMM (kernel `gemm_kernel`, see gemm.hpp) and a bias kernel.
void dense_forward_gpu(int gemm_kernel, const float* x, const float* W, const float* b, float* y, int B, int IN,
                       int OUT, cudaStream_t stream = 0);

/// dW = dy^T x (GEMM), db = column sums of dy, dx = dy W (GEMM; skipped when dx is null).
/// dW, db and dx are overwritten.
void dense_backward_gpu(int gemm_kernel, const float* x, const float* W, const float* dy, float* dW, float* db,
                        float* dx, int B, int IN, int OUT, cudaStream_t stream = 0);

/// y = f(x) for n values (stage 01's formulas, in float); `slope` is leaky ReLU's
/// for x <= 0 (LayerSpec::slope: course::kDefaultLeakySlope unless the spec says otherwise).
void activation_forward_gpu(Activation f, const float* x, float* y, long n, float slope, cudaStream_t stream = 0);

/// dx = dy * f'(x) for n values; y = f(x) as computed by activation_forward_gpu.
void activation_backward_gpu(Activation f, const float* x, const float* y, const float* dy, float* dx, long n,
                             float slope, cudaStream_t stream = 0);

/// Softmax cross-entropy of B rows of K logits, all on the device:
/// - adds the B per-example losses -log p_label to *loss_sum (a device double),
/// - adds the number of rows whose arg-max (first maximum) is the label to *correct,
/// - writes each row's arg-max to predictions[n] when predictions is not null,
/// - writes dL/dlogits = (p - onehot(label)) / B, the gradient of the batch MEAN, when dlogits is not null.
void softmax_cross_entropy_gpu(const float* logits, const int* labels, int B, int K, float* dlogits, double* loss_sum,
                               unsigned long long* correct, int* predictions, cudaStream_t stream = 0);

/// Mean squared error against one-hot targets, with the same outputs as
/// softmax_cross_entropy_gpu: per-example loss sum_k (z_k - [k == label])^2 / K
/// (so that loss_sum / B is stage 01's batch value) and dlogits = 2 (z - onehot) / (B K).
void mse_gpu(const float* outputs, const int* labels, int B, int K, float* dlogits, double* loss_sum,
             unsigned long long* correct, int* predictions, cudaStream_t stream = 0);

/// Adds sum_n mean_k |a_nk - onehot_k| over the B rows of `outputs` to *abs_error_sum (a
/// device double): the numerator of the mean absolute error, stage 01's absolute_error_sum.
/// Given code beside Task 4.8 (a metric, no gradient).
void absolute_error_gpu(const float* outputs, const int* labels, int B, int K, double* abs_error_sum,
                        cudaStream_t stream = 0);

/// The loss named `loss`: "mse" runs mse_gpu, and absolute_error_gpu when `abs_error_sum`
/// is not null; anything else softmax_cross_entropy_gpu (the engines check the name when
/// they are built).
void loss_gpu(const std::string& loss, const float* logits, const int* labels, int B, int K, float* dlogits,
              double* loss_sum, unsigned long long* correct, int* predictions, double* abs_error_sum,
              cudaStream_t stream = 0);

/// v = momentum * v + g, then w -= lr * v, for n parameters, with lr = hyper[0] and momentum =
/// hyper[1] read from device memory when the kernel runs (hyper: [2] on the device).
void sgd_update_gpu(float* w, const float* g, float* v, long n, const float* hyper, cudaStream_t stream = 0);

/// Threads per block of the element-wise kernels, and the blocks that cover n elements (at least 1).
constexpr int kElementwiseThreads = 256;
inline unsigned int blocks_for(long n, int threads = kElementwiseThreads) {
  return n > 0 ? static_cast<unsigned int>((n + threads - 1) / threads) : 1u;
}

}  // namespace course
