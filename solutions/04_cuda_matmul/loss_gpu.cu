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
  // BEGIN Task 4.8 (device): one thread per row: max and arg-max, sum of e^(z - max), loss log(sum) - (z_y - max) into *loss_sum, arg-max == label into *correct, and dlogits = (p - onehot) / B
  // HINT: atomicAdd(loss_sum, double(loss)) and atomicAdd(correct, 1ull); the first maximum wins ties, as in stage 01's argmax.
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= B) return;
  const float* z = logits + static_cast<long>(n) * K;
  const int label = labels[n];
  float top = z[0];
  int best = 0;
  for (int k = 1; k < K; ++k) {
    if (z[k] > top) {
      top = z[k];
      best = k;
    }
  }
  float sum = 0.f;
  for (int k = 0; k < K; ++k) sum += expf(z[k] - top);
  atomicAdd(loss_sum, static_cast<double>(logf(sum) - (z[label] - top)));
  if (best == label) atomicAdd(correct, 1ull);
  if (predictions != nullptr) predictions[n] = best;
  if (dlogits != nullptr) {
    float* d = dlogits + static_cast<long>(n) * K;
    for (int k = 0; k < K; ++k) d[k] = expf(z[k] - top) / sum / static_cast<float>(B);
    d[label] -= 1.f / static_cast<float>(B);
  }
  // END Task 4.8
}

/// Row n: squared error against the one-hot label, its gradient and the arg-max.
__global__ void mse_kernel(const float* outputs, const int* labels, int B, int K, float* dlogits, double* loss_sum,
                           unsigned long long* correct, int* predictions) {
  // BEGIN Task 4.8 (device): one thread per row: sum_k (z_k - onehot_k)^2 / K into *loss_sum, the arg-max count, and dlogits = 2 (z - onehot) / (B K)
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= B) return;
  const float* z = outputs + static_cast<long>(n) * K;
  const int label = labels[n];
  const float scale = 1.f / (static_cast<float>(B) * static_cast<float>(K));
  float squares = 0.f, top = z[0];
  int best = 0;
  for (int k = 0; k < K; ++k) {
    const float diff = z[k] - (k == label ? 1.f : 0.f);
    squares += diff * diff;
    if (dlogits != nullptr) dlogits[static_cast<long>(n) * K + k] = 2.f * diff * scale;
    if (z[k] > top) {
      top = z[k];
      best = k;
    }
  }
  atomicAdd(loss_sum, static_cast<double>(squares) / K);
  if (best == label) atomicAdd(correct, 1ull);
  if (predictions != nullptr) predictions[n] = best;
  // END Task 4.8
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
  // BEGIN Task 4.8: launch softmax_cross_entropy_kernel with one thread per row
  constexpr int kRowsPerBlock = 128;
  softmax_cross_entropy_kernel<<<blocks_for(B, kRowsPerBlock), kRowsPerBlock, 0, stream>>>(
      logits, labels, B, K, dlogits, loss_sum, correct, predictions);
  CUDA_CHECK_LAUNCH();
  // END Task 4.8
}

void mse_gpu(const float* outputs, const int* labels, int B, int K, float* dlogits, double* loss_sum,
             unsigned long long* correct, int* predictions, cudaStream_t stream) {
  // BEGIN Task 4.8: launch mse_kernel with one thread per row
  constexpr int kRowsPerBlock = 128;
  mse_kernel<<<blocks_for(B, kRowsPerBlock), kRowsPerBlock, 0, stream>>>(outputs, labels, B, K, dlogits, loss_sum,
                                                                         correct, predictions);
  CUDA_CHECK_LAUNCH();
  // END Task 4.8
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
