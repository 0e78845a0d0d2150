/// @file im2col.cu
/// @brief Stage 05 (Tasks 5.1 and 5.2): im2col and col2im kernels, one thread per element written.
///
/// Both are pure data movement (no arithmetic but col2im's additions), so what
/// matters is that the threads of a warp touch neighbouring addresses:
///
/// - im2col: one thread per element of U. Neighbouring threads take
///   neighbouring taps r of one patch, so the writes, which are the bulk of the
///   traffic (U is ~K*K times larger than x), are coalesced; the reads of a
///   patch hit a few neighbouring rows of x, which the cache serves.
/// - col2im: one thread per element of dx, which *gathers* every entry of dU
///   that is a copy of its input value and writes their sum once. Each thread
///   owns its output, so no two threads ever write the same address: no
///   atomics, no race, and the sum is taken in a fixed order (kh, kw
///   ascending), so the result is the same bits on every run. (The other way
///   round, one thread per element of dU adding into dx, would need atomicAdd,
///   since up to K*K threads hit the same input value, and the order of those
///   additions would change from run to run.)
#include "04_cuda_matmul/mlp_kernels.hpp"
#include "05_im2col_gemm/arg_checks.hpp"
#include "05_im2col_gemm/im2col.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

/// Outputs along one axis of n inputs: floor((n + 2P - K) / S) + 1 (ConvGeometry's
/// member functions are host code, so the kernels compute this themselves).
__device__ __forceinline__ int conv_out_dim(int n, int K, int P, int S) { return (n + 2 * P - K) / S + 1; }

/// U[row][r] = x[n][ci][oh*S - P + kh][ow*S - P + kw], 0 on padding, for every element of U.
__global__ void im2col_kernel(const float* __restrict__ x, int B, ConvGeometry g, float* __restrict__ U) {
  // TODO(Task 5.1): one thread per element i of U [B*Ho*Wo, C_in*K*K]: split i into the pixel (n, oh, ow) and the tap (ci, kh, kw), read x at (oh*S - P + kh, ow*S - P + kw), 0 outside the image
  // HINT: row = i / R and r = i % R with R = C_in*K*K; then ow = row % Wo, oh = (row / Wo) % Ho, n = row / (Ho*Wo); kw = r % K, kh = (r / K) % K, ci = r / (K*K).
}

/// dx[n][ci][ih][iw] = sum of the entries of dU that im2col copied x[n][ci][ih][iw] into.
__global__ void col2im_kernel(const float* __restrict__ dU, int B, ConvGeometry g, float* __restrict__ dx) {
  // TODO(Task 5.2): one thread per input value (n, ci, ih, iw): for each tap (kh, kw) find the output pixel (oh, ow) whose patch put this value there, if any, and add that entry of dU; write the sum once
  // HINT: oh*S - P + kh = ih means oh = (ih + P - kh) / S, which exists only when ih + P - kh >= 0, divides by S, and gives oh < Ho (the same for ow).
}

void im2col_gpu(const float* x, int B, const ConvGeometry& g, float* U, cudaStream_t stream) {
  g.check();
  require_batch(B, "im2col_gpu");
  require_pointers("im2col_gpu", {{x, "x"}, {U, "U"}});
  // TODO(Task 5.1): launch im2col_kernel with one thread per element of U (unrolled_floats(B, g) of them)
  throw course::NotImplemented("Task 5.1", "05_im2col_gemm/im2col.cu", "docs/lessons/05_im2col_gemm.md");
}

void col2im_gpu(const float* dU, int B, const ConvGeometry& g, float* dx, cudaStream_t stream) {
  g.check();
  require_batch(B, "col2im_gpu");
  require_pointers("col2im_gpu", {{dU, "dU"}, {dx, "dx"}});
  // TODO(Task 5.2): launch col2im_kernel with one thread per element of dx (B * C_in * H * W of them)
  throw course::NotImplemented("Task 5.2", "05_im2col_gemm/im2col.cu", "docs/lessons/05_im2col_gemm.md");
}

}  // namespace course
