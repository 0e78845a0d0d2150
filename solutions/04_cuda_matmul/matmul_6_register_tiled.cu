/// @file matmul_6_register_tiled.cu
/// @brief Stage 04, kernel 6 (Task 4.5): shared-memory tiles plus register tiles: 16 outputs per thread.
///
/// Kernel 5 reads two floats from shared memory for every multiply-add: the
/// multiprocessor can do 128 FMAs per clock but move only 32 floats (128 bytes)
/// per clock out of shared memory, so the arithmetic waits on the loads.
/// The cure is reuse in registers. Here a block of 16 x 16 = 256 threads
/// computes a 64 x 64 tile of C, and each thread a 4 x 4 block of it:
///
///     for each k of the tile:   a[0..3] = op(A)[4 rows of this thread][k]       one 16-byte load
///                               b[0..3] = op(B)[k][4 columns of this thread]    one 16-byte load
///                               acc[i][j] += a[i] * b[j]                        16 FMAs
///
/// 16 FMAs for 2 loads instead of 1 FMA for 2. The 16 sums live in registers
/// (acc[4][4], indexed only with constants after unrolling, or the compiler
/// would move it to slow local memory).
///
/// The A tile is stored k-major, As[k][m], so that a thread's 4 rows at one k are
/// 4 neighbouring floats: one float4 read. Both tiles have 4 floats of padding
/// per row, which keeps each row 16-byte aligned and spreads the column-wise
/// writes of the loads over the banks. Loads are coalesced for every operand
/// layout (trans_a, trans_b are template parameters, so each of the four
/// versions has its own straight-line load code), and zero-filled outside A and B.
///
/// Split-K (gemm_k_slices()): a product with a small C and a
/// long K, like a conv layer's weight gradient (16 x 9 outputs, K = 50,176), gets
/// one block here, which walks all of K while the other multiprocessors idle. With
/// p.k_slice > 0 the grid gets a third dimension: the blocks of layer z sweep only
/// their slice of K and write their partial product to their own [M, N] matrix;
/// the caller adds the partials. One launch, as many blocks as the GPU wants.
#include "04_cuda_matmul/matmul_kernels.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

namespace {
constexpr int kBM = 64;                          // rows of C per block
constexpr int kBN = 64;                          // columns of C per block
constexpr int kBK = 16;                          // depth of one shared-memory tile
constexpr int kTM = 4;                           // rows of C per thread
constexpr int kTN = 4;                           // columns of C per thread
constexpr int kThreadsX = kBN / kTN;             // 16
constexpr int kThreadsY = kBM / kTM;             // 16
constexpr int kThreads = kThreadsX * kThreadsY;  // 256
constexpr int kPad = 4;                          // floats of padding per tile row (keeps float4 alignment)
static_assert(kTM == 4 && kTN == 4, "the inner loop reads a thread's rows and columns as one float4 each");
static_assert((kBM * kBK) % kThreads == 0 && (kBN * kBK) % kThreads == 0, "every thread loads the same count");
static_assert((kBM + kPad) % 4 == 0 && (kBN + kPad) % 4 == 0, "tile rows must stay 16-byte aligned for float4 reads");
}  // namespace

