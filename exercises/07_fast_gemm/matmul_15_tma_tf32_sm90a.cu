/// @file matmul_15_tma_tf32_sm90a.cu
/// @brief Stage 07, kernel 15 (given, not a task): kernel 14 with TMA copies and the copying and multiplying warps split.
///
/// Kernel 14's 8 warps both copy and multiply, and round Y where it lies: at every step
/// they wait for the slowest copy at a __syncthreads(), and the rounding reads and writes
/// Y once more in shared memory. Kernel 15 does what cuBLAS's Hopper kernels do:
///
/// - **one thread copies.** Warpgroup 0's first thread issues each tile's copies with the
///   tensor memory accelerator (tma.cuh): 1 instruction for Y's 256 x 32 tile, 1 or 4 for
///   X's 128 x 32, where kernel 14's threads issued 3,072 copies of 16 bytes. The rest of
///   warpgroup 0 gives its registers to the two warpgroups that multiply (setmaxnreg).
/// - **barriers instead of __syncthreads().** Four stages, each with two shared-memory
///   barriers (tma::Pipeline): `loaded` completes when the stage's bytes have landed,
///   `stage_free` when both multiplying warpgroups are done with it. The copying thread runs
///   up to four tiles ahead and waits only for a free stage; a multiplying warpgroup waits
///   only for its tile.
/// - **Y rounded before, not in shared memory.** TMA copies bytes as they are, and the
///   tensor cores read the top 19 bits of each (truncation). So Y's matrix is rounded to
///   TF32 first, by a pass over it into a workspace (one read and one write of Y in device
///   memory, about a tenth of the product's time at 4096^3), and the tile copies come from
///   there. X goes through registers, rounded on the way as in kernel 14.
///
///     block: warpgroup 0 copies, warpgroups 1 and 2 each multiply 64 rows of X by Y's 256
///     copier:      for t: wait until stage t % 4 is free; TMA X and Y of tile t -> stage
///     multipliers: for t: wait until tile t has loaded; load and round X fragments; 4 wgmma;
///                         wait for tile t - 1's; mark stage (t - 1) % 4 free
///
/// Roles as kernel 14's: A B computes C^T = B^T A^T (X = B^T, Y = A), op(A) B^T computes C
/// (X = op(A), Y = B stored [N, K]). It takes products without split-K whose operands are
/// 16-byte aligned with rows of multiples of 4 values (TMA's rule for strides), on a Hopper
/// GPU; the others, and A^T B, go to kernel 14.
#include <cuda.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "04_cuda_matmul/matmul_kernels.hpp"
#include "07_fast_gemm/fast_gemm_kernels.hpp"
#include "07_fast_gemm/mma_tiles.cuh"
#include "07_fast_gemm/ptx.cuh"
#include "07_fast_gemm/simt_tiles.cuh"
#include "07_fast_gemm/tma.cuh"
#include "07_fast_gemm/wgmma.cuh"
#include "common/gpu/cuda_check.hpp"

namespace course {

namespace {

constexpr int kBX = 128, kBY = 256, kBK = 32, kStages = 4;
constexpr int kThreads = 384;                              // warpgroup 0 copies, 1 and 2 multiply
constexpr int kXBytes = kBX * kBK * 4, kYBytes = kBY * kBK * 4;  // 16 KiB, 32 KiB: multiples of 1024
constexpr int kStageBytes = kXBytes + kYBytes;
constexpr int kXBoxBytes = 32 * kBK * 4;  // an N- or M-major X tile comes as 4 boxes of [32 k][32 rows]

/// Byte offset of X's element (row r, k) in its tile. K-major: one 128-byte row per r, chunks
/// swizzled by r % 8. Otherwise 4 boxes of 32 rows, each one 128-byte row per k, swizzled by k % 8.
template <bool X_K_MAJOR>
__device__ __forceinline__ int x_offset(int r, int k) {
  if (X_K_MAJOR) return r * 128 + (((k / 4) ^ (r % 8)) << 4) + (k % 4) * 4;
  return (r / 32) * kXBoxBytes + k * 128 + ((((r % 32) / 4) ^ (k % 8)) << 4) + (r % 4) * 4;
}

/// The A fragment (ptx.cuh's layout) of X's 16 x 8 block at (r, k), rounded to TF32.
template <bool X_K_MAJOR>
__device__ __forceinline__ void load_x_fragment(unsigned (&a)[4], const std::uint8_t* x, int r, int k) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  auto at = [&](int rr, int kk) { return *reinterpret_cast<const float*>(x + x_offset<X_K_MAJOR>(rr, kk)); };
  a[0] = ptx::to_tf32(at(r + g, k + t));
  a[1] = ptx::to_tf32(at(r + g + 8, k + t));
  a[2] = ptx::to_tf32(at(r + g, k + t + 4));
  a[3] = ptx::to_tf32(at(r + g + 8, k + t + 4));
}

/// Y's values rounded to TF32 (cvt.rna, as kernels 11 and 14 round), `count` floats, 16-byte aligned.
__global__ void round_to_tf32_kernel(const float4* __restrict__ in, float4* __restrict__ out, std::size_t count4) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count4;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float4 v = in[i];
    v.x = __uint_as_float(ptx::to_tf32(v.x)), v.y = __uint_as_float(ptx::to_tf32(v.y));
    v.z = __uint_as_float(ptx::to_tf32(v.z)), v.w = __uint_as_float(ptx::to_tf32(v.w));
    out[i] = v;
  }
}

