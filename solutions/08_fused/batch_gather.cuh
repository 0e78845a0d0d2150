/// @file batch_gather.cuh
/// @brief Stage 08 (device): the batch gather as a phase of the persistent kernel (glue, not a task).
#pragma once

#include "08_fused/batch_gather.hpp"

namespace course {

/// Virtual block `block` of the gather: x[r] = images[order[*step * batch + r]] for the batch's B rows, one
/// value per thread (stage 06's gather). It needs no shared memory.
__device__ inline void batch_gather_block(const GatherArgs& a, int block, float* /*smem*/) {
  const long long i = static_cast<long long>(block) * blockDim.x + threadIdx.x;
  if (i >= a.B * a.D) return;
  const long long r = i / a.D, d = i % a.D;
  const long long e = a.order[static_cast<long long>(*a.step) * a.batch + r];
  a.x[i] = a.images[e * a.D + d];
  if (d == 0) a.y[r] = a.labels[e];
}

}  // namespace course
