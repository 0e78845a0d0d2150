/// @file loss_gpu.cu
/// @brief Stage 04 (Task 4.8): the loss, its gradient and the correct count, without leaving the device.
///
/// One thread per example reads its row of K logits (K = 10 here: a loop, not
/// a parallel reduction, is the right tool). Everything a person sees at the
/// end of an epoch is summed in place on the device: the loss in a double
/// (60000 float additions would lose digits) and the correct predictions in an
/// integer, both with atomicAdd. The host reads those two numbers once per
/// epoch instead of once per batch: a copy to the host waits for every queued
/// kernel, and a wait per batch would cost more than the batch's kernels.
#include "04_cuda_matmul/mlp_kernels.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

/// Row n: softmax, loss, arg-max and (p - y) / B. Stage 01's loss.hpp in one pass.
__global__ void softmax_cross_entropy_kernel(const float* logits, const int* labels, int B, int K, float* dlogits,
                                             double* loss_sum, unsigned long long* correct, int* predictions) {
  // TODO(Task 4.8): one thread per row: max and arg-max, sum of e^(z - max), loss log(sum) - (z_y - max) into *loss_sum, arg-max == label into *correct, and dlogits = (p - onehot) / B
  // HINT: atomicAdd(loss_sum, double(loss)) and atomicAdd(correct, 1ull); the first maximum wins ties, as in stage 01's argmax.
}

/// Row n: squared error against the one-hot label, its gradient and the arg-max.
__global__ void mse_kernel(const float* outputs, const int* labels, int B, int K, float* dlogits, double* loss_sum,
                           unsigned long long* correct, int* predictions) {
  // TODO(Task 4.8): one thread per row: sum_k (z_k - onehot_k)^2 / K into *loss_sum, the arg-max count, and dlogits = 2 (z - onehot) / (B K)
}

/// Row n: mean_k |a_k - onehot_k| into *abs_error_sum. Given code, not a task: the MAE
/// is a metric beside the MSE (stage 01's absolute_error_sum), not part of the gradient.
__global__ void absolute_error_kernel(const float* outputs, const int* labels, int B, int K, double* abs_error_sum) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= B) return;
  const float* a = outputs + static_cast<long>(n) * K;
  const int label = labels[n];
  float row = 0.f;
  for (int k = 0; k < K; ++k) row += fabsf(a[k] - (k == label ? 1.f : 0.f));
  atomicAdd(abs_error_sum, static_cast<double>(row) / K);
}

void absolute_error_gpu(const float* outputs, const int* labels, int B, int K, double* abs_error_sum,
                        cudaStream_t stream) {
  constexpr int kRowsPerBlock = 128;
  absolute_error_kernel<<<blocks_for(B, kRowsPerBlock), kRowsPerBlock, 0, stream>>>(outputs, labels, B, K,
                                                                                  abs_error_sum);
  CUDA_CHECK_LAUNCH();
}

void softmax_cross_entropy_gpu(const float* logits, const int* labels, int B, int K, float* dlogits, double* loss_sum,
                               unsigned long long* correct, int* predictions, cudaStream_t stream) {
  // TODO(Task 4.8): launch softmax_cross_entropy_kernel with one thread per row
  throw course::NotImplemented("Task 4.8", "04_cuda_matmul/loss_gpu.cu", "docs/lessons/04_cuda_matmul.md");
}

void mse_gpu(const float* outputs, const int* labels, int B, int K, float* dlogits, double* loss_sum,
             unsigned long long* correct, int* predictions, cudaStream_t stream) {
  // TODO(Task 4.8): launch mse_kernel with one thread per row
  throw course::NotImplemented("Task 4.8", "04_cuda_matmul/loss_gpu.cu", "docs/lessons/04_cuda_matmul.md");
}

void loss_gpu(const std::string& loss, const float* logits, const int* labels, int B, int K, float* dlogits,
              double* loss_sum, unsigned long long* correct, int* predictions, double* abs_error_sum,
              cudaStream_t stream) {
  if (loss == "mse") {
    mse_gpu(logits, labels, B, K, dlogits, loss_sum, correct, predictions, stream);
    if (abs_error_sum != nullptr) absolute_error_gpu(logits, labels, B, K, abs_error_sum, stream);
  } else
    softmax_cross_entropy_gpu(logits, labels, B, K, dlogits, loss_sum, correct, predictions, stream);
}

}  // namespace course
