/// @file dense_fused.cuh
/// @brief Stage 08 (Tasks 8.4 and 8.5, device): dense layers with the bias and the activation in the epilogue, both ways.
///
/// **Forward** (Task 8.4). y = act(x W^T + b) is a GEMM whose epilogue, the
/// bias and the activation, runs on the sums before they leave the registers:
/// no separate bias or activation kernel, no pre-activation tensor. At batch
/// 64 the product has few outputs and a long sum (fc1 of `cnn`: 64 x 100
/// outputs, each a sum of 1568 products), so one block per output tile would
/// leave most of the GPU idle, each block walking the whole sum. The sum is
/// therefore split ("split-K"): block (tile, slice) sums its slice of IN, and
/// the slices must then be added. Without an extra kernel and without float
/// atomics (whose order, and so whose bits, change from run to run):
///
/// 1. every block writes its partial sums to `partials[slice]`;
/// 2. `__threadfence()` makes those writes visible to the whole GPU, then one
///    thread takes a ticket: `atomicAdd(&counters[tile], 1)` (an integer:
///    exact in any order);
/// 3. the block that draws the last ticket knows every slice of its tile is
///    written; it adds them in slice order 0, 1, 2, ... (read with `__ldcg`,
///    past the L1 cache, which is not kept coherent between multiprocessors),
///    applies the epilogue, and puts the counter back to 0 for the next launch.
///
/// The order of the final sum is fixed, whichever block comes last: the result
/// is the same bits every run.
///
/// **Backward** (Task 8.5). Given dy = dL/dy and y, the slope dz = dy act'(y)
/// is applied where dz is staged, and never stored. The weight gradient
/// dW = dz^T x sums over the examples: blocks sum kDenseRowsPerSlice examples
/// each into a slice of partial sums, which the update adds (Task 8.7). The
/// input gradient dx = dz W sums over the outputs, which one block covers.
/// Both parts run in one launch.
#pragma once

#include "08_fused/dense_fused.hpp"
#include "08_fused/fused_common.cuh"

namespace course {

/// Loads each thread of a dense kernel has in flight while it stages a tile (stage_in_flight). The
/// staging waits on the L2 cache, and the blocks are few: measured on the H100, 8 instead of 4 took
/// the `cnn` from 0.0982 to 0.0954 s an epoch and the `mlp` from 0.0470 to 0.0455 s (lesson 08).
constexpr int kDenseLoadsInFlight = 8;

/// Block `block` of a.blocks of the dense forward pass (layout in DenseForwardArgs).
__device__ inline void dense_forward_tile(const DenseForwardArgs& a, int block, float* smem) {
  // Given: the block's tile and slice of IN, the shared-memory layout, and this thread's row and 4 outputs.
  constexpr int kXPitch = kDenseChunk + 1, kWPitch = kDenseTile + 4;
  __shared__ bool last_block;
  const int tiles = a.row_tiles * a.col_tiles;
  const int tile = block % tiles, k_slice = block / tiles;
  const int n0 = tile / a.col_tiles * kDenseTile, o0 = tile % a.col_tiles * kDenseTile;
  const int k_begin = k_slice * a.k_len, k_end = min(a.IN, k_begin + a.k_len);
  float* xs = smem;                                             // [kDenseTile][kXPitch]: rows n0 ..
  float* ws = smem + round_up_to_4(kDenseTile * kXPitch);       // [kDenseChunk][kWPitch]: W^T, outputs o0 ..
  const int r = static_cast<int>(threadIdx.x) / 8, c4 = static_cast<int>(threadIdx.x) % 8;  // row n0 + r, outputs o0 + 4 c4 ..

  float acc[4] = {0.f, 0.f, 0.f, 0.f};  // this thread's sums of row n0 + r, outputs o0 + 4 c4 .. o0 + 4 c4 + 3

  // TODO(Task 8.4): over the block's slice [k_begin, k_end) of IN, kDenseChunk columns at a time: stage the tile's rows of x and its outputs' rows of W (transposed), then add into acc[j] the products of row n0 + r and output o0 + 4 c4 + j
  // HINT: pad the staged rows of x to kDenseChunk + 1 floats and store W^T as [k][kDenseTile + 4], so that a warp's reads of x fall in different banks and its 4 outputs are one aligned float4.
  // HINT: stage_in_flight (fused_common.cuh) keeps kDenseLoadsInFlight loads of each thread in flight; rows past B and outputs past OUT stage 0.

  const int n = n0 + r;
  // TODO(Task 8.4): with one slice, add the bias, apply the activation, write y and return; with several, write this slice's partial sums, make them visible, and take the tile's ticket: last_block, for every thread of the block, is whether it drew the last one
  // HINT: __threadfence() after writing the partial sums and before the ticket (atomicAdd on counters[tile], an integer: exact in any order).
  if (!last_block) return;  // the block that drew the tile's last ticket finishes it

  // TODO(Task 8.4): the tile's last block: add the slices' partial sums of row n and its 4 outputs in slice order 0, 1, 2, ..., add the bias, apply the activation, write y, and put the tile's counter back to 0 for the next launch
  // HINT: fence again, then read the partials with __ldcg (past the L1 cache, which is not kept coherent between multiprocessors); load 8 slices (one float4 each) before adding them, so that their loads are in flight together.
}

/// Weight-gradient block `block` of a.weight_blocks: a tile of dW (and db) over one slice of examples.
__device__ inline void dense_weight_gradient_tile(const DenseBackwardArgs& a, int block, float* smem) {
  // TODO(Task 8.5): stage dz = dy act'(y) for the slice's examples and the tile's outputs, and x for the tile's inputs; each thread sums dz * x over the slice for one output and 4 inputs; the blocks of input tile 0 also sum dz into db; write slice `slice` of the partial sums
}

/// Input-gradient block `block` of a.input_blocks: a kDenseTile x kDenseTile tile of dx.
__device__ inline void dense_input_gradient_tile(const DenseBackwardArgs& a, int block, float* smem) {
  // TODO(Task 8.5): for kDenseTile outputs at a time, stage dz = dy act'(y) for the tile's rows and W for the tile's inputs; each thread sums dz * W over every output for one row and 4 inputs, then writes dx
}

/// Block `block` of the dense backward kernel: the weight-gradient part first, then the input-gradient part.
__device__ inline void dense_backward_tile(const DenseBackwardArgs& a, int block, float* smem) {
  if (block < a.weight_blocks)
    dense_weight_gradient_tile(a, block, smem);
  else
    dense_input_gradient_tile(a, block - a.weight_blocks, smem);
}

}  // namespace course
