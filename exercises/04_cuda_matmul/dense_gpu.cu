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
  // TODO(Task 4.6): one thread per element of y [B, OUT]: y[i] += b[i % OUT]
}

/// db[o] = sum_n dy[n][o], one thread per column o.
__global__ void column_sums_kernel(const float* dy, float* db, int B, int OUT) {
  // TODO(Task 4.6): one thread per column o sums the B rows of dy; neighbouring threads read neighbouring columns (coalesced)
}

void dense_forward_gpu(int gemm_kernel, const float* x, const float* W, const float* b, float* y, int B, int IN,
                       int OUT, cudaStream_t stream) {
  // TODO(Task 4.6): forward: one GEMM Y = X W^T (W is stored [OUT, IN], so it is op(B) with trans_b), then add the bias to every row
  // HINT: gemm(gemm_kernel, false, true, B, OUT, IN, 1.f, x, W, 0.f, y, stream); then add_bias_kernel over B * OUT elements.
  throw course::NotImplemented("Task 4.6", "04_cuda_matmul/dense_gpu.cu", "docs/lessons/04_cuda_matmul.md");
}

void dense_backward_gpu(int gemm_kernel, const float* x, const float* W, const float* dy, float* dW, float* db,
                        float* dx, int B, int IN, int OUT, cudaStream_t stream) {
  // TODO(Task 4.6): backward: dW = dY^T X and dX = dY W as GEMMs (dX only when dx is not null), db by column_sums_kernel
  // HINT: for dW, dy [B, OUT] is op(A) with trans_a (M = OUT, K = B); for dX, M = B, N = IN, K = OUT.
  throw course::NotImplemented("Task 4.6", "04_cuda_matmul/dense_gpu.cu", "docs/lessons/04_cuda_matmul.md");
}

}  // namespace course
