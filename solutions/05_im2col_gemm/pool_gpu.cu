/// @file pool_gpu.cu
/// @brief Stage 05 (Tasks 5.7 and 5.8): max-pool forward and backward kernels (rules in pool_gpu.hpp); average pooling (given).
#include "04_cuda_matmul/mlp_kernels.hpp"
#include "05_im2col_gemm/arg_checks.hpp"
#include "05_im2col_gemm/pool_gpu.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

/// Outputs along one axis of n inputs: floor((n + 2P - K) / S) + 1.
__device__ __forceinline__ int pool_out_dim(int n, int K, int P, int S) { return (n + 2 * P - K) / S + 1; }

/// One thread per output (n, c, oh, ow): the first largest cell of its window, cut to the image.
__global__ void maxpool_forward_kernel(const float* __restrict__ x, float* __restrict__ y, int* __restrict__ argmax,
                                       int B, PoolGeometry g) {
  // BEGIN Task 5.7 (device): one thread per output (n, c, oh, ow): scan the window cut to the image, rows max(oh*S - P, 0) to min(oh*S - P + K, H), keep the first largest cell (strict >), write its value and its index ih*W + iw
  const int Ho = pool_out_dim(g.H, g.K, g.P, g.S), Wo = pool_out_dim(g.W, g.K, g.P, g.S);
  const long o = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (o >= static_cast<long>(B) * g.C * Ho * Wo) return;
  const int ow = static_cast<int>(o % Wo), oh = static_cast<int>((o / Wo) % Ho);
  const long plane = o / (static_cast<long>(Wo) * Ho);  // n * C + c
  const float* xp = x + plane * g.H * g.W;
  const int top = oh * g.S - g.P, left = ow * g.S - g.P;
  const int h0 = max(top, 0), h1 = min(top + g.K, g.H);
  const int w0 = max(left, 0), w1 = min(left + g.K, g.W);
  int best = h0 * g.W + w0;
  float best_value = xp[best];
  for (int ih = h0; ih < h1; ++ih)
    for (int iw = w0; iw < w1; ++iw) {
      const float v = xp[ih * g.W + iw];
      if (v > best_value) {
        best_value = v;
        best = ih * g.W + iw;
      }
    }
  y[o] = best_value;
  argmax[o] = best;
  // END Task 5.7
}

/// One thread per input cell (n, c, ih, iw): the sum of dy over the windows whose arg-max it is.
__global__ void maxpool_backward_kernel(const float* __restrict__ dy, const int* __restrict__ argmax,
                                        float* __restrict__ dx, int B, PoolGeometry g) {
  // BEGIN Task 5.8 (device): one thread per input cell: loop over the windows (oh, ow) that contain it, add dy of those whose argmax is this cell (ih*W + iw), write the sum (0 when it won none)
  // HINT: window oh covers rows oh*S - P .. oh*S - P + K - 1, so the windows holding row ih are oh from ceil((ih + P - K + 1) / S) (at least 0) to floor((ih + P) / S) (at most Ho - 1).
  const int Ho = pool_out_dim(g.H, g.K, g.P, g.S), Wo = pool_out_dim(g.W, g.K, g.P, g.S);
  const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<long>(B) * g.C * g.H * g.W) return;
  const int iw = static_cast<int>(i % g.W), ih = static_cast<int>((i / g.W) % g.H);
  const long plane = i / (static_cast<long>(g.W) * g.H);
  const int cell = ih * g.W + iw;
  const int first_row = ih + g.P - g.K + 1, first_col = iw + g.P - g.K + 1;  // may be negative
  const int oh0 = first_row > 0 ? (first_row + g.S - 1) / g.S : 0, oh1 = min((ih + g.P) / g.S, Ho - 1);
  const int ow0 = first_col > 0 ? (first_col + g.S - 1) / g.S : 0, ow1 = min((iw + g.P) / g.S, Wo - 1);
  const long base = plane * Ho * Wo;
  float sum = 0.f;
  for (int oh = oh0; oh <= oh1; ++oh)
    for (int ow = ow0; ow <= ow1; ++ow) {
      const long o = base + oh * Wo + ow;
      if (argmax[o] == cell) sum += dy[o];
    }
  dx[i] = sum;
  // END Task 5.8
}

void maxpool_forward_gpu(const float* x, float* y, int* argmax, int B, const PoolGeometry& g, cudaStream_t stream) {
  g.check();
  require_batch(B, "maxpool_forward_gpu");
  require_pointers("maxpool_forward_gpu", {{x, "x"}, {y, "y"}, {argmax, "argmax"}});
  // BEGIN Task 5.7: launch maxpool_forward_kernel with one thread per output (B * g.out_size() of them)
  const long n = static_cast<long>(B) * g.out_size();
  maxpool_forward_kernel<<<blocks_for(n), kElementwiseThreads, 0, stream>>>(x, y, argmax, B, g);
  CUDA_CHECK_LAUNCH();
  // END Task 5.7
}

