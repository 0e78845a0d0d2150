/// @file tma.cuh
/// @brief Stage 07: Hopper's tensor memory accelerator (TMA), shared-memory barriers and the pipeline they make, as kernels 15 and 16 use them (glue, not a task).
///
/// Compiled for sm_90a only (files named *_sm90a.cu include it).
///
/// - **TMA** copies a whole tile ("box") of a 2-D tensor from global to shared memory
///   with one instruction, issued by one thread: `cp.async.bulk.tensor`. What it copies
///   is described by a 128-byte *tensor map* built on the host (cuTensorMapEncodeTiled:
///   the tensor's address, sizes and row stride, the box's sizes, the swizzle), passed to
///   the kernel as a `__grid_constant__` parameter. Elements of a box outside the tensor
///   arrive as zeros. With the 128-byte swizzle the tile lands in the layout wgmma reads
///   (wgmma.cuh): the box's rows must then be 128 bytes (32 FP32 values) long.
/// - A **shared-memory barrier** (mbarrier, 8 bytes) counts arrivals and bytes. A TMA
///   copy names one: when its bytes have landed, it counts them off ("complete_tx"). A
///   thread announces the bytes a phase waits for with arrive_expect_tx(); the phase
///   completes when every expected arrival has come and every announced byte has landed.
///   Threads wait for a phase by its parity (0, 1, 0, ...): phase n of a barrier that
///   guards stage s of a ring of S stages is tile n S + s.
/// - A **Pipeline** is that ring: one thread copies tiles into the stages, the
///   multiplying threads read them, and two barriers per stage pass each stage back
///   and forth between them.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "07_fast_gemm/fast_gemm_kernels.hpp"
#include "07_fast_gemm/ptx.cuh"
#include "common/gpu/cuda_check.hpp"

namespace course::tma {

/// Makes `barrier` count `arrivals` arrivals per phase. One thread does it, then fence_barrier_init() and a __syncthreads().
__device__ __forceinline__ void init_barrier(std::uint64_t* barrier, unsigned arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(ptx::shared_address(barrier)), "r"(arrivals) : "memory");
}
/// Makes the initialised barriers visible to the TMA unit (the async proxy).
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
/// One arrival at `barrier`'s current phase.
__device__ __forceinline__ void arrive(std::uint64_t* barrier) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(ptx::shared_address(barrier)) : "memory");
}
/// One arrival that also announces `bytes` more bytes for the current phase to wait for.
__device__ __forceinline__ void arrive_expect_tx(std::uint64_t* barrier, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(ptx::shared_address(barrier)), "r"(bytes)
               : "memory");
}
/// Waits until the phase of parity `parity` of `barrier` has completed.
__device__ __forceinline__ void wait(std::uint64_t* barrier, unsigned parity) {
  asm volatile(
      "{\n"
      " .reg .pred done;\n"
      " WAIT_%=:\n"
      " mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      " @!done bra WAIT_%=;\n"
      "}\n" ::"r"(ptx::shared_address(barrier)),
      "r"(parity)
      : "memory");
}
/// Copies the box of `map` whose first element is (c0 along the contiguous dimension, c1 along rows)
/// to `dst` in shared memory; its bytes count off at `barrier`.
__device__ __forceinline__ void load_2d(void* dst, const CUtensorMap* map, int c0, int c1, std::uint64_t* barrier) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          ptx::shared_address(dst)),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(c0), "r"(c1), "r"(ptx::shared_address(barrier))
      : "memory");
}
/// The warpgroup gives up registers down to N per thread, or takes them up to N (setmaxnreg: the
/// registers move between the warpgroups of a block; every thread of the warpgroup executes it).
template <int N>
__device__ __forceinline__ void release_registers() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void claim_registers() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}

/// The ring of STAGES shared-memory stages through which one copying thread hands tiles to the
/// multiplying ("consuming") threads: tile t goes to stage t % STAGES, and is phase t / STAGES
/// of the stage's two barriers. `loaded[s]` completes when the copier has arrived and every
/// byte it announced has landed; `stage_free[s]` when every consumer has arrived, done with
/// the stage. The copier waits only for a free stage, a consumer only for its tile.
///
/// The barriers are two __shared__ arrays the kernel declares; a Pipeline names them (it holds
/// references, folded away when compiled):
///
///     __shared__ std::uint64_t loaded[S], stage_free[S];
///     tma::Pipeline<S> pipeline{loaded, stage_free};
///
/// Why not one __shared__ Pipeline holding the arrays: it works as well, but moves the barriers'
/// addresses, and ptxas then emits a slightly different kernel; declared apart, kernels 15 and
/// 16 compile to the machine code their measurements were taken with.
template <int STAGES>
struct Pipeline {
  std::uint64_t (&loaded)[STAGES];      ///< stage s holds its tile: the copier's arrival and its bytes
  std::uint64_t (&stage_free)[STAGES];  ///< every consumer is done with stage s

