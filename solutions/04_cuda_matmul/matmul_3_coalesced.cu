/// @file matmul_3_coalesced.cu
/// @brief Stage 04, kernel 3 (Task 4.3): kernel 2 with coalesced global-memory access.
///
/// The same grid and the same arithmetic as kernel 2; only the mapping turns
/// around: threadIdx.x now walks the COLUMN n, the dimension that is
/// contiguous in C and in B (row-major). At step k the 32 threads of a warp
///
/// - read op(B)[k][n .. n+31]: 32 neighbouring floats, one 128-byte transaction
///   (the hardware merges, "coalesces", the warp's accesses);
/// - read op(A)[m][k]: the same address for all 32, fetched once and broadcast;
/// - finally write C[m][n .. n+31]: again one contiguous run.
///
/// Kernel 2 made 32 transactions of each kind where this makes one.
/// (With trans_b, B is stored [N, K] and op(B)[k][n] is K floats from
/// op(B)[k][n+1]: that product stays uncoalesced here; the tiled kernels fix
/// it by choosing, per operand, which threads load which element.)
#include "04_cuda_matmul/matmul_kernels.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

/// Thread (x, y) of block (bx, by) computes C[by * 8 + y][bx * 32 + x], when that is inside C.
__global__ void matmul_coalesced_kernel(GemmProblem p) {
  // BEGIN Task 4.3 (device): as kernel 2, but the column n comes from threadIdx.x (contiguous in C and B) and the row m from threadIdx.y
  // HINT: n = blockIdx.x * blockDim.x + threadIdx.x; m = blockIdx.y * blockDim.y + threadIdx.y.
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  const int m = blockIdx.y * blockDim.y + threadIdx.y;
  if (m >= p.M || n >= p.N) return;
  float acc = 0.f;
  for (int k = 0; k < p.K; ++k) acc += load_a(p, m, k) * load_b(p, k, n);
  store_c(p, m, n, acc);
  // END Task 4.3
}

void matmul_coalesced(const GemmProblem& p, cudaStream_t stream) {
  // BEGIN Task 4.3: launch blocks of 32 x 8 threads with x along the columns of C
  // HINT: (p.N + 31) / 32 blocks along x, (p.M + 7) / 8 along y.
  constexpr int kColsPerBlock = 32;  // along threadIdx.x: one warp spans 32 columns
  constexpr int kRowsPerBlock = 8;   // along threadIdx.y
  const dim3 block(kColsPerBlock, kRowsPerBlock);
  const dim3 grid((p.N + kColsPerBlock - 1) / kColsPerBlock, (p.M + kRowsPerBlock - 1) / kRowsPerBlock);
  matmul_coalesced_kernel<<<grid, block, 0, stream>>>(p);
  CUDA_CHECK_LAUNCH();
  // END Task 4.3
}

}  // namespace course
