/// @file dense_fused.hpp
/// @brief Stage 08 (Tasks 8.4 and 8.5): the dense forward and backward kernels' arguments, their planners and their launchers (host side).
#pragma once

#include <cuda_runtime.h>

#include "08_fused/fused_common.hpp"

namespace course {

/// Dense kernels: output tiles of kDenseTile x kDenseTile, the sum over IN staged kDenseChunk at a time.
constexpr int kDenseTile = 32;
constexpr int kDenseChunk = 128;
/// Dense forward: the shortest slice of a split sum over IN. Short slices give a
/// short layer more blocks (fc2 of `cnn-deep`, 128 inputs: 4 slices and 16 blocks
/// instead of 1 slice and 4); measured on the H100 against a floor of 128 (one
/// chunk), 32 took the `mlp` from 0.051 to 0.047 s an epoch and `cnn-deep` from
/// 0.140 to 0.135 s, and the `cnn` from 0.0970 to 0.0982 s, which
/// kDenseLoadsInFlight then more than won back (lesson 08).
constexpr int kDenseMinSlice = 32;
/// Dense backward: examples per partial sum of the weight gradient.
constexpr int kDenseRowsPerSlice = 64;

// ---- Task 8.4 ---------------------------------------------------------------------------------

/// y = act(x W^T + b) for x [B, IN], W [OUT, IN], b [OUT], y [B, OUT].
///
/// Block b takes the output tile (row_tile, col_tile) of kDenseTile x kDenseTile and
/// the slice k_slice of the sum over IN, [k_slice * k_len, (k_slice + 1) * k_len):
/// `b = k_slice * row_tiles * col_tiles + row_tile * col_tiles + col_tile`. With one
/// slice the block finishes its outputs itself; with more, each block writes its
/// partial sums to `partials` [k_slices, B, OUT], and the last block of a tile to
/// arrive (counted in counters[tile], which it puts back to 0) adds the slices in
/// order 0, 1, ..., then applies the bias and the activation.
struct DenseForwardArgs {
  int B, IN, OUT;
  FusedAct act;
  const float* x;
  const float* w;
  const float* b;
  float* y;
  float* partials;          ///< [k_slices, B, OUT] (k_slices > 1)
  unsigned int* counters;   ///< [row_tiles * col_tiles], all 0 between launches (k_slices > 1)
  int row_tiles, col_tiles;
  int k_slices, k_len;
  int blocks;
  int smem_bytes;
};

/// The dense forward tiling (Task 8.4): at most `max_k_slices` slices of the sum
/// over IN (partials and counters must hold that many), chosen from target_blocks.
DenseForwardArgs plan_dense_forward(int B, int IN, int OUT, FusedAct act, const float* x, const float* w,
                                    const float* b, float* y, float* partials, unsigned int* counters,
                                    int target_blocks, int max_k_slices);
/// Queues the dense forward kernel of `a` on `stream`.
void dense_forward_gpu(const DenseForwardArgs& a, cudaStream_t stream = 0, bool early = false);

// ---- Task 8.5 ---------------------------------------------------------------------------------

/// Backward of y = act(x W^T + b), given dy = dL/dy and y itself:
///
///     dz = dy * act'(y)    dW = dz^T x (in slices of kDenseRowsPerSlice examples)    db = column sums of dz    dx = dz W
///
/// Blocks [0, weight_blocks): `b = (slice * o_tiles + o_tile) * i_tiles + i_tile`, a
/// kDenseTile x kDenseTile tile of dW (and, for i_tile 0, of db) summed over the
/// examples of the slice. Blocks [weight_blocks, weight_blocks + input_blocks):
/// `b = n_tile * i_tiles + i_tile`, a tile of dx summed over every output.
struct DenseBackwardArgs {
  int B, IN, OUT;
  FusedAct act;
  const float* x;    ///< [B, IN]
  const float* w;    ///< [OUT, IN]
  const float* y;    ///< [B, OUT], the layer's output
  const float* dy;   ///< [B, OUT]
  float* dw_partials;  ///< [slices, OUT, IN]
  float* db_partials;  ///< [slices, OUT]
  float* dx;           ///< [B, IN]; null: no input gradient (the first layer)
  int slices;
  int o_tiles, i_tiles, n_tiles;
  int weight_blocks, input_blocks;
  int smem_bytes;
};

/// The dense backward tiling (Task 8.5).
DenseBackwardArgs plan_dense_backward(int B, int IN, int OUT, FusedAct act, const float* x, const float* w,
                                      const float* y, const float* dy, float* dw_partials, float* db_partials,
                                      float* dx);
/// Queues the dense backward kernel of `a` on `stream`.
void dense_backward_gpu(const DenseBackwardArgs& a, cudaStream_t stream = 0, bool early = false);

/// What the phase list (fused_phases.hpp) reads of the two kernels: their blocks (both parts of the backward),
/// their shared memory and their traffic.
__host__ __device__ inline int phase_blocks(const DenseForwardArgs& a) { return a.blocks; }
inline int phase_smem_bytes(const DenseForwardArgs& a) { return a.smem_bytes; }
KernelTraffic phase_traffic(const DenseForwardArgs& a);
__host__ __device__ inline int phase_blocks(const DenseBackwardArgs& a) { return a.weight_blocks + a.input_blocks; }
inline int phase_smem_bytes(const DenseBackwardArgs& a) { return a.smem_bytes; }
KernelTraffic phase_traffic(const DenseBackwardArgs& a);

}  // namespace course
