/// @file matmul_8_warp_tiled.cu
/// @brief Stage 07, kernel 8 (Task 7.2): block tile -> warp tile -> thread tile.
///
/// Kernel 7 thinks in threads; the hardware thinks in warps. The 32 lanes of a
/// warp issue each instruction together, and what decides the speed of a shared
/// load is which addresses those 32 lanes ask for at once. So the tile of C is cut
/// in three levels, each with its own index:
///
///     block tile  128 x 128   blockIdx      row0 = blockIdx.y * 128, col0 = blockIdx.x * 128
///     warp tile    32 x 64    warp = tid/32 wm0 = (warp / 2) * 32,  wn0 = (warp % 2) * 64     (4 x 2 warps)
///     lane tile     8 x 8     lane = tid%32 2 x 2 sub-tiles of 4 x 4, spaced 16 rows and 32 columns apart
///
/// and a lane's outputs are (simt_tiles.cuh, WarpTile):
///
///     rows    row0 + wm0 + mi * 16 + (lane / 8) * 4 + 0..3     mi = 0, 1
///     columns col0 + wn0 + ni * 32 + (lane % 8) * 4 + 0..3     ni = 0, 1
///
/// At one k the warp reads As[k][wm0 .. wm0 + 31] (every lane with the same
/// lane / 8 reads the same float4: broadcast) and Bs[k][wn0 .. wn0 + 63] (the 8
/// lanes of a quarter warp read 8 neighbouring float4: 128 bytes, all 32 banks
/// once). Kernel 7's 2-way conflict is gone, and the warp as a whole reads 96
/// distinct floats per k instead of kernel 7's 144 (16 of As, 128 of Bs) for the
/// same 2048 FMAs: a squarer warp tile shares more of what it reads.
///
/// The loads are kernel 7's (Task 7.1); the step from kernel 7 is the index arithmetic.
#include "04_cuda_matmul/matmul_kernels.hpp"
#include "07_fast_gemm/fast_gemm_kernels.hpp"
#include "07_fast_gemm/simt_tiles.cuh"
#include "common/gpu/cuda_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

namespace {
constexpr int kBM = 128, kBN = 128, kBK = 8;
constexpr int kWM = 32, kWN = 64;                             // warp tile
constexpr int kWarpsN = kBN / kWN;                            // 2
constexpr int kThreads = (kBM / kWM) * (kBN / kWN) * 32;      // 256
using Tile = simt::WarpTile<kWM / 16, kWN / 32>;              // 2 x 2 sub-tiles of 4 x 4
}  // namespace

template <bool TRANS_A, bool TRANS_B>
__global__ void __launch_bounds__(kThreads, 2) matmul_warp_tiled_kernel(GemmProblem p, simt::Operand a, simt::Operand b,
                                                                        bool vec_c) {
  using CopyA = simt::TileCopy<kBM, kBK, kThreads, !TRANS_A>;
  using CopyB = simt::TileCopy<kBN, kBK, kThreads, TRANS_B>;
  __shared__ __align__(16) typename CopyA::Tile As;
  __shared__ __align__(16) typename CopyB::Tile Bs;
  // BEGIN Task 7.2 (device): the same loop as kernel 7, with warp = threadIdx.x / 32 owning the warp tile at (wm0, wn0) = ((warp / 2) * 32, (warp % 2) * 64) and Tile::multiply doing the products; store C at Tile::row_of / col_of
  // HINT: the lane's outputs acc[i][j] go to C[row0 + Tile::row_of(wm0, lane, i)][col0 + Tile::col_of(wn0, lane, j)]; j in steps of 4 gives store_c4 its 4 neighbours.
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm0 = (warp / kWarpsN) * kWM, wn0 = (warp % kWarpsN) * kWN;
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  int k_begin, k_end;
  simt::k_range(p, k_begin, k_end);
  Tile tile;
  tile.zero();
  float4 ra[CopyA::kPerThread], rb[CopyB::kPerThread];
  for (int k0 = k_begin; k0 < k_end; k0 += kBK) {
    CopyA::load(a, row0, k0, k_end, ra);
    CopyB::load(b, col0, k0, k_end, rb);
    CopyA::store(As, ra);
    CopyB::store(Bs, rb);
    __syncthreads();
    tile.multiply(As, Bs, wm0, wn0, lane);
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < Tile::kRows; ++i)
#pragma unroll
    for (int j = 0; j < Tile::kCols; j += 4) {
      const float v[4] = {tile.acc[i][j], tile.acc[i][j + 1], tile.acc[i][j + 2], tile.acc[i][j + 3]};
      simt::store_c4(p, vec_c, row0 + Tile::row_of(wm0, lane, i), col0 + Tile::col_of(wn0, lane, j), v);
    }
  // END Task 7.2
}

void matmul_warp_tiled(const GemmProblem& p, cudaStream_t stream) {
  // BEGIN Task 7.2: launch 256 threads per block, one block per 128 x 128 tile of C (times simt::k_slices(p)), with the kernel version for (trans_a, trans_b)
  const dim3 grid((p.N + kBN - 1) / kBN, (p.M + kBM - 1) / kBM, simt::k_slices(p));
  const simt::Operand a = simt::operand_a(p), b = simt::operand_b(p);
  const bool vec_c = simt::c_takes_float4(p);
  if (!p.trans_a && !p.trans_b)
    matmul_warp_tiled_kernel<false, false><<<grid, kThreads, 0, stream>>>(p, a, b, vec_c);
  else if (!p.trans_a && p.trans_b)
    matmul_warp_tiled_kernel<false, true><<<grid, kThreads, 0, stream>>>(p, a, b, vec_c);
  else if (p.trans_a && !p.trans_b)
    matmul_warp_tiled_kernel<true, false><<<grid, kThreads, 0, stream>>>(p, a, b, vec_c);
  else
    matmul_warp_tiled_kernel<true, true><<<grid, kThreads, 0, stream>>>(p, a, b, vec_c);
  CUDA_CHECK_LAUNCH();
  // END Task 7.2
}

}  // namespace course
