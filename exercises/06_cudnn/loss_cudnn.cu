/// @file loss_cudnn.cu
/// @brief Stage 06 (Task 6.8): log-softmax on cuDNN, then the loss, its gradient and the correct count in one kernel.
#include "04_cuda_matmul/mlp_kernels.hpp"
#include "06_cudnn/loss_cudnn.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/gpu/cudnn_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

void log_softmax_cudnn(const GpuHandles& h, cudnnTensorDescriptor_t rows, const float* logits, float* log_probs) {
  // TODO(Task 6.8): log_probs = log softmax of every row, with cudnnSoftmaxForward (CUDNN_SOFTMAX_LOG, CUDNN_SOFTMAX_MODE_INSTANCE)
  // HINT: alpha = 1, beta = 0; `rows` describes both logits and log_probs.
  throw course::NotImplemented("Task 6.8", "06_cudnn/loss_cudnn.cu", "docs/lessons/06_cudnn.md");
}

/// Row n of log_probs: its loss, arg-max and gradient.
__global__ void nll_from_log_softmax_kernel(const float* log_probs, const int* labels, int B, int K, float* dlogits,
                                            double* loss_sum, unsigned long long* correct, int* predictions) {
  // TODO(Task 6.8): one thread per row: -log p_label into *loss_sum, arg-max (first maximum) == label into *correct, predictions[n], and dlogits = (e^{log p} - onehot) / B
  // HINT: atomicAdd(loss_sum, double(-lp[label])) and atomicAdd(correct, 1ull); the arg-max of log p is the arg-max of the logits.
}

void nll_from_log_softmax_gpu(const float* log_probs, const int* labels, int B, int K, float* dlogits,
                              double* loss_sum, unsigned long long* correct, int* predictions, cudaStream_t stream) {
  // TODO(Task 6.8): launch nll_from_log_softmax_kernel with one thread per row on `stream`, then check the launch
  throw course::NotImplemented("Task 6.8", "06_cudnn/loss_cudnn.cu", "docs/lessons/06_cudnn.md");
}

}  // namespace course
