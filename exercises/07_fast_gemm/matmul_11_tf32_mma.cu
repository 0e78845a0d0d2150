/// @file matmul_11_tf32_mma.cu
/// @brief Stage 07, kernel 11 (Task 7.6): tensor cores on TF32 inputs with FP32 sums (mma.sync.m16n8k8).
///
/// Kernels 7 to 10 issue one FMA per thread per instruction: 32 multiply-adds
/// per warp instruction. One `mma.sync.m16n8k8` is 16 x 8 x 8 = 1024 of them,
/// done by the SM's tensor cores on inputs rounded to TF32 (10 mantissa bits,
/// rounding.cuh) with the products added in FP32. The code around it is a
/// kernel 9 with three changes:
///
/// - **Fragments instead of float4.** A warp computes a WM x WN = 64 x 32 tile
///   as MI x NI = 4 x 4 mma tiles of 16 x 8. For each 8-deep step of k it loads
///   4 A fragments (16 x 8) and 4 B fragments (8 x 8) from shared memory, in the
///   fixed places ptx.cuh tabulates (g = lane / 4, t = lane % 4), and issues 16 mma.
///   An operand stored with k contiguous is read with ldmatrix (the 8 x 8 16-bit
///   matrices of ldmatrix are 8 x 4 FP32 values, exactly the pieces of a TF32
///   fragment); the other layout with single loads, into padded rows (mma_tiles.cuh).
/// - **Three stages.** Tiles are 32 deep and three are in flight (copying t + 2,
///   t + 1 while multiplying t): a tensor core consumes a tile fast, so a single
///   tile ahead leaves it waiting on memory. 3 x 36 KB of shared memory, more than
///   the static 48 KB: it is dynamic, and the launcher raises the kernel's limit.
/// - **Rounding in registers.** The tensor cores read only the top 19 bits of each
///   value (a TF32 value); unrounded inputs would be cut (rounded toward zero, a
///   bias). Every fragment value is rounded as it is loaded, by the GPU's own
///   conversion `cvt.rna.tf32.f32` (one instruction; round_to_tf32 in rounding.cuh
///   computes the same). Rounding in shared memory instead, once per element, costs
///   a second pass over every tile through shared memory, the resource this kernel
///   is short of (lesson 07 has both versions' times).
///
///     copy tiles 0 and 1
///     for t:  wait for tile t, __syncthreads()
///             copy tile t + 2 into the buffer tile t - 1 used
///             for each 8-deep step: load fragments (rounding them), 16 x mma
///
/// Large products use 128 x 128 block tiles of 8 warps; products with fewer such
/// tiles than the GPU has SMs use 64 x 64 tiles of 4 warps.
#include <algorithm>

#include "04_cuda_matmul/matmul_kernels.hpp"
#include "07_fast_gemm/fast_gemm_kernels.hpp"
#include "07_fast_gemm/mma_tiles.cuh"
#include "07_fast_gemm/ptx.cuh"
#include "07_fast_gemm/rounding.cuh"
#include "07_fast_gemm/simt_tiles.cuh"
#include "common/gpu/cuda_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

namespace {

using LargeTf32 = mma::Config<128, 128, 32, 64, 32, 3>;
using SmallTf32 = mma::Config<64, 64, 32, 32, 32, 3>;

template <class Cfg, bool TRANS_A, bool TRANS_B>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks) matmul_tf32_kernel(GemmProblem p, simt::Operand a, simt::Operand b) {
#if COURSE_DEVICE_ARCH >= 800  // cp.async and these mma shapes: left out of an sm_75 build (ptx.cuh)
  using LayoutA = mma::Tf32Tile<Cfg::BM, Cfg::BK, !TRANS_A>;
  using LayoutB = mma::Tf32Tile<Cfg::BN, Cfg::BK, TRANS_B>;
  using CopyA = mma::Tf32Copy<LayoutA, Cfg::kThreads>;
  using CopyB = mma::Tf32Copy<LayoutB, Cfg::kThreads>;
  constexpr int S = Cfg::STAGES, MI = Cfg::MI, NI = Cfg::NI;
  extern __shared__ __align__(16) float smem[];  // S x (tile of A, tile of B)
  float* As = smem;
  float* Bs = smem + S * LayoutA::kElements;
  // TODO(Task 7.6): the three-stage cp.async loop (copy, wait, sync, refill, then per 8-deep step MI A fragments, NI / 2 B fragment pairs and MI x NI mma), then store the warp tile
  // HINT: before the loop copy tiles 0 .. S-2 (commit each, even if empty); at step t: cp_async_wait<S - 2>, __syncthreads, copy tile t + S - 1 into buffer (t + S - 1) % S, commit, then multiply buffer t % S.
#endif
}

template <class Cfg, bool TRANS_A, bool TRANS_B>
void launch_tf32(const GemmProblem& p, cudaStream_t stream) {
  constexpr int bytes = Cfg::STAGES *
                        (mma::Tf32Tile<Cfg::BM, Cfg::BK, !TRANS_A>::kElements + mma::Tf32Tile<Cfg::BN, Cfg::BK, TRANS_B>::kElements) *
                        static_cast<int>(sizeof(float));
  static const bool raised = [] {  // once per instance: allow more than the default 48 KB of dynamic shared memory
    CUDA_CHECK(cudaFuncSetAttribute(matmul_tf32_kernel<Cfg, TRANS_A, TRANS_B>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    return true;
  }();
  (void)raised;
  const dim3 grid((p.N + Cfg::BN - 1) / Cfg::BN, (p.M + Cfg::BM - 1) / Cfg::BM, simt::k_slices(p));
  matmul_tf32_kernel<Cfg, TRANS_A, TRANS_B><<<grid, Cfg::kThreads, bytes, stream>>>(p, simt::operand_a(p),
                                                                                     simt::operand_b(p));
  CUDA_CHECK_LAUNCH();
}

template <class Cfg>
void launch_tf32_any_layout(const GemmProblem& p, cudaStream_t stream) {
  if (!p.trans_a && !p.trans_b)
    launch_tf32<Cfg, false, false>(p, stream);
  else if (!p.trans_a && p.trans_b)
    launch_tf32<Cfg, false, true>(p, stream);
  else if (p.trans_a && !p.trans_b)
    launch_tf32<Cfg, true, false>(p, stream);
  else
    launch_tf32<Cfg, true, true>(p, stream);
}

}  // namespace

/// The number of SMs of the current device (read once).
int multiprocessor_count() {
  static const int count = [] {
    int dev = 0, n = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    return n;
  }();
  return count;
}

void matmul_tf32_mma(const GemmProblem& p, cudaStream_t stream) {
  // TODO(Task 7.6): launch the 128 x 128 configuration, or the 64 x 64 one when the product has fewer 128 x 128 tiles (times split-K slices) than the GPU has SMs
  throw course::NotImplemented("Task 7.6", "07_fast_gemm/matmul_11_tf32_mma.cu", "docs/lessons/07_fast_gemm.md");
}

}  // namespace course
