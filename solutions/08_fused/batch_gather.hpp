/// @file batch_gather.hpp
/// @brief Stage 08: the batch gather as a phase of a step: its arguments and its launcher (host side; glue, not a task).
#pragma once

#include <cuda_runtime.h>

#include "08_fused/fused_common.hpp"

namespace course {

/// The batch gather as a phase of the persistent kernel: x[r] = images[e] (D floats)
/// and y[r] = labels[e] for r < B, with e = order[*step * batch + r] (the engine's
/// gather_batch_at_device_step, common/gpu/device_epoch.hpp).
struct GatherArgs {
  const float* images;
  const int* labels;
  const int* order;
  const int* step;
  int batch, B;
  long long D;
  float* x;
  int* y;
  int blocks;
};

/// Queues the gather of `a` on `stream` as the engine's kernel, which does not wait programmatically for the
/// kernel before it: `early` is ignored.
void batch_gather_gpu(const GatherArgs& a, cudaStream_t stream = 0, bool early = false);

/// What the phase list (fused_phases.hpp) reads of the gather: its blocks, its shared memory (none) and its
/// traffic.
__host__ __device__ inline int phase_blocks(const GatherArgs& a) { return a.blocks; }
inline int phase_smem_bytes(const GatherArgs&) { return 0; }
KernelTraffic phase_traffic(const GatherArgs& a);

}  // namespace course