/// Launched as 16 x 16 threads per block, one block per 64 x 64 tile of C: thread (tx, ty) of
/// block (bx, by) computes rows by * 64 + 4 ty .. + 3 and columns bx * 64 + 4 tx .. + 3 of C.
template <bool TRANS_A, bool TRANS_B>
__global__ void __launch_bounds__(kThreads) matmul_register_tiled_kernel(GemmProblem p) {
  // BEGIN Task 4.5 (device): each thread accumulates a 4 x 4 block of C in registers; per tile of 16 k, the block loads op(A) into As[k][m] and op(B) into Bs[k][n], then each k is one float4 of A, one of B and 16 FMAs
  // HINT: thread t = ty * 16 + tx loads elements t, t + 256, t + 512, t + 768 of each tile; pick (row, k) from that number so neighbouring t read neighbouring addresses.
  // HINT: split-K: with p.k_slice > 0 sweep only k in [blockIdx.z * k_slice, min(K, that + k_slice)) and write the sum, as it is, to C[(z * M + m) * N + n].
  __shared__ __align__(16) float As[kBK][kBM + kPad];  // As[k][m] = op(A)[row0 + m][k0 + k]
  __shared__ __align__(16) float Bs[kBK][kBN + kPad];  // Bs[k][n] = op(B)[k0 + k][col0 + n]
  const int tid = threadIdx.y * kThreadsX + threadIdx.x;
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  const int tm = threadIdx.y * kTM, tn = threadIdx.x * kTN;  // this thread's block inside the tile
  // This block's slice of K: all of it, or slice blockIdx.z of p.k_slice rows (split-K).
  const int k_begin = p.k_slice > 0 ? blockIdx.z * p.k_slice : 0;
  const int k_end = p.k_slice > 0 ? min(p.K, k_begin + p.k_slice) : p.K;
  float acc[kTM][kTN] = {};
  for (int k0 = k_begin; k0 < k_end; k0 += kBK) {
#pragma unroll
    for (int i = 0; i < kBM * kBK / kThreads; ++i) {
      const int e = tid + i * kThreads;  // element e of the A tile
      // Stored [K, M] (trans_a): m is contiguous. Stored [M, K]: k is.
      const int m = TRANS_A ? e % kBM : e / kBK;
      const int k = TRANS_A ? e / kBM : e % kBK;
      const int gm = row0 + m, gk = k0 + k;
      As[k][m] = (gm < p.M && gk < k_end) ? (TRANS_A ? p.A[static_cast<std::size_t>(gk) * p.M + gm]
                                                   : p.A[static_cast<std::size_t>(gm) * p.K + gk])
                                        : 0.f;
    }
#pragma unroll
    for (int i = 0; i < kBN * kBK / kThreads; ++i) {
      const int e = tid + i * kThreads;  // element e of the B tile
      // Stored [N, K] (trans_b): k is contiguous. Stored [K, N]: n is.
      const int n = TRANS_B ? e / kBK : e % kBN;
      const int k = TRANS_B ? e % kBK : e / kBN;
      const int gn = col0 + n, gk = k0 + k;
      Bs[k][n] = (gk < k_end && gn < p.N) ? (TRANS_B ? p.B[static_cast<std::size_t>(gn) * p.K + gk]
                                                   : p.B[static_cast<std::size_t>(gk) * p.N + gn])
                                        : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kBK; ++k) {
      const float4 a4 = *reinterpret_cast<const float4*>(&As[k][tm]);
      const float4 b4 = *reinterpret_cast<const float4*>(&Bs[k][tn]);
      const float a[kTM] = {a4.x, a4.y, a4.z, a4.w};
      const float b[kTN] = {b4.x, b4.y, b4.z, b4.w};
#pragma unroll
      for (int i = 0; i < kTM; ++i)
#pragma unroll
        for (int j = 0; j < kTN; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < kTM; ++i)
#pragma unroll
    for (int j = 0; j < kTN; ++j) {
      const int m = row0 + tm + i, n = col0 + tn + j;
      if (m >= p.M || n >= p.N) continue;
      if (p.k_slice > 0)  // a partial product: the z-th [M, N] matrix from C on
        p.C[(static_cast<std::size_t>(blockIdx.z) * p.M + m) * p.N + n] = acc[i][j];
      else
        store_c(p, m, n, acc[i][j]);
    }
  // END Task 4.5
}

void matmul_register_tiled(const GemmProblem& p, cudaStream_t stream) {
  // BEGIN Task 4.5: launch 16 x 16 threads per block, one block per 64 x 64 tile of C (times the slices of K when p.k_slice > 0), with the kernel version for (trans_a, trans_b)
  // HINT: the template arguments must be constants: one launch per combination in an if / else.
  const dim3 block(kThreadsX, kThreadsY);
  const int slices = p.k_slice > 0 ? (p.K + p.k_slice - 1) / p.k_slice : 1;
  const dim3 grid((p.N + kBN - 1) / kBN, (p.M + kBM - 1) / kBM, slices);
  if (!p.trans_a && !p.trans_b)
    matmul_register_tiled_kernel<false, false><<<grid, block, 0, stream>>>(p);
  else if (!p.trans_a && p.trans_b)
    matmul_register_tiled_kernel<false, true><<<grid, block, 0, stream>>>(p);
  else if (p.trans_a && !p.trans_b)
    matmul_register_tiled_kernel<true, false><<<grid, block, 0, stream>>>(p);
  else
    matmul_register_tiled_kernel<true, true><<<grid, block, 0, stream>>>(p);
  CUDA_CHECK_LAUNCH();
  // END Task 4.5
}

}  // namespace course
