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

  // BEGIN Task 8.6 (device): the logits of row n: each lane sums its share of the row (i = lane, lane + 32, ...) for all K logits at once, a shuffle tree leaves every lane with all K sums, plus the bias
  // HINT: keep the K logits in a register array of kMax, every loop over k unrolled with `if (KC > 0 || k < a.K)`: an array indexed by a value the compiler cannot see lives in local memory, not in registers.
  // The K sums are independent, so the loads of one i (x_i and the K weights) are in flight together,
  // not one dot product after another.
  if (has_row) {
    const float* xn = a.x + static_cast<long>(n) * a.IN;
#pragma unroll 2
    for (int i = lane; i < a.IN; i += 32) {
      const float xv = xn[i];
#pragma unroll
      for (int k = 0; k < kMax; ++k)
        if (KC > 0 || k < a.K) z[k] += xv * a.w[static_cast<long>(k) * a.IN + i];
    }
#pragma unroll
    for (int k = 0; k < kMax; ++k)
      if (KC > 0 || k < a.K) {
#pragma unroll
        for (int offset = 16; offset > 0; offset /= 2) z[k] += __shfl_xor_sync(0xffffffffu, z[k], offset);
        z[k] += a.b[k];
      }
  }
  // END Task 8.6

  // Every lane now holds the row's K logits: each computes the arg-max, the loss and dz itself (z turns into dz).
  // BEGIN Task 8.6 (device): in every lane: the first arg-max of the row (the prediction), the loss (cross-entropy with the max trick, or mse) and dz = dL/dz of the batch mean in place of z; lane 0 adds the loss and the correct count, and writes the prediction when asked
  // HINT: the cross-entropy's dz_k is (e^(z_k - m) / sum - [k = y]) / B, with m the row's maximum; mse's is 2 (z_k - [k = y]) / (B K) (stage 04's formulas).
  if (has_row) {
    const int label = a.labels[n];
    float top = z[0], z_label = z[0];
    int best = 0;
#pragma unroll
    for (int k = 1; k < kMax; ++k)
      if (KC > 0 || k < a.K) {
        if (z[k] > top) {
          top = z[k];
          best = k;
        }
        if (k == label) z_label = z[k];
      }
    float loss = 0.f;
    if (a.loss == FusedLoss::CrossEntropy) {
      float sum = 0.f;
#pragma unroll
      for (int k = 0; k < kMax; ++k)
        if (KC > 0 || k < a.K) {
          z[k] = expf(z[k] - top);
          sum += z[k];
        }
      loss = logf(sum) - (z_label - top);
      const float inv_b = 1.f / static_cast<float>(a.B);  // one division, not K (exact for a batch of 2^n)
#pragma unroll
      for (int k = 0; k < kMax; ++k)
        if (KC > 0 || k < a.K) z[k] = (z[k] / sum - (k == label ? 1.f : 0.f)) * inv_b;
    } else {
      const float scale = 1.f / (static_cast<float>(a.B) * static_cast<float>(a.K));
#pragma unroll
      for (int k = 0; k < kMax; ++k)
        if (KC > 0 || k < a.K) {
          const float diff = z[k] - (k == label ? 1.f : 0.f);
          loss += diff * diff;
          z[k] = 2.f * diff * scale;
        }
      loss /= static_cast<float>(a.K);
    }
    if (lane == 0) {
      atomicAdd(a.loss_sum, static_cast<double>(loss));
      if (best == label) atomicAdd(a.correct, 1ull);
      if (a.predictions != nullptr) a.predictions[n] = best;
    }
  }  // a row past B keeps z = 0: its dz
  // END Task 8.6
  if (!a.train) return;

  // BEGIN Task 8.6 (device): the backward: dx = dz W for row n (when a.dx is given); the block's rows' dz through shared memory; then this block's slice of dW (sum over its rows of dz_k x_i) and of db
  // HINT: rows past B must still reach __syncthreads(); their dz is 0, so that the block's sums need no test.

  // dx_i = sum_k dz_k W_ki: the row's dz is in every lane's registers.
  if (has_row && a.dx != nullptr)
    for (int i = lane; i < a.IN; i += 32) {
      float sum = 0.f;
#pragma unroll
      for (int k = 0; k < kMax; ++k)
        if (KC > 0 || k < a.K) sum += z[k] * a.w[static_cast<long>(k) * a.IN + i];
      a.dx[static_cast<long>(n) * a.IN + i] = sum;
    }
  if (lane == 0)
#pragma unroll
    for (int k = 0; k < kMax; ++k)
      if (KC > 0 || k < a.K) dz_rows[warp * a.K + k] = z[k];
  __syncthreads();  // every row's dz is in shared memory

  // This block's slice of dW: thread t takes inputs i = t, t + blockDim.x, ..., loads x_i of the block's rows
  // once, and writes dW_ki = sum over the rows of dz_k x_i for every k (rows past B have dz = 0).
  const int rows = min(kHeadRows, a.B - n0);
  for (int i = threadIdx.x; i < a.IN; i += blockDim.x) {
    float xr[kHeadRows];
#pragma unroll
    for (int r = 0; r < kHeadRows; ++r) xr[r] = r < rows ? a.x[static_cast<long>(n0 + r) * a.IN + i] : 0.f;
    for (int k = 0; k < a.K; ++k) {
      float sum = 0.f;
#pragma unroll
      for (int r = 0; r < kHeadRows; ++r) sum += dz_rows[r * a.K + k] * xr[r];
      a.dw_partials[(static_cast<long>(block) * a.K + k) * a.IN + i] = sum;
    }
  }
  for (int k = threadIdx.x; k < a.K; k += blockDim.x) {
    float sum = 0.f;
    for (int r = 0; r < rows; ++r) sum += dz_rows[r * a.K + k];
    a.db_partials[static_cast<long>(block) * a.K + k] = sum;
  }
  // END Task 8.6
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