void maxpool_backward_gpu(const float* dy, const int* argmax, float* dx, int B, const PoolGeometry& g,
                          cudaStream_t stream) {
  g.check();
  require_batch(B, "maxpool_backward_gpu");
  require_pointers("maxpool_backward_gpu", {{dy, "dy"}, {argmax, "argmax"}, {dx, "dx"}});
  // BEGIN Task 5.8: launch maxpool_backward_kernel with one thread per input cell (B * g.in_size() of them)
  const long n = static_cast<long>(B) * g.in_size();
  maxpool_backward_kernel<<<blocks_for(n), kElementwiseThreads, 0, stream>>>(dy, argmax, dx, B, g);
  CUDA_CHECK_LAUNCH();
  // END Task 5.8
}

// ---- average pooling (given code, not a task) ----------------------------------------------

/// One thread per output (n, c, oh, ow): the sum of its window cut to the image, over K*K.
__global__ void avgpool_forward_kernel(const float* __restrict__ x, float* __restrict__ y, int B, PoolGeometry g) {
  const int Ho = pool_out_dim(g.H, g.K, g.P, g.S), Wo = pool_out_dim(g.W, g.K, g.P, g.S);
  const long o = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (o >= static_cast<long>(B) * g.C * Ho * Wo) return;
  const int ow = static_cast<int>(o % Wo), oh = static_cast<int>((o / Wo) % Ho);
  const long plane = o / (static_cast<long>(Wo) * Ho);  // n * C + c
  const float* xp = x + plane * g.H * g.W;
  const int top = oh * g.S - g.P, left = ow * g.S - g.P;
  const int h0 = max(top, 0), h1 = min(top + g.K, g.H);
  const int w0 = max(left, 0), w1 = min(left + g.K, g.W);
  float sum = 0.f;
  for (int ih = h0; ih < h1; ++ih)
    for (int iw = w0; iw < w1; ++iw) sum += xp[ih * g.W + iw];  // stage 02's order: row by row
  y[o] = sum / static_cast<float>(g.K * g.K);  // a true division, as on the CPU (no reciprocal)
}

/// One thread per input cell (n, c, ih, iw): the sum of dy / (K*K) over the windows that hold it.
__global__ void avgpool_backward_kernel(const float* __restrict__ dy, float* __restrict__ dx, int B, PoolGeometry g) {
  const int Ho = pool_out_dim(g.H, g.K, g.P, g.S), Wo = pool_out_dim(g.W, g.K, g.P, g.S);
  const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<long>(B) * g.C * g.H * g.W) return;
  const int iw = static_cast<int>(i % g.W), ih = static_cast<int>((i / g.W) % g.H);
  const long plane = i / (static_cast<long>(g.W) * g.H);
  // Window oh holds row ih when oh*S - P <= ih <= oh*S - P + K - 1 (as in maxpool_backward_kernel).
  const int first_row = ih + g.P - g.K + 1, first_col = iw + g.P - g.K + 1;  // may be negative
  const int oh0 = first_row > 0 ? (first_row + g.S - 1) / g.S : 0, oh1 = min((ih + g.P) / g.S, Ho - 1);
  const int ow0 = first_col > 0 ? (first_col + g.S - 1) / g.S : 0, ow1 = min((iw + g.P) / g.S, Wo - 1);
  const float area = static_cast<float>(g.K * g.K);
  const float* dyp = dy + plane * Ho * Wo;
  float sum = 0.f;
  for (int oh = oh0; oh <= oh1; ++oh)
    for (int ow = ow0; ow <= ow1; ++ow) sum += dyp[oh * Wo + ow] / area;  // each window's share, in stage 02's order
  dx[i] = sum;
}

void avgpool_forward_gpu(const float* x, float* y, int B, const PoolGeometry& g, cudaStream_t stream) {
  g.check("average-pool");
  require_batch(B, "avgpool_forward_gpu");
  require_pointers("avgpool_forward_gpu", {{x, "x"}, {y, "y"}});
  const long n = static_cast<long>(B) * g.out_size();
  avgpool_forward_kernel<<<blocks_for(n), kElementwiseThreads, 0, stream>>>(x, y, B, g);
  CUDA_CHECK_LAUNCH();
}

void avgpool_backward_gpu(const float* dy, float* dx, int B, const PoolGeometry& g, cudaStream_t stream) {
  g.check("average-pool");
  require_batch(B, "avgpool_backward_gpu");
  require_pointers("avgpool_backward_gpu", {{dy, "dy"}, {dx, "dx"}});
  const long n = static_cast<long>(B) * g.in_size();
  avgpool_backward_kernel<<<blocks_for(n), kElementwiseThreads, 0, stream>>>(dy, dx, B, g);
  CUDA_CHECK_LAUNCH();
}

}  // namespace course
