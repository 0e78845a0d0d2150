/// @file softmax_xent.cuh
/// @brief Stage 08 (Task 8.6, device): the last dense layer and softmax cross-entropy, forward and backward, in one kernel.
///
/// The logits of one example are K numbers (K = 10): too few for a kernel of
/// their own, and the loss needs all K of a row at once. So one warp takes one
/// example from its input row to its gradient:
///
///     z_k = b_k + sum_i x_i W_ki             lanes split the sum over i for all K at once; a shuffle tree
///                                            (__shfl_xor_sync) leaves every lane with all K sums
///     L = log sum_k e^(z_k - m) - (z_y - m)  m = max_k z_k; the first arg-max is the prediction
///     dz_k = (e^(z_k - m) / sum_j e^(z_j - m) - [k = y]) / B
///     dx_i = sum_k dz_k W_ki                 the gradient the layer below receives
///
/// (mean squared error instead: L = sum_k (z_k - [k = y])^2 / K, dz_k = 2 (z_k - [k = y]) / (B K),
/// stage 04's formulas). The block's kHeadRows examples then give one slice of
/// the weight and bias gradients, dW_ki = sum over its rows of dz_k x_i, which
/// the update adds with the other blocks' (Task 8.7). The loss and the correct
/// count are added to two device counters with atomics (in double, and as an
/// integer): the order of those additions may change from run to run, which
/// moves the reported loss in its last bits but never the training, which does
/// not read it.
#pragma once

#include "08_fused/fused_common.cuh"
#include "08_fused/softmax_xent.hpp"

namespace course {

/// The head's block `block` of a.blocks: examples [block kHeadRows, (block + 1) kHeadRows). KC > 0: a.K is
/// KC, known to the compiler; KC = 0: any a.K up to kHeadMaxClasses.
template <int KC>
__device__ void softmax_head_rows_of(const HeadArgs& a, int block, float* smem) {
  // Given: this warp's example n, the shared memory for the block's dz, and the row's K logits in registers.
  constexpr int kMax = KC > 0 ? KC : kHeadMaxClasses;  // the logits a lane holds
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int n0 = block * kHeadRows, n = n0 + warp;
  const bool has_row = n < a.B;  // the same for the whole warp
  float* dz_rows = smem;         // [kHeadRows][K]: dL/dz of the block's rows, 0 for rows past B

  float z[kMax];  // the logits z_k, then dz_k; 0 for a row past B
#pragma unroll
  for (int k = 0; k < kMax; ++k) z[k] = 0.f;

  // TODO(Task 8.6): the logits of row n: each lane sums its share of the row (i = lane, lane + 32, ...) for all K logits at once, a shuffle tree leaves every lane with all K sums, plus the bias
  // HINT: keep the K logits in a register array of kMax, every loop over k unrolled with `if (KC > 0 || k < a.K)`: an array indexed by a value the compiler cannot see lives in local memory, not in registers.

  // Every lane now holds the row's K logits: each computes the arg-max, the loss and dz itself (z turns into dz).
  // TODO(Task 8.6): in every lane: the first arg-max of the row (the prediction), the loss (cross-entropy with the max trick, or mse) and dz = dL/dz of the batch mean in place of z; lane 0 adds the loss and the correct count, and writes the prediction when asked
  // HINT: the cross-entropy's dz_k is (e^(z_k - m) / sum - [k = y]) / B, with m the row's maximum; mse's is 2 (z_k - [k = y]) / (B K) (stage 04's formulas).
  if (!a.train) return;

  // TODO(Task 8.6): the backward: dx = dz W for row n (when a.dx is given); the block's rows' dz through shared memory; then this block's slice of dW (sum over its rows of dz_k x_i) and of db
  // HINT: rows past B must still reach __syncthreads(); their dz is 0, so that the block's sums need no test.
}

/// The head's block `block` of a.blocks. The `cnn` and the `mlp` end in 10 classes: their heads are compiled
/// for K = 10 (no test of k < K in the unrolled loops over the logits, about half the instructions).
__device__ inline void softmax_head_rows(const HeadArgs& a, int block, float* smem) {
  if (a.K == 10)
    softmax_head_rows_of<10>(a, block, smem);
  else
    softmax_head_rows_of<0>(a, block, smem);
}

}  // namespace course
