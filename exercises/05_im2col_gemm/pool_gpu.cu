/// @file pool_gpu.cu
/// @brief Stage 05 (Tasks 5.7 and 5.8): max-pool forward and backward kernels (rules in pool_gpu.hpp).
#include "04_cuda_matmul/mlp_kernels.hpp"
#include "05_im2col_gemm/arg_checks.hpp"
#include "05_im2col_gemm/pool_gpu.hpp"
#include "common/cuda_check.hpp"
#include "common/not_implemented.hpp"

namespace course {

/// Outputs along one axis of n inputs: floor((n + 2P - K) / S) + 1.
__device__ __forceinline__ int pool_out_dim(int n, int K, int P, int S) { return (n + 2 * P - K) / S + 1; }

/// One thread per output (n, c, oh, ow): the first largest cell of its window, cut to the image.
__global__ void maxpool_forward_kernel(const float* __restrict__ x, float* __restrict__ y, int* __restrict__ argmax,
                                       int B, PoolGeometry g) {
  // TODO(Task 5.7): one thread per output (n, c, oh, ow): scan the window cut to the image, rows max(oh*S - P, 0) to min(oh*S - P + K, H), keep the first largest cell (strict >), write its value and its index ih*W + iw
}

/// One thread per input cell (n, c, ih, iw): the sum of dy over the windows whose arg-max it is.
__global__ void maxpool_backward_kernel(const float* __restrict__ dy, const int* __restrict__ argmax,
                                        float* __restrict__ dx, int B, PoolGeometry g) {
  // TODO(Task 5.8): one thread per input cell: loop over the windows (oh, ow) that contain it, add dy of those whose argmax is this cell (ih*W + iw), write the sum (0 when it won none)
  // HINT: window oh covers rows oh*S - P .. oh*S - P + K - 1, so the windows holding row ih are oh from ceil((ih + P - K + 1) / S) (at least 0) to floor((ih + P) / S) (at most Ho - 1).
}

void maxpool_forward_gpu(const float* x, float* y, int* argmax, int B, const PoolGeometry& g, cudaStream_t stream) {
  g.check();
  require_batch(B, "maxpool_forward_gpu");
  require_pointer(x, "x", "maxpool_forward_gpu");
  require_pointer(y, "y", "maxpool_forward_gpu");
  require_pointer(argmax, "argmax", "maxpool_forward_gpu");
  // TODO(Task 5.7): launch maxpool_forward_kernel with one thread per output (B * g.out_size() of them)
  throw course::NotImplemented("Task 5.7", "05_im2col_gemm/pool_gpu.cu", "docs/lessons/05_im2col_gemm.md");
}

void maxpool_backward_gpu(const float* dy, const int* argmax, float* dx, int B, const PoolGeometry& g,
                          cudaStream_t stream) {
  g.check();
  require_batch(B, "maxpool_backward_gpu");
  require_pointer(dy, "dy", "maxpool_backward_gpu");
  require_pointer(argmax, "argmax", "maxpool_backward_gpu");
  require_pointer(dx, "dx", "maxpool_backward_gpu");
  // TODO(Task 5.8): launch maxpool_backward_kernel with one thread per input cell (B * g.in_size() of them)
  throw course::NotImplemented("Task 5.8", "05_im2col_gemm/pool_gpu.cu", "docs/lessons/05_im2col_gemm.md");
}

}  // namespace course