  /// Every thread of the block calls it: thread 0 sets the barriers up, the fence shows them
  /// to the TMA unit, the __syncthreads() to the other threads, before anyone uses them.
  __device__ __forceinline__ void init(unsigned consumers) {
    if (threadIdx.x == 0) {
      for (int s = 0; s < STAGES; ++s) {
        init_barrier(&loaded[s], 1);              // the copier's arrival, plus the bytes it announces
        init_barrier(&stage_free[s], consumers);  // every consuming thread
      }
      fence_barrier_init();
    }
    __syncthreads();
  }

  /// The copier, before tile t's copies: waits until tile t - STAGES has freed the stage, then
  /// announces the `bytes` tile t's copies bring (whole boxes count, zeros past the edges too).
  /// Returns the barrier those copies must count their bytes off at.
  __device__ __forceinline__ std::uint64_t* expect_tile(int t, unsigned bytes) {
    const int s = t % STAGES;
    if (t >= STAGES) wait(&stage_free[s], ((t / STAGES) - 1) & 1);
    arrive_expect_tx(&loaded[s], bytes);
    return &loaded[s];
  }

  /// A consumer: waits until tile t has landed in its stage.
  __device__ __forceinline__ void wait_loaded(int t) { wait(&loaded[t % STAGES], (t / STAGES) & 1); }

  /// A consumer: it is done with tile t's stage (the copier may refill it once every consumer is).
  __device__ __forceinline__ void release(int t) { arrive(&stage_free[t % STAGES]); }
};

/// The tensor map of a row-major matrix [rows, ld] of `element_bytes`-byte values of which `cols`
/// columns are used, copied in boxes of box_rows x (128 bytes of columns), 128-byte swizzled;
/// elements past the edges arrive as zeros. `who` names the kernel in an error.
inline CUtensorMap tensor_map_2d(const void* data, CUtensorMapDataType type, int element_bytes, int cols, int rows,
                                 int ld, int box_rows, const char* who) {
  static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult found{};
    CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || f == nullptr)
      throw GpuError("the driver has no cuTensorMapEncodeTiled: TMA (kernels 15 and 16) needs CUDA 12 or later");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  CUtensorMap map;
  const cuuint64_t size[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t stride[1] = {static_cast<cuuint64_t>(ld) * element_bytes};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(128 / element_bytes), static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t step[2] = {1, 1};
  const CUresult r = encode(&map, type, 2, const_cast<void*>(data), size, stride, box, step, CU_TENSOR_MAP_INTERLEAVE_NONE,
                            CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw GpuError(std::string(who) + ": cuTensorMapEncodeTiled failed (CUresult " + std::to_string(static_cast<int>(r)) +
                   ") for a matrix of " + std::to_string(rows) + " x " + std::to_string(cols) + " values, rows " +
                   std::to_string(ld) + " apart");
  return map;
}

/// Makes the current device's stream-ordered memory pool keep what is freed (the default gives it
/// back to the driver at every synchronisation, and allocating tens of MiB afresh at every call
/// costs more than the work it is for).
inline void keep_freed_pool_memory() {
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  cudaMemPool_t pool = nullptr;
  CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, dev));
  std::uint64_t keep_all = ~std::uint64_t{0};
  CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
}

/// `bytes` of workspace from the current device's memory pool, in `stream`'s order: work queued
/// on `stream` from now on may use it, and the caller gives it back with cudaFreeAsync(..., stream)
/// once the last such work is queued (no synchronisation either way). The first call in the
/// process makes the pool keep freed memory (keep_freed_pool_memory()), so that later calls are
/// served from memory the pool already holds.
inline void* stream_workspace(std::size_t bytes, cudaStream_t stream) {
  static const bool pool_keeps = (keep_freed_pool_memory(), true);
  (void)pool_keeps;
  void* workspace = nullptr;
  CUDA_CHECK(cudaMallocAsync(&workspace, bytes, stream));
  return workspace;
}

/// Blocks of `threads` for a grid-stride pass over `items` items (the rounding passes of kernels
/// 15 and 16): one item per thread, but at most 8 blocks per SM, whose threads then stride
/// through the rest; at least one block.
inline unsigned grid_stride_blocks(std::size_t items, unsigned threads) {
  const std::size_t wanted = (items + threads - 1) / threads;
  return static_cast<unsigned>(std::max<std::size_t>(std::min<std::size_t>(wanted, 8u * multiprocessor_count()), 1));
}

}  // namespace course::tma
