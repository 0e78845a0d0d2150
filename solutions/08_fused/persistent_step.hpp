/// @file persistent_step.hpp
/// @brief Stage 08 (Task 8.8): the whole step as one persistent kernel: its grid and its launcher (host side).
#pragma once

#include <cuda_runtime.h>

#include "08_fused/fused_phases.hpp"

namespace course {

/// Blocks of kFusedThreads the persistent kernel keeps resident on this GPU with
/// `smem_bytes` of dynamic shared memory each (every multiprocessor filled as far as
/// its registers and shared memory allow), or 0 when the GPU cannot launch
/// cooperative kernels.
int persistent_grid_blocks(int smem_bytes);
/// Queues the whole step, `count` phases from the device array `phases`, as one
/// cooperative launch of `grid` blocks with `smem_bytes` of dynamic shared memory
/// (Task 8.8): every block runs the virtual blocks b = blockIdx.x, blockIdx.x +
/// grid, ... of a phase, then waits at grid.sync() for the others.
void persistent_step_gpu(const FusedPhase* phases, int count, int grid, int smem_bytes, cudaStream_t stream = 0);

}  // namespace course
