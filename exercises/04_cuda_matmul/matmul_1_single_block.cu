/// @file matmul_1_single_block.cu
/// @brief Stage 04, kernel 1 (Task 4.1): one thread per output element, all in a single block.
///
/// The simplest mapping of a matrix product onto CUDA threads: thread
/// (threadIdx.x, threadIdx.y) = (n, m) computes C[m][n] as a dot product of
/// row m of op(A) and column n of op(B). One block, so no blockIdx at all.
///
/// It cannot grow: a block holds at most 1024 threads (kMaxThreadsPerBlock),
/// and a block runs on one streaming multiprocessor while the other 131 of an
/// H100 sit idle. A 33 x 33 product already needs 1089 threads; the launch
/// would fail with "invalid configuration argument", so the launcher refuses
/// it first with a message that says why. Kernel 2 lifts the limit with a
/// grid of blocks.
#include <stdexcept>
#include <string>

#include "04_cuda_matmul/gemm.hpp"
#include "04_cuda_matmul/matmul_kernels.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

/// Launched as one block of (N, M) threads: thread (x, y) computes C[y][x].
__global__ void matmul_single_block_kernel(GemmProblem p) {
  // TODO(Task 4.1): thread (x, y) of the one block computes C[y][x] = alpha * sum_k op(A)[y][k] op(B)[k][x] + beta * C[y][x]
  // HINT: load_a(p, m, k), load_b(p, k, n) and store_c(p, m, n, acc) in matmul_kernels.hpp do the indexing.
}

void matmul_single_block(const GemmProblem& p, cudaStream_t stream) {
  // TODO(Task 4.1): launch ONE block of N x M threads; refuse (std::invalid_argument) when M * N > kMaxThreadsPerBlock
  // HINT: dim3 block(p.N, p.M); the check must come before the launch, and its message should say why.
  throw course::NotImplemented("Task 4.1", "04_cuda_matmul/matmul_1_single_block.cu", "docs/lessons/04_cuda_matmul.md");
}

}  // namespace course
