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
  // BEGIN Task 7.1 (device): per 8-deep slice of this block's k range: CopyA/CopyB load() then store(), sync, 8 steps of (2 float4 of As, 2 of Bs, 64 FMAs), sync; then store C with simt::store_c4
  // HINT: thread (tx, ty) = (threadIdx.x % 16, threadIdx.x / 16) owns rows row0 + 8 ty + i and columns col0 + 8 tx + j; simt::k_range(p, k_begin, k_end) gives the slice of K.
  const int tx = threadIdx.x % (kBN / kTN), ty = threadIdx.x / (kBN / kTN);
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  int k_begin, k_end;
  simt::k_range(p, k_begin, k_end);
  float acc[kTM][kTN] = {};
  float4 ra[CopyA::kPerThread], rb[CopyB::kPerThread];
  for (int k0 = k_begin; k0 < k_end; k0 += kBK) {
    CopyA::load(a, row0, k0, k_end, ra);
    CopyB::load(b, col0, k0, k_end, rb);
    CopyA::store(As, ra);
    CopyB::store(Bs, rb);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kBK; ++k) {
      float av[kTM], bv[kTN];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float4 va = *reinterpret_cast<const float4*>(&As[k][ty * kTM + 4 * h]);
        const float4 vb = *reinterpret_cast<const float4*>(&Bs[k][tx * kTN + 4 * h]);
        av[4 * h + 0] = va.x, av[4 * h + 1] = va.y, av[4 * h + 2] = va.z, av[4 * h + 3] = va.w;
        bv[4 * h + 0] = vb.x, bv[4 * h + 1] = vb.y, bv[4 * h + 2] = vb.z, bv[4 * h + 3] = vb.w;
      }
#pragma unroll
      for (int i = 0; i < kTM; ++i)
#pragma unroll
        for (int j = 0; j < kTN; ++j) acc[i][j] += av[i] * bv[j];
    }
    __syncthreads();  // the tiles are overwritten next
  }
#pragma unroll
  for (int i = 0; i < kTM; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float v[4] = {acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]};
      simt::store_c4(p, vec_c, row0 + ty * kTM + i, col0 + tx * kTN + 4 * h, v);
    }
  // END Task 7.1
}

void matmul_vectorized(const GemmProblem& p, cudaStream_t stream) {
  // BEGIN Task 7.1: launch 256 threads per block, one block per 128 x 128 tile of C (times simt::k_slices(p)), with the kernel version for (trans_a, trans_b)
  const dim3 grid((p.N + kBN - 1) / kBN, (p.M + kBM - 1) / kBM, simt::k_slices(p));
  const simt::Operand a = simt::operand_a(p), b = simt::operand_b(p);
  const bool vec_c = simt::c_takes_float4(p);
  if (!p.trans_a && !p.trans_b)
    matmul_vectorized_kernel<false, false><<<grid, kThreads, 0, stream>>>(p, a, b, vec_c);
  else if (!p.trans_a && p.trans_b)
    matmul_vectorized_kernel<false, true><<<grid, kThreads, 0, stream>>>(p, a, b, vec_c);
  else if (p.trans_a && !p.trans_b)
    matmul_vectorized_kernel<true, false><<<grid, kThreads, 0, stream>>>(p, a, b, vec_c);
  else
    matmul_vectorized_kernel<true, true><<<grid, kThreads, 0, stream>>>(p, a, b, vec_c);
  CUDA_CHECK_LAUNCH();
  // END Task 7.1
}

}  // namespace course
