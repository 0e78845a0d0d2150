/// @file loss_cudnn.cu
/// @brief Stage 06 (Task 6.8): log-softmax on cuDNN, then the loss, its gradient and the correct count in one kernel.
#include "04_cuda_matmul/mlp_kernels.hpp"
#include "06_cudnn/loss_cudnn.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/gpu/cudnn_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

void log_softmax_cudnn(const GpuHandles& h, cudnnTensorDescriptor_t rows, const float* logits, float* log_probs) {
  // BEGIN Task 6.8: log_probs = log softmax of every row, with cudnnSoftmaxForward (CUDNN_SOFTMAX_LOG, CUDNN_SOFTMAX_MODE_INSTANCE)
  // HINT: alpha = 1, beta = 0; `rows` describes both logits and log_probs.
  const float one = 1.f, zero = 0.f;
  CUDNN_CHECK(cudnnSoftmaxForward(h.cudnn, CUDNN_SOFTMAX_LOG, CUDNN_SOFTMAX_MODE_INSTANCE, &one, rows, logits, &zero,
                                  rows, log_probs));
  // END Task 6.8
}

/// Row n of log_probs: its loss, arg-max and gradient.
__global__ void nll_from_log_softmax_kernel(const float* log_probs, const int* labels, int B, int K, float* dlogits,
                                            double* loss_sum, unsigned long long* correct, int* predictions) {
  // BEGIN Task 6.8 (device): one thread per row: -log p_label into *loss_sum, arg-max (first maximum) == label into *correct, predictions[n], and dlogits = (e^{log p} - onehot) / B
  // HINT: atomicAdd(loss_sum, double(-lp[label])) and atomicAdd(correct, 1ull); the arg-max of log p is the arg-max of the logits.
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= B) return;
  const float* lp = log_probs + static_cast<long>(n) * K;
  const int label = labels[n];
  int best = 0;
  for (int k = 1; k < K; ++k)
    if (lp[k] > lp[best]) best = k;
  atomicAdd(loss_sum, static_cast<double>(-lp[label]));
  if (best == label) atomicAdd(correct, 1ull);
  if (predictions != nullptr) predictions[n] = best;
  if (dlogits != nullptr) {
    float* d = dlogits + static_cast<long>(n) * K;
    const float inv_B = 1.f / static_cast<float>(B);
    for (int k = 0; k < K; ++k) d[k] = (expf(lp[k]) - (k == label ? 1.f : 0.f)) * inv_B;
  }
  // END Task 6.8
}

void nll_from_log_softmax_gpu(const float* log_probs, const int* labels, int B, int K, float* dlogits,
                              double* loss_sum, unsigned long long* correct, int* predictions, cudaStream_t stream) {
  // BEGIN Task 6.8: launch nll_from_log_softmax_kernel with one thread per row on `stream`, then check the launch
  constexpr int kRowsPerBlock = 128;  // one thread per example: K = 10 is a loop, not a reduction
  nll_from_log_softmax_kernel<<<blocks_for(B, kRowsPerBlock), kRowsPerBlock, 0, stream>>>(
      log_probs, labels, B, K, dlogits, loss_sum, correct, predictions);
  CUDA_CHECK_LAUNCH();
  // END Task 6.8
}

}  // namespace course
