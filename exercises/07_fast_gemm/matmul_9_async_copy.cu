/// @file matmul_9_async_copy.cu
/// @brief Stage 07: kernel 9's launcher (Task 7.3) and the instances of its template that kernel 10's autotuner tries.
#include "07_fast_gemm/autotune.hpp"
#include "07_fast_gemm/fast_gemm_kernels.hpp"
#include "07_fast_gemm/matmul_9_async_copy.cuh"
#include "common/core/not_implemented.hpp"

namespace course {

namespace {

/// Kernel 9 with tile sizes `Shape` on `p`: one block per BM x BN tile of C (times the slices of K).
template <class Shape, bool FULL = false>
void launch_async_copy(const GemmProblem& p, cudaStream_t stream) {
  const dim3 grid((p.N + Shape::BN - 1) / Shape::BN, (p.M + Shape::BM - 1) / Shape::BM, simt::k_slices(p));
  const simt::Operand a = simt::operand_a(p), b = simt::operand_b(p);
  const bool vec_c = simt::c_takes_float4(p);
  if (!p.trans_a && !p.trans_b)
    matmul_async_copy_kernel<Shape, false, false, FULL><<<grid, Shape::kThreads, 0, stream>>>(p, a, b, vec_c);
  else if (!p.trans_a && p.trans_b)
    matmul_async_copy_kernel<Shape, false, true, FULL><<<grid, Shape::kThreads, 0, stream>>>(p, a, b, vec_c);
  else if (p.trans_a && !p.trans_b)
    matmul_async_copy_kernel<Shape, true, false, FULL><<<grid, Shape::kThreads, 0, stream>>>(p, a, b, vec_c);
  else
    matmul_async_copy_kernel<Shape, true, true, FULL><<<grid, Shape::kThreads, 0, stream>>>(p, a, b, vec_c);
  CUDA_CHECK_LAUNCH();
}

/// Kernel 10's launcher of one tile size: the full-tile instance (no checks in its copies)
/// where every tile of `p` is full, the checked one elsewhere.
template <class Shape>
void launch_tuned(const GemmProblem& p, cudaStream_t stream) {
  if (full_tiles(p, Shape::BM, Shape::BN, Shape::BK))
    launch_async_copy<Shape, true>(p, stream);
  else
    launch_async_copy<Shape, false>(p, stream);
}

/// Kernel 9's own tile sizes: kernel 8's, so that the two differ only in how tiles are loaded.
using Kernel9Shape = TileShape<128, 128, 8, 32, 64>;

/// A row of the candidates table: the shape's sizes and its launcher.
template <class Shape>
GemmCandidate candidate() {
  return {TileSizes{Shape::BM, Shape::BN, Shape::BK, Shape::WM, Shape::WN, Shape::kThreads, Shape::kMinBlocks},
          &launch_tuned<Shape>};
}
}  // namespace

void matmul_async_copy(const GemmProblem& p, cudaStream_t stream) {
  // TODO(Task 7.3): launch kernel 9 with its own tile sizes (Kernel9Shape)
  throw course::NotImplemented("Task 7.3", "07_fast_gemm/matmul_9_async_copy.cu", "docs/lessons/07_fast_gemm.md");
}

const std::vector<GemmCandidate>& async_copy_candidates() {
  // Large tiles reuse each loaded value most; small ones give small products enough
  // blocks to fill 132 SMs (C[64 x 256] has 2 tiles of 128 x 128 but 16 of 32 x 64).
  static const std::vector<GemmCandidate> candidates = {
      candidate<Kernel9Shape>(),                     // 128 x 128 x 8,  256 threads
      candidate<TileShape<128, 128, 16, 32, 64>>(),  // deeper slices: half the barriers per K
      candidate<TileShape<128, 64, 16, 32, 64>>(),   // 128 threads
      candidate<TileShape<64, 128, 16, 32, 64>>(),   // 128 threads
      candidate<TileShape<64, 64, 16, 32, 32>>(),    // 128 threads, 32 outputs per lane
      candidate<TileShape<32, 64, 16, 32, 32>>(),    // 64 threads: many blocks for small C
      candidate<TileShape<128, 128, 16, 32, 64, 1>>(),  // launch bounds of one block per SM: up to 255 registers
      candidate<TileShape<128, 64, 16, 32, 64, 2>>(),   // 128 threads, up to 255 registers a thread
  };
  return candidates;
}

}  // namespace course
