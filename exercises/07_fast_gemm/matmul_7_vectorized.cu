/// @file matmul_7_vectorized.cu
/// @brief Stage 07, kernel 7 (Task 7.1): 128 x 128 tiles, 8 x 8 outputs per thread, float4 loads, A stored transposed.
///
/// Stage 04's kernel 6 gives each thread 16 outputs and reads its operands as
/// single floats from global memory. Two things change here:
///
/// - **More work per thread.** A block of 256 threads computes a 128 x 128 tile
///   of C, each thread an 8 x 8 block: per k it reads 8 values of A and 8 of B
///   from shared memory (four float4) for 64 FMAs, 16 FMAs per shared load
///   instead of kernel 6's 8. Registers hold 64 sums, 16 operands and the indices:
///   about 100 of the 255 a thread may have, so two blocks still fit on an SM.
/// - **Wide loads.** Each thread moves its share of a tile (128 x 8 of A and
///   8 x 128 of B: one chunk of 4 floats each) with one 16-byte load instead of
///   four 4-byte ones: a quarter of the load instructions for the same bytes
///   (simt_tiles.cuh, TileCopy::load). A is stored [M, K], so its chunk is 4
///   values along k, and it goes into As[k][m] down a column: the tile arrives
///   transposed, and the inner loop reads a thread's 8 rows at one k as 2 float4.
///
///     for each 8-deep slice of K:
///       load the A and B chunks of this thread (float4), store them into As[k][m], Bs[k][n]
///       __syncthreads()
///       for k in 0..7:   a[0..7] = As[k][8 ty ..]   b[0..7] = Bs[k][8 tx ..]   acc[i][j] += a[i] b[j]
///       __syncthreads()
///
/// Thread (tx, ty) = (tid % 16, tid / 16) computes rows 8 ty .. 8 ty + 7 and
/// columns 8 tx .. 8 tx + 7 of the tile. What is still slow: when a quarter warp
/// (8 lanes, tx = 0..7) reads Bs[k][8 tx ..] as float4, lanes tx and tx + 4 hit
/// the same banks (their addresses are 128 bytes apart): a 2-way conflict on half
/// of the reads. Kernel 8 rearranges the lanes to remove it.
#include "04_cuda_matmul/matmul_kernels.hpp"
#include "07_fast_gemm/fast_gemm_kernels.hpp"
#include "07_fast_gemm/simt_tiles.cuh"
#include "common/gpu/cuda_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

namespace {
constexpr int kBM = 128, kBN = 128, kBK = 8;  // the block's tile of C, and the depth of a slice of K
constexpr int kTM = 8, kTN = 8;               // outputs per thread
constexpr int kThreads = (kBM / kTM) * (kBN / kTN);  // 256
}  // namespace

/// One block per 128 x 128 tile of C (times the slices of K with split-K).
template <bool TRANS_A, bool TRANS_B>
__global__ void __launch_bounds__(kThreads, 2) matmul_vectorized_kernel(GemmProblem p, simt::Operand a, simt::Operand b,
                                                                        bool vec_c) {
  using CopyA = simt::TileCopy<kBM, kBK, kThreads, !TRANS_A>;  // A [M, K] is k-contiguous
  using CopyB = simt::TileCopy<kBN, kBK, kThreads, TRANS_B>;   // B stored [N, K] is k-contiguous
  __shared__ __align__(16) typename CopyA::Tile As;           // As[k][m]
  __shared__ __align__(16) typename CopyB::Tile Bs;           // Bs[k][n]
  // TODO(Task 7.1): per 8-deep slice of this block's k range: CopyA/CopyB load() then store(), sync, 8 steps of (2 float4 of As, 2 of Bs, 64 FMAs), sync; then store C with simt::store_c4
  // HINT: thread (tx, ty) = (threadIdx.x % 16, threadIdx.x / 16) owns rows row0 + 8 ty + i and columns col0 + 8 tx + j; simt::k_range(p, k_begin, k_end) gives the slice of K.
}

void matmul_vectorized(const GemmProblem& p, cudaStream_t stream) {
  // TODO(Task 7.1): launch 256 threads per block, one block per 128 x 128 tile of C (times simt::k_slices(p)), with the kernel version for (trans_a, trans_b)
  throw course::NotImplemented("Task 7.1", "07_fast_gemm/matmul_7_vectorized.cu", "docs/lessons/07_fast_gemm.md");
}

}  // namespace course
