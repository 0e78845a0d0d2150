/// @file matmul_9_async_copy.cuh
/// @brief Stage 07, kernel 9 (Task 7.3): the next tile loads while this one is multiplied (two buffers, cp.async).
///
/// In kernels 7 and 8 every step of K has two halves that never overlap inside
/// a block: all threads load the next tiles (and wait for global memory, about a
/// microsecond), then all threads multiply. Other blocks on the SM can fill the
/// wait, but only two fit. Here the block keeps two copies of each tile in shared
/// memory and fills one while it multiplies from the other:
///
///     fetch tile 0 into buffer 0, finish it
///     for t = 0, 1, ...:
///       wait until tile t is in place; __syncthreads()
///       fetch tile t + 1 into buffer (t + 1) % 2     (cp.async, or loads into registers)
///       multiply buffer t % 2                         (the fetch flies meanwhile)
///       finish tile t + 1                             (registers -> shared memory)
///
/// One barrier per step: it says both that tile t is whole and that every warp is
/// done with buffer (t + 1) % 2, which it multiplied one step before.
///
/// **cp.async** (ptx.cuh) copies global memory to shared memory without passing
/// through registers and without making the thread wait: the thread issues the
/// copies, groups them (commit), goes on multiplying, and waits only when it needs
/// the data (wait_group). It copies bytes as they are, so it serves the tiles that
/// land untransposed: A stored [K, M] and B [K, N]. A tile that must be transposed
/// on the way (A [M, K], B stored [N, K]) is loaded into registers before the
/// multiplications and stored after them: its loads fly during the multiplications
/// too, at the cost of the registers that hold them.
///
/// The kernel is a template over its tile sizes (a TileShape: block tile BM x BN,
/// depth BK, warp tile WM x WN): kernel 9 is one instance of it; kernel 10
/// (autotune.cpp) tries several per shape. Shared memory: 2 x BK x (BM + BN + 8)
/// floats, 33.8 KB for 128 x 128 x 16.
#pragma once

#include <cuda_runtime.h>

#include "04_cuda_matmul/matmul_kernels.hpp"
#include "07_fast_gemm/simt_tiles.cuh"
#include "common/gpu/cuda_check.hpp"

namespace course {

/// The tile sizes of one instance of kernel 9. A block has (BM / WM) x (BN / WN) warps.
template <int BM_, int BN_, int BK_, int WM_, int WN_, int MIN_BLOCKS = 0>
struct TileShape {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, WM = WM_, WN = WN_;
  static constexpr int kWarpsN = BN / WN;
  static constexpr int kThreads = (BM / WM) * (BN / WN) * 32;
  /// Blocks that must fit on one SM at once (__launch_bounds__): by default a thread may use at most 128
  /// registers (65536 / (kThreads * kMinBlocks)), so that two blocks of 256 threads (or four of 128) share an
  /// SM and one's memory waits hide behind another's FMAs. MIN_BLOCKS 1 lets ptxas use up to 255 instead; it
  /// need not: for 128 x 128 x 16 on full tiles it uses 126, and what changes is how it allocates and orders
  /// the same instructions (lesson 07). The checked instance takes 132, and then one block fills an SM.
  static constexpr int kMinBlocks = MIN_BLOCKS > 0 ? MIN_BLOCKS : 512 / kThreads;
  static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must tile the block tile");
  static_assert(WM % 16 == 0 && WN % 32 == 0, "a warp tile is MI x NI sub-tiles of 16 x 32 (4 x 8 lanes of 4 x 4)");
};

/// FULL: for products whose every tile is full (full_tiles()): the tile copies
/// check nothing (kernel 10's full-tile instances; the body is the same).
template <class Shape, bool TRANS_A, bool TRANS_B, bool FULL = false>
__global__ void __launch_bounds__(Shape::kThreads, Shape::kMinBlocks) matmul_async_copy_kernel(GemmProblem p, simt::Operand a,
                                                                           simt::Operand b, bool vec_c) {
#if COURSE_DEVICE_ARCH >= 800  // cp.async: left out of an sm_75 build, where kernel 8 runs instead (ptx.cuh)
  constexpr int BM = Shape::BM, BN = Shape::BN, BK = Shape::BK;
  using CopyA = simt::TileCopy<BM, BK, Shape::kThreads, !TRANS_A, FULL>;
  using CopyB = simt::TileCopy<BN, BK, Shape::kThreads, TRANS_B, FULL>;
  using Tile = simt::WarpTile<Shape::WM / 16, Shape::WN / 32>;
  __shared__ __align__(16) typename CopyA::Tile As[2];
  __shared__ __align__(16) typename CopyB::Tile Bs[2];
  // BEGIN Task 7.3 (device): two buffers, one barrier per step: at step t wait for tile t (cp_async_wait<0>, __syncthreads), fetch tile t + 1 into the other buffer, multiply buffer t % 2, then finish tile t + 1 (the register stores of a transposed tile)
  // HINT: fetch: CopyX::kThroughRegisters ? CopyX::load(x, o0, k0, k_end, registers) : CopyX::copy_async(buffer, x, o0, k0, k_end); finish: CopyX::store(buffer, registers) for the register ones; cp_async_commit() after each fetch.
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wm0 = (warp / Shape::kWarpsN) * Shape::WM, wn0 = (warp % Shape::kWarpsN) * Shape::WN;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  int k_begin, k_end;
  simt::k_range(p, k_begin, k_end);
  const int tiles = k_end > k_begin ? (k_end - k_begin + BK - 1) / BK : 0;
  float4 ra[CopyA::kPerThread], rb[CopyB::kPerThread];  // a transposed tile between its load and its store
  auto fetch = [&](int t, int buffer) {
    const int k0 = k_begin + t * BK;
    if constexpr (CopyA::kThroughRegisters)
      CopyA::load(a, row0, k0, k_end, ra);
    else
      CopyA::copy_async(As[buffer], a, row0, k0, k_end);
    if constexpr (CopyB::kThroughRegisters)
      CopyB::load(b, col0, k0, k_end, rb);
    else
      CopyB::copy_async(Bs[buffer], b, col0, k0, k_end);
    ptx::cp_async_commit();
  };
  auto finish = [&](int buffer) {
    if constexpr (CopyA::kThroughRegisters) CopyA::store(As[buffer], ra);
    if constexpr (CopyB::kThroughRegisters) CopyB::store(Bs[buffer], rb);
  };
  Tile tile;
  tile.zero();
  if (tiles > 0) {
    fetch(0, 0);
    finish(0);
  }
  for (int t = 0; t < tiles; ++t) {
    ptx::cp_async_wait<0>();  // this thread's copies of tile t have landed...
    __syncthreads();          // ... and everyone's; every warp is done with buffer (t + 1) % 2
    if (t + 1 < tiles) fetch(t + 1, (t + 1) % 2);
    tile.multiply(As[t % 2], Bs[t % 2], wm0, wn0, lane);
    if (t + 1 < tiles) finish((t + 1) % 2);
  }
#pragma unroll
  for (int i = 0; i < Tile::kRows; ++i)
#pragma unroll
    for (int j = 0; j < Tile::kCols; j += 4) {
      const float v[4] = {tile.acc[i][j], tile.acc[i][j + 1], tile.acc[i][j + 2], tile.acc[i][j + 3]};
      simt::store_c4(p, vec_c, row0 + Tile::row_of(wm0, lane, i), col0 + Tile::col_of(wn0, lane, j), v);
    }
  // END Task 7.3
#endif
}

}  // namespace course
