/// @file sgd_multi_tensor.cuh
/// @brief Stage 08 (Task 8.7, device): the end of every weight-gradient sum and SGD with momentum, all tensors in one kernel.
///
/// Stage 04's update already runs once for the whole flat parameter buffer,
/// because every gradient sits in one flat buffer laid out like the
/// parameters. In stage 08 a gradient is not one tensor yet: the backward
/// kernels leave each one as `slices` partial sums, a different number per
/// tensor (64 examples' worth per slice of a dense layer, 8 per slice of the
/// head, as many as the conv kernel's plan chose). So the update gets a table
/// of tensors (SgdTensor: where its parameters sit, how many, where its partial
/// sums are and how many), finds for each parameter its tensor, and finishes the
/// reduction as it reads the gradient:
///
///     g = partials[0][j] + partials[1][j] + ...     (always in this order)
///     v = momentum v + g,   w = w - lr v            (stage 01's update)
///
/// The second level of every two-level reduction of the step thus costs no
/// kernel of its own: it is part of reading the gradient, which the update does
/// anyway. The learning rate and the momentum are read from device memory, so a
/// captured step picks up the rate the schedule set for its epoch.
#pragma once

#include "08_fused/fused_common.cuh"
#include "08_fused/sgd_multi_tensor.hpp"

namespace course {

/// Not Task 8.7, glue: the running loss sum after this step into its slot of the loss check
/// (common/train/loss_check.hpp), by the one thread of a step-ending kernel (this update, or the
/// dense chain's) that then advances the step counter. The update is the step's last kernel,
/// so the head's additions to the sum are done; a kernel of one thread after each step did
/// this before, 1.8 us of a stage 08 step and a gap before the next.
__device__ inline void copy_running_loss_to_slot(const LossCheckCopy& c, const int* step) {
  if (c.slots == nullptr || step == nullptr) return;
  c.slots[*step % c.count] = *c.sum;
  __threadfence_system();  // the host sees the value once it sees the step finished
}
__device__ inline void copy_running_loss_to_slot(const SgdArgs& a, int block) {
  if (block == 0 && threadIdx.x == 0) copy_running_loss_to_slot(a.loss, a.step);
}

/// Parameters [block blockDim.x, (block + 1) blockDim.x) of the flat buffer, one per thread.
__device__ inline void sgd_multi_tensor_block(const SgdArgs& a, int block) {
  // The engine's step counter (given): the update is the step's last kernel, nothing after it reads the counter.
  if (a.step != nullptr && block == 0 && threadIdx.x == 0) *a.step += 1;
  // BEGIN Task 8.7 (device): one parameter per thread: find its tensor in the table (binary search on the offsets), add its partial sums in slice order, apply momentum and the learning rate from a.hyper
  const long long i = static_cast<long long>(block) * blockDim.x + threadIdx.x;
  if (i >= a.total) return;
  int lo = 0, hi = a.tensor_count - 1;  // the last tensor whose offset is <= i
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (a.tensors[mid].offset <= i)
      lo = mid;
    else
      hi = mid - 1;
  }
  const SgdTensor t = a.tensors[lo];
  const long long j = i - t.offset;
  // The slices in order, eight loads at a time in flight (a conv weight has one slice per
  // example or so: one by one, each load would wait for the last).
  const float* p = t.partials + j;
  float g = 0.f;
  int s = 0;
  for (; s + 8 <= t.slices; s += 8) {
    float v[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) v[u] = p[(s + u) * t.count];
#pragma unroll
    for (int u = 0; u < 8; ++u) g += v[u];
  }
  for (; s < t.slices; ++s) g += p[s * t.count];
  const float lr = a.hyper[0], momentum = a.hyper[1];
  const float v = momentum * a.velocity[i] + g;
  a.velocity[i] = v;
  a.params[i] -= lr * v;
  // END Task 8.7
}

/// Virtual block `block` of the update, as the persistent kernel runs it (fused_phases.hpp): the loss check's
/// copy, then the parameters, as the update's own kernel does.
__device__ inline void sgd_multi_tensor_phase_block(const SgdArgs& a, int block, float* /*smem*/) {
  copy_running_loss_to_slot(a, block);
  sgd_multi_tensor_block(a, block);
}

}  // namespace course