/// SWAPPED: D = C^T (X = B^T, Y = A); otherwise D = C (X = op(A), Y = B stored [N, K]).
template <bool SWAPPED, bool X_K_MAJOR>
__global__ void __launch_bounds__(kThreads, 1)
    matmul_tma_tf32_kernel(GemmProblem p, const __grid_constant__ CUtensorMap x_map, const __grid_constant__ CUtensorMap y_map) {
  extern __shared__ std::uint8_t tma_smem[];
  std::uint8_t* smem = tma_smem + ((1024 - (ptx::shared_address(tma_smem) & 1023)) & 1023);  // swizzle: 1024-aligned
  __shared__ std::uint64_t loaded[kStages], stage_free[kStages];
  tma::Pipeline<kStages> pipeline{loaded, stage_free};
  const int wg = threadIdx.x / 128;
  const int x0 = blockIdx.y * kBX, y0 = blockIdx.x * kBY;
  const int tiles = (p.K + kBK - 1) / kBK;
  auto x_tile = [&](int t) { return smem + (t % kStages) * kStageBytes; };
  auto y_tile = [&](int t) { return smem + (t % kStages) * kStageBytes + kXBytes; };
  pipeline.init(256);  // stage_free waits for every multiplying thread

  if (wg == 0) {  // the copier
    tma::release_registers<40>();
    if (threadIdx.x != 0) return;
    for (int t = 0; t < tiles; ++t) {
      std::uint64_t* barrier = pipeline.expect_tile(t, kStageBytes);  // once tile t - 4 has freed the stage
      tma::load_2d(y_tile(t), &y_map, t * kBK, y0, barrier);
      if (X_K_MAJOR)
        tma::load_2d(x_tile(t), &x_map, t * kBK, x0, barrier);
      else
        for (int b = 0; b < kBX / 32; ++b)
          tma::load_2d(x_tile(t) + b * kXBoxBytes, &x_map, x0 + 32 * b, t * kBK, barrier);
    }
    return;
  }

  tma::claim_registers<232>();  // 128 x 40 + 256 x 232 = 64,512 of the SM's 65,536
  const int mg = wg - 1, warp = (threadIdx.x / 32) % 4;
  float d[kBY / 2];
#pragma unroll
  for (int i = 0; i < kBY / 2; ++i) d[i] = 0.f;
  unsigned a[2][kBK / 8][4];  // X fragments of even and odd steps (kernel 14 says why two sets)
  auto step = [&](int t, auto set) {
    constexpr int kSet = decltype(set)::value;
    pipeline.wait_loaded(t);
#pragma unroll
    for (int s = 0; s < kBK / 8; ++s) load_x_fragment<X_K_MAJOR>(a[kSet][s], x_tile(t), mg * 64 + warp * 16, 8 * s);
    wgmma::fence();
#pragma unroll
    for (int s = 0; s < kBK / 8; ++s)
      wgmma::wgmma_m64n256k8_tf32(d, a[kSet][s], wgmma::descriptor(y_tile(t) + 32 * s, 16, 1024), 1);
    wgmma::commit_group();
    wgmma::wait_group<1>();  // tile t - 1's wgmma are done
#pragma unroll
    for (int s = 0; s < kBK / 8; ++s)
#pragma unroll
      for (int i = 0; i < 4; ++i) wgmma::keep_until_here(a[1 - kSet][s][i]);
    if (t >= 1) pipeline.release(t - 1);
  };
  int t = 0;
  for (; t + 1 < tiles; t += 2) {
    step(t, std::integral_constant<int, 0>{});
    step(t + 1, std::integral_constant<int, 1>{});
  }
  if (t < tiles) step(t, std::integral_constant<int, 0>{});
  wgmma::wait_group<0>();
#pragma unroll
  for (int s = 0; s < kBK / 8; ++s)
#pragma unroll
    for (int i = 0; i < 4; ++i) wgmma::keep_until_here(a[0][s][i]), wgmma::keep_until_here(a[1][s][i]);
  mma::store_wgmma_d<kBY, SWAPPED>(p, d, x0 + mg * 64, y0);
}

