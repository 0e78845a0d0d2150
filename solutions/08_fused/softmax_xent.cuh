/// @file softmax_xent.cuh
/// @brief Stage 08 (Task 8.6, device): the last dense layer and softmax cross-entropy, forward and backward, in one kernel.
///
/// The logits of one example are K numbers (K = 10): too few for a kernel of
/// their own, and the loss needs all K of a row at once. So one warp takes one
/// example from its input row to its gradient:
///
///     z_k = b_k + sum_i x_i W_ki             lanes split the sum over i; the warp adds their parts (__shfl_xor_sync)
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

namespace course {

/// The head's block `block` of a.blocks: examples [block kHeadRows, (block + 1) kHeadRows).
__device__ inline void softmax_head_rows(const HeadArgs& a, int block, float* smem) {
  // BEGIN Task 8.6 (device): one warp per example: its K logits (lanes split each dot product, a shuffle tree adds them), then on lane 0 the arg-max, the loss and, when training, dz = dL/dz into shared memory; then dx = dz W for each row, and this block's slice of dW and db summed over its rows
  // HINT: rows past B must still reach __syncthreads(); give them dz = 0, so that the block's sums need no test.
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int n0 = block * kHeadRows, n = n0 + warp;
  const bool has_row = n < a.B;
  float* z = smem;                     // [kHeadRows][K]: the logits
  float* dz = smem + kHeadRows * a.K;  // [kHeadRows][K]: dL/dz, 0 for rows past B
  if (has_row) {
    const float* xn = a.x + static_cast<long>(n) * a.IN;
    for (int k = 0; k < a.K; ++k) {
      const float* wk = a.w + static_cast<long>(k) * a.IN;
      float part = 0.f;
      for (int i = lane; i < a.IN; i += 32) part += xn[i] * wk[i];
#pragma unroll
      for (int offset = 16; offset > 0; offset /= 2) part += __shfl_xor_sync(0xffffffffu, part, offset);
      if (lane == 0) z[warp * a.K + k] = part + a.b[k];
    }
  }
  __syncwarp();
  if (lane == 0) {
    const float* zn = z + warp * a.K;
    float* dn = dz + warp * a.K;
    if (!has_row) {
      for (int k = 0; k < a.K; ++k) dn[k] = 0.f;
    } else {
      const int label = a.labels[n];
      float top = zn[0];
      int best = 0;
      for (int k = 1; k < a.K; ++k)
        if (zn[k] > top) {
          top = zn[k];
          best = k;
        }
      float loss = 0.f;
      if (a.loss == FusedLoss::CrossEntropy) {
        float sum = 0.f;
        for (int k = 0; k < a.K; ++k) sum += expf(zn[k] - top);
        loss = logf(sum) - (zn[label] - top);
        if (a.train) {
          for (int k = 0; k < a.K; ++k) dn[k] = expf(zn[k] - top) / sum / static_cast<float>(a.B);
          dn[label] -= 1.f / static_cast<float>(a.B);
        }
      } else {
        const float scale = 1.f / (static_cast<float>(a.B) * static_cast<float>(a.K));
        for (int k = 0; k < a.K; ++k) {
          const float diff = zn[k] - (k == label ? 1.f : 0.f);
          loss += diff * diff;
          if (a.train) dn[k] = 2.f * diff * scale;
        }
        loss /= static_cast<float>(a.K);
      }
      atomicAdd(a.loss_sum, static_cast<double>(loss));
      if (best == label) atomicAdd(a.correct, 1ull);
      if (a.predictions != nullptr) a.predictions[n] = best;
    }
  }
  if (!a.train) return;
  __syncthreads();  // every row's dz is in shared memory

  if (has_row && a.dx != nullptr) {
    const float* dn = dz + warp * a.K;
    for (int i = lane; i < a.IN; i += 32) {
      float sum = 0.f;
      for (int k = 0; k < a.K; ++k) sum += dn[k] * a.w[static_cast<long>(k) * a.IN + i];
      a.dx[static_cast<long>(n) * a.IN + i] = sum;
    }
  }
  const int rows = min(kHeadRows, a.B - n0);
  for (int j = threadIdx.x; j < a.K * a.IN; j += blockDim.x) {
    const int k = j / a.IN, i = j % a.IN;
    float sum = 0.f;
    for (int r = 0; r < rows; ++r) sum += dz[r * a.K + k] * a.x[static_cast<long>(n0 + r) * a.IN + i];
    a.dw_partials[static_cast<long>(block) * a.K * a.IN + j] = sum;
  }
  for (int k = threadIdx.x; k < a.K; k += blockDim.x) {
    float sum = 0.f;
    for (int r = 0; r < rows; ++r) sum += dz[r * a.K + k];
    a.db_partials[static_cast<long>(block) * a.K + k] = sum;
  }
  // END Task 8.6
}

}  // namespace course
