/// @file softmax_xent.hpp
/// @brief Stage 08 (Task 8.6): the softmax head kernel's arguments, its planner and its launcher (host side).
#pragma once

#include <cuda_runtime.h>

#include "08_fused/fused_common.hpp"

namespace course {

/// Softmax head: examples per block (one warp each).
constexpr int kHeadRows = kFusedThreads / 32;
/// The most classes the head takes: each lane keeps a row's logits in registers (Task 8.6).
constexpr int kHeadMaxClasses = 32;

/// The last dense layer (no activation) and the loss, forward and backward, in one kernel.
///
/// Block b takes examples [b kHeadRows, (b + 1) kHeadRows), one warp each (K at most kHeadMaxClasses): the
/// logits z = x W^T + b of its row, the loss (added to *loss_sum), whether the
/// arg-max is the label (added to *correct), the prediction, and when training
/// dL/dz (cross-entropy: (softmax(z) - onehot) / B; mse: 2 (z - onehot) / (B K)),
/// from which the block writes dx = dz W for its rows and slice b of dW and db
/// (its rows' sum). So dW has `blocks` slices.
struct HeadArgs {
  int B, IN, K;
  FusedLoss loss;
  const float* x;       ///< [B, IN]
  const float* w;       ///< [K, IN]
  const float* b;       ///< [K]
  const int* labels;    ///< [B]
  double* loss_sum;     ///< += the B per-example losses
  unsigned long long* correct;  ///< += the rows whose first arg-max is the label
  int* predictions;     ///< [B], or null
  bool train;           ///< false: forward only (dw_partials, db_partials and dx unused)
  float* dw_partials;   ///< [blocks, K, IN]
  float* db_partials;   ///< [blocks, K]
  float* dx;            ///< [B, IN], or null (the head is the first layer)
  int blocks;
  int smem_bytes;
};

/// The head's blocks (Task 8.6).
HeadArgs plan_softmax_head(int B, int IN, int K, FusedLoss loss, const float* x, const float* w, const float* b,
                           const int* labels, double* loss_sum, unsigned long long* correct, int* predictions,
                           bool train, float* dw_partials, float* db_partials, float* dx);
/// Queues the head kernel of `a` on `stream`.
void softmax_head_gpu(const HeadArgs& a, cudaStream_t stream = 0, bool early = false);

/// What the phase list (fused_phases.hpp) reads of the kernel: its blocks, its shared memory and its traffic.
__host__ __device__ inline int phase_blocks(const HeadArgs& a) { return a.blocks; }
inline int phase_smem_bytes(const HeadArgs& a) { return a.smem_bytes; }
KernelTraffic phase_traffic(const HeadArgs& a);

}  // namespace course