/// The tensor map of a row-major FP32 matrix [rows, ld] of which `cols` columns are used, in
/// boxes of box_rows x 32 columns (tma.cuh).
CUtensorMap tensor_map(const float* data, int cols, int rows, int ld, int box_rows) {
  return tma::tensor_map_2d(data, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, cols, rows, ld, box_rows, "kernel 15");
}

/// X: `x` as kernel 14's roles give it (outer rows of X, ld, whether its rows run along k). Y: `y`.
template <bool SWAPPED, bool X_K_MAJOR>
void launch(const GemmProblem& p, const simt::Operand& x, const simt::Operand& y, cudaStream_t stream) {
  constexpr int bytes = kStages * kStageBytes + 1024;  // + the slack that aligns the tiles to 1024 bytes
  static const bool raised = [] {
    CUDA_CHECK(cudaFuncSetAttribute(matmul_tma_tf32_kernel<SWAPPED, X_K_MAJOR>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    return true;
  }();
  (void)raised;
  // Y rounded to TF32 into a workspace of its own stored size, allocated and freed in stream order.
  const std::size_t y_floats = static_cast<std::size_t>(y.outer) * y.ld;
  float* y_rounded = static_cast<float*>(tma::stream_workspace(y_floats * sizeof(float), stream));
  const std::size_t count4 = y_floats / 4;
  round_to_tf32_kernel<<<tma::grid_stride_blocks(count4, 256), 256, 0, stream>>>(
      reinterpret_cast<const float4*>(y.data), reinterpret_cast<float4*>(y_rounded), count4);
  CUDA_CHECK_LAUNCH();
  const CUtensorMap y_map = tensor_map(y_rounded, p.K, y.outer, y.ld, kBY);
  const CUtensorMap x_map = X_K_MAJOR ? tensor_map(x.data, p.K, x.outer, x.ld, kBX)   // [rows][k]
                                      : tensor_map(x.data, x.outer, p.K, x.ld, 32);  // [k][rows]
  const dim3 grid((y.outer + kBY - 1) / kBY, (x.outer + kBX - 1) / kBX);
  matmul_tma_tf32_kernel<SWAPPED, X_K_MAJOR><<<grid, kThreads, bytes, stream>>>(p, x_map, y_map);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaFreeAsync(y_rounded, stream));
}

bool aligned_rows(const simt::Operand& o) {
  return reinterpret_cast<std::uintptr_t>(o.data) % 16 == 0 && o.ld % 4 == 0;
}

}  // namespace

void matmul_tma_tf32(const GemmProblem& p, cudaStream_t stream) {
  const simt::Operand a = simt::operand_a(p), b = simt::operand_b(p);
  const bool fits = wgmma_available() && p.k_slice == 0 && p.K > 0 && aligned_rows(a) && aligned_rows(b);
  if (fits && p.trans_b) {  // Y = B stored [N, K]; X = op(A)
    if (p.trans_a)
      launch<false, false>(p, a, b, stream);
    else
      launch<false, true>(p, a, b, stream);
  } else if (fits && !p.trans_a) {  // Y = A [M, K]; X = B^T from B [K, N]
    launch<true, false>(p, b, a, stream);
  } else {
    matmul_wgmma_tf32(p, stream);
  }
}

}  // namespace course
