/// @file persistent_step.cu
/// @brief Stage 08 (Task 8.8): the whole training step as one persistent kernel, its phases apart by grid-wide barriers.
///
/// The CUDA graph removes the host from the step, but not the boundaries
/// between kernels: each kernel of the graph starts only when the one before
/// has finished on every multiprocessor and its blocks are retired, and the
/// next kernel's blocks must then be scheduled, and its first loads wait on
/// memory again. A persistent kernel launches once for the whole step with as
/// many blocks as fit on the GPU at the same time, and runs every phase (the
/// same device functions as the separate kernels) inside: a block takes the
/// phase's virtual blocks blockIdx.x, blockIdx.x + gridDim.x, ..., then waits
/// at a grid-wide barrier, cooperative_groups::this_grid().sync(), for every
/// other block, so that the next phase reads what this one wrote.
///
/// A grid-wide barrier needs every block resident at once (a block waiting
/// for one that cannot start would wait forever): hence a cooperative launch
/// (cudaLaunchCooperativeKernel), which refuses a grid larger than the GPU
/// holds, and a grid sized by the occupancy calculator. The price: every phase
/// runs with the largest shared memory and register count of all phases, and
/// with no more blocks than fit at once.
#include <cooperative_groups.h>

#include <stdexcept>
#include <string>

#include "08_fused/batch_gather.cuh"
#include "08_fused/conv_block_backward.cuh"
#include "08_fused/conv_block_forward.cuh"
#include "08_fused/dense_fused.cuh"
#include "08_fused/fused_phases.hpp"
#include "08_fused/persistent_step.hpp"
#include "08_fused/sgd_multi_tensor.cuh"
#include "08_fused/softmax_xent.cuh"
#include "common/gpu/cuda_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

namespace {

/// Virtual block `block` of phase p: the device function its row of the phase list names.
__device__ inline void run_phase(const FusedPhase& p, int block, float* smem) {
  switch (p.kind) {
#define COURSE_TABLE_RUN(kind, member, Args, launcher, run_block) \
  case PhaseKind::kind: run_block(p.member, block, smem); break;
#define COURSE_CLUSTER_NONE(kind, ...) case PhaseKind::kind:
    COURSE_TABLE_PHASES(COURSE_TABLE_RUN)
    COURSE_CLUSTER_PHASES(COURSE_CLUSTER_NONE) break;  // clusters of their own: never a phase of this kernel
#undef COURSE_TABLE_RUN
#undef COURSE_CLUSTER_NONE
  }
}

}  // namespace

/// The whole step: `count` phases, each finished by every block before any block starts the next.
__global__ void __launch_bounds__(kFusedThreads) persistent_step_kernel(const FusedPhase* phases, int count) {
  // BEGIN Task 8.8 (device): for each phase: copy it to shared memory (one thread), run its virtual blocks blockIdx.x, blockIdx.x + gridDim.x, ... (a __syncthreads() between two, which reuse the shared memory), then wait at the grid-wide barrier
  // HINT: cooperative_groups::this_grid().sync(); every thread of every block must reach it, as many times as there are phases.
  __shared__ FusedPhase phase;
  cooperative_groups::grid_group grid = cooperative_groups::this_grid();
  float* smem = fused_shared_memory();
  for (int p = 0; p < count; ++p) {
    if (threadIdx.x == 0) phase = phases[p];
    __syncthreads();
    const int blocks = fused_phase_blocks(phase);
    for (int b = static_cast<int>(blockIdx.x); b < blocks; b += static_cast<int>(gridDim.x)) {
      run_phase(phase, b, smem);
      __syncthreads();  // the next virtual block overwrites the shared memory
    }
    grid.sync();  // every block is done with phase p (and with reading `phase`)
  }
  // END Task 8.8
}

int persistent_grid_blocks(int smem_bytes) {
  int device = 0, cooperative = 0, sms = 0, per_sm = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device));
  if (!cooperative) return 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, persistent_step_kernel, kFusedThreads,
                                                           static_cast<std::size_t>(smem_bytes)));
  return per_sm * sms;
}

void persistent_step_gpu(const FusedPhase* phases, int count, int grid, int smem_bytes, cudaStream_t stream) {
  if (phases == nullptr || count < 1 || grid < 1)
    throw std::invalid_argument("persistent_step_gpu: " + std::to_string(count) + " phases on " +
                                std::to_string(grid) + " blocks: nothing to run");
  // BEGIN Task 8.8: launch persistent_step_kernel cooperatively (cudaLaunchCooperativeKernel) with `grid` blocks of kFusedThreads and smem_bytes of dynamic shared memory, after checking that the GPU holds that many blocks at once
  const int resident = persistent_grid_blocks(smem_bytes);
  if (grid > resident)
    throw std::invalid_argument("persistent_step_gpu: a grid of " + std::to_string(grid) + " blocks, but this GPU " +
                                (resident == 0 ? std::string("cannot launch cooperative kernels")
                                               : "holds only " + std::to_string(resident) + " at once"));
  const FusedPhase* table = phases;
  int phase_count = count;
  void* args[] = {&table, &phase_count};
  CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(persistent_step_kernel), dim3(grid),
                                         dim3(kFusedThreads), args, static_cast<std::size_t>(smem_bytes), stream));
  // END Task 8.8
}

}  // namespace course
