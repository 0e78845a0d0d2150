/// @file matmul_2_grid.cu
/// @brief Stage 04, kernel 2 (Task 4.2): a 2D grid of blocks, one thread per output, any size.
///
/// C is cut into blocks of 32 x 8 outputs and the grid holds as many blocks as
/// it takes to cover it: ceil(M / 32) x ceil(N / 8). Blocks at the right and
/// bottom edges hang over C, so every thread checks that its (m, n) is inside
/// before it computes anything.
///
/// This version maps threadIdx.x to the ROW m. The 32 threads of a warp then
/// hold 32 consecutive rows of one column n, and at each step k they read
/// op(A)[m][k] from 32 different rows, K floats apart in memory: 32 separate
/// memory transactions where one would do, and the same again when they write
/// C. Kernel 3 turns the mapping around; measure both (bench: BM_Matmul/2/...
/// against BM_Matmul/3/...).
#include "04_cuda_matmul/matmul_kernels.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

/// Thread (x, y) of block (bx, by) computes C[bx * 32 + x][by * 8 + y], when that is inside C.
__global__ void matmul_grid_kernel(GemmProblem p) {
  // BEGIN Task 4.2 (device): global row m from blockIdx.x and threadIdx.x, column n from blockIdx.y and threadIdx.y; skip outputs outside C
  // HINT: m = blockIdx.x * blockDim.x + threadIdx.x; return early when m >= p.M or n >= p.N.
  const int m = blockIdx.x * blockDim.x + threadIdx.x;
  const int n = blockIdx.y * blockDim.y + threadIdx.y;
  if (m >= p.M || n >= p.N) return;
  float acc = 0.f;
  for (int k = 0; k < p.K; ++k) acc += load_a(p, m, k) * load_b(p, k, n);
  store_c(p, m, n, acc);
  // END Task 4.2
}

void matmul_grid(const GemmProblem& p, cudaStream_t stream) {
  // BEGIN Task 4.2: launch blocks of 32 x 8 threads, and enough of them to cover all M x N outputs
  // HINT: rounding up: (p.M + 31) / 32 blocks along x (rows), (p.N + 7) / 8 along y (columns).
  constexpr int kRowsPerBlock = 32;  // along threadIdx.x: one warp spans 32 rows
  constexpr int kColsPerBlock = 8;   // along threadIdx.y
  const dim3 block(kRowsPerBlock, kColsPerBlock);
  const dim3 grid((p.M + kRowsPerBlock - 1) / kRowsPerBlock, (p.N + kColsPerBlock - 1) / kColsPerBlock);
  matmul_grid_kernel<<<grid, block, 0, stream>>>(p);
  CUDA_CHECK_LAUNCH();
  // END Task 4.2
}

}  // namespace course
