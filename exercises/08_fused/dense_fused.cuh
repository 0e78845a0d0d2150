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
  // TODO(Task 8.4): stage kDenseChunk columns of x (the tile's rows) and of W (the tile's outputs, transposed) at a time over the block's slice of IN; each thread sums one row and 4 outputs; with one slice apply bias and activation and write y, else write the partial sums and let the last block of the tile (integer ticket) add the slices in order and finish
  // HINT: pad the staged rows of x to kDenseChunk + 1 floats and store W^T as [k][kDenseTile + 4], so that a warp's reads of x fall in different banks and its 4 outputs are one aligned float4.
  // HINT: __threadfence() after writing the partial sums and before the ticket; the last block fences again and reads the partials with __ldcg.
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
