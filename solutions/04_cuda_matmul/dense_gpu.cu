/// @file dense_gpu.cu
/// @brief Stage 04 (Task 4.6): the dense layer of a whole minibatch as three GEMMs.
///
/// Stage 01 looped over the examples of a batch. Stacked as the rows of X, the
/// batch is one matrix, and the layer is one matrix product per pass:
///
///     forward    Y  = X W^T + b      [B, OUT] = [B, IN] [IN, OUT]     gemm(trans_b)
///     backward   dW = dY^T X         [OUT, IN] = [OUT, B] [B, IN]     gemm(trans_a)
///                db = sum_n dY[n]    [OUT]                            column sums
///                dX = dY W           [B, IN] = [B, OUT] [OUT, IN]     gemm
///
/// No matrix is ever transposed in memory: gemm() reads W as W^T (and dY as
/// dY^T) by its index mapping. dW sums over the batch inside the product's K
/// dimension (K = B), which is exactly the sum over examples stage 01 wrote out.
#include "04_cuda_matmul/gemm.hpp"
#include "04_cuda_matmul/mlp_kernels.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

/// y[n][o] += b[o] for the B x OUT elements of y, one thread per element.
__global__ void add_bias_kernel(float* y, const float* b, int B, int OUT) {
  // BEGIN Task 4.6 (device): one thread per element of y [B, OUT]: y[i] += b[i % OUT]
  const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < static_cast<long>(B) * OUT) y[i] += b[i % OUT];
  // END Task 4.6
}

/// db[o] = sum_n dy[n][o], one thread per column o.
__global__ void column_sums_kernel(const float* dy, float* db, int B, int OUT) {
  // BEGIN Task 4.6 (device): one thread per column o sums the B rows of dy; neighbouring threads read neighbouring columns (coalesced)
  const int o = blockIdx.x * blockDim.x + threadIdx.x;
  if (o >= OUT) return;
  float sum = 0.f;
  for (int n = 0; n < B; ++n) sum += dy[static_cast<long>(n) * OUT + o];
  db[o] = sum;
  // END Task 4.6
}

void dense_forward_gpu(int gemm_kernel, const float* x, const float* W, const float* b, float* y, int B, int IN,
                       int OUT, cudaStream_t stream) {
  // BEGIN Task 4.6: forward: one GEMM Y = X W^T (W is stored [OUT, IN], so it is op(B) with trans_b), then add the bias to every row
  // HINT: gemm(gemm_kernel, false, true, B, OUT, IN, 1.f, x, W, 0.f, y, stream); then add_bias_kernel over B * OUT elements.
  gemm(gemm_kernel, /*trans_a=*/false, /*trans_b=*/true, B, OUT, IN, 1.f, x, W, 0.f, y, stream);
  const long n = static_cast<long>(B) * OUT;
  add_bias_kernel<<<blocks_for(n), kElementwiseThreads, 0, stream>>>(y, b, B, OUT);
  CUDA_CHECK_LAUNCH();
  // END Task 4.6
}

void dense_backward_gpu(int gemm_kernel, const float* x, const float* W, const float* dy, float* dW, float* db,
                        float* dx, int B, int IN, int OUT, cudaStream_t stream) {
  // BEGIN Task 4.6: backward: dW = dY^T X and dX = dY W as GEMMs (dX only when dx is not null), db by column_sums_kernel
  // HINT: for dW, dy [B, OUT] is op(A) with trans_a (M = OUT, K = B); for dX, M = B, N = IN, K = OUT.
  gemm(gemm_kernel, /*trans_a=*/true, /*trans_b=*/false, OUT, IN, B, 1.f, dy, x, 0.f, dW, stream);
  column_sums_kernel<<<blocks_for(OUT), kElementwiseThreads, 0, stream>>>(dy, db, B, OUT);
  CUDA_CHECK_LAUNCH();
  if (dx != nullptr) gemm(gemm_kernel, /*trans_a=*/false, /*trans_b=*/false, B, IN, OUT, 1.f, dy, W, 0.f, dx, stream);
  // END Task 4.6
}

}  // namespace course
