/// @file sgd_multi_tensor.hpp
/// @brief Stage 08 (Task 8.7): the multi-tensor SGD kernel's arguments, its planner and its launcher (host side).
#pragma once

#include <cuda_runtime.h>

#include "08_fused/fused_common.hpp"

namespace course {

/// One parameter tensor of the update: `count` values at `offset` in the flat
/// parameter (and velocity) buffer, whose gradient is the sum of `slices` partial
/// sums, slice s at partials[s * count, (s + 1) * count).
struct SgdTensor {
  long long offset;
  long long count;
  const float* partials;
  int slices;
};

/// The copy a step's last kernel makes for the loss check (common/train/loss_check.hpp, stage 04's
/// DeviceLossSlots): the running loss sum after the step into slots[*step % count], by the
/// thread that then advances the step counter (sgd_multi_tensor.cuh).
struct LossCheckCopy {  // no member initialisers: it sits in FusedPhase's union (value-initialise it)
  const double* sum;  ///< the running loss sum the head adds to
  double* slots;      ///< pinned host memory mapped into the device, or null: no copy
  int count;
};

/// Every parameter updated at once:
///
///     g = sum over s of partials[s][j]  (s = 0, 1, ...)      v = momentum * v + g      w = w - lr * v
///
/// with lr = hyper[0] and momentum = hyper[1] read from device memory when the
/// kernel runs (a captured step replays them as they are then), and *step += 1
/// when step is not null: the last thing a training step does. When loss.slots is
/// not null, the same kernel first makes the loss check's copy (LossCheckCopy), so
/// that the check needs no kernel of its own.
struct SgdArgs {
  float* params;
  float* velocity;
  const SgdTensor* tensors;  ///< device array, ordered by offset, covering [0, total)
  int tensor_count;
  long long total;
  const float* hyper;  ///< {lr, momentum}
  int* step;           ///< the step counter of the epoch, or null
  int blocks;
  LossCheckCopy loss;  ///< none from plan_sgd_multi_tensor: the engine sets it
};

/// The update's blocks (Task 8.7). `tensors` is a device array of tensor_count entries.
SgdArgs plan_sgd_multi_tensor(float* params, float* velocity, const SgdTensor* tensors, int tensor_count,
                              long long total, const float* hyper, int* step);
/// Queues the update of `a` on `stream`.
void sgd_multi_tensor_gpu(const SgdArgs& a, cudaStream_t stream = 0, bool early = false);

/// What the phase list (fused_phases.hpp) reads of the kernel: its blocks, its shared memory (none) and its
/// traffic.
__host__ __device__ inline int phase_blocks(const SgdArgs& a) { return a.blocks; }
inline int phase_smem_bytes(const SgdArgs&) { return 0; }
KernelTraffic phase_traffic(const SgdArgs& a);

}  // namespace course
