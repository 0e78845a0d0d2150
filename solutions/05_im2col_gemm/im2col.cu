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
  // BEGIN Task 5.1 (device): one thread per element i of U [B*Ho*Wo, C_in*K*K]: split i into the pixel (n, oh, ow) and the tap (ci, kh, kw), read x at (oh*S - P + kh, ow*S - P + kw), 0 outside the image
  // HINT: row = i / R and r = i % R with R = C_in*K*K; then ow = row % Wo, oh = (row / Wo) % Ho, n = row / (Ho*Wo); kw = r % K, kh = (r / K) % K, ci = r / (K*K).
  const int Ho = conv_out_dim(g.H, g.K, g.P, g.S), Wo = conv_out_dim(g.W, g.K, g.P, g.S);
  const int R = g.C_in * g.K * g.K;
  const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<long>(B) * Ho * Wo * R) return;
  const long row = i / R;
  const int r = static_cast<int>(i % R);
  const int ow = static_cast<int>(row % Wo), oh = static_cast<int>((row / Wo) % Ho);
  const long n = row / (static_cast<long>(Ho) * Wo);
  const int kw = r % g.K, kh = (r / g.K) % g.K, ci = r / (g.K * g.K);
  const int ih = oh * g.S - g.P + kh, iw = ow * g.S - g.P + kw;
  const bool inside = ih >= 0 && ih < g.H && iw >= 0 && iw < g.W;
  U[i] = inside ? x[((n * g.C_in + ci) * g.H + ih) * g.W + iw] : 0.f;
  // END Task 5.1
}

/// dx[n][ci][ih][iw] = sum of the entries of dU that im2col copied x[n][ci][ih][iw] into.
__global__ void col2im_kernel(const float* __restrict__ dU, int B, ConvGeometry g, float* __restrict__ dx) {
  // BEGIN Task 5.2 (device): one thread per input value (n, ci, ih, iw): for each tap (kh, kw) find the output pixel (oh, ow) whose patch put this value there, if any, and add that entry of dU; write the sum once
  // HINT: oh*S - P + kh = ih means oh = (ih + P - kh) / S, which exists only when ih + P - kh >= 0, divides by S, and gives oh < Ho (the same for ow).
  const int Ho = conv_out_dim(g.H, g.K, g.P, g.S), Wo = conv_out_dim(g.W, g.K, g.P, g.S);
  const int R = g.C_in * g.K * g.K;
  const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<long>(B) * g.C_in * g.H * g.W) return;
  const int iw = static_cast<int>(i % g.W), ih = static_cast<int>((i / g.W) % g.H);
  const int ci = static_cast<int>((i / (static_cast<long>(g.W) * g.H)) % g.C_in);
  const long n = i / (static_cast<long>(g.W) * g.H * g.C_in);
  float sum = 0.f;
  for (int kh = 0; kh < g.K; ++kh) {
    const int th = ih + g.P - kh;  // = oh * S for the output row whose patch row kh is ih
    if (th < 0 || th % g.S != 0 || th / g.S >= Ho) continue;
    const int oh = th / g.S;
    for (int kw = 0; kw < g.K; ++kw) {
      const int tw = iw + g.P - kw;
      if (tw < 0 || tw % g.S != 0 || tw / g.S >= Wo) continue;
      const int ow = tw / g.S;
      sum += dU[((n * Ho + oh) * Wo + ow) * R + (ci * g.K + kh) * g.K + kw];
    }
  }
  dx[i] = sum;
  // END Task 5.2
}

void im2col_gpu(const float* x, int B, const ConvGeometry& g, float* U, cudaStream_t stream) {
  g.check();
  require_batch(B, "im2col_gpu");
  require_pointers("im2col_gpu", {{x, "x"}, {U, "U"}});
  // BEGIN Task 5.1: launch im2col_kernel with one thread per element of U (unrolled_floats(B, g) of them)
  const long n = static_cast<long>(unrolled_floats(B, g));
  im2col_kernel<<<blocks_for(n), kElementwiseThreads, 0, stream>>>(x, B, g, U);
  CUDA_CHECK_LAUNCH();
  // END Task 5.1
}

void col2im_gpu(const float* dU, int B, const ConvGeometry& g, float* dx, cudaStream_t stream) {
  g.check();
  require_batch(B, "col2im_gpu");
  require_pointers("col2im_gpu", {{dU, "dU"}, {dx, "dx"}});
  // BEGIN Task 5.2: launch col2im_kernel with one thread per element of dx (B * C_in * H * W of them)
  const long n = static_cast<long>(B) * g.in_size();
  col2im_kernel<<<blocks_for(n), kElementwiseThreads, 0, stream>>>(dU, B, g, dx);
  CUDA_CHECK_LAUNCH();
  // END Task 5.2
}

}  // namespace course
