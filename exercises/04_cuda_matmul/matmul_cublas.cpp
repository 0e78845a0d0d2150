/// @file matmul_cublas.cpp
/// @brief Stage 04, kernel 0: cuBLAS SGEMM, the yardstick every hand-written kernel is measured against.
///
/// cuBLAS follows Fortran BLAS: its matrices are column-major. A row-major
/// matrix X [R, C] read as column-major with leading dimension C is X^T [C, R],
/// without moving a byte. So instead of the row-major product
///
///     C = op(A) op(B)                      C is [M, N] row-major
///
/// we ask cuBLAS for its transpose, which it stores column-major in exactly the
/// bytes of our row-major C:
///
///     C^T = op(B)^T op(A)^T                C^T is [N, M] column-major, leading dimension N
///
/// cuBLAS's first operand is therefore our B, its second our A, and its m, n
/// are our N, M. What remains is whether cuBLAS must transpose each operand:
///
/// - B not transposed: B is [K, N] row-major, which column-major is B^T [N, K]
///   with leading dimension N: already op(B)^T, so CUBLAS_OP_N, ld = N.
/// - B transposed: B is stored [N, K] row-major = [K, N] column-major (ld K),
///   and op(B)^T = that stored matrix's transpose: CUBLAS_OP_T, ld = K.
/// - A likewise: not transposed, CUBLAS_OP_N with ld = K; transposed, CUBLAS_OP_T with ld = M.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "04_cuda_matmul/matmul_kernels.hpp"
#include "common/gpu/cuda_check.hpp"

namespace course {

namespace {

/// One handle per process, made on first use. Creating a handle costs milliseconds
/// (it allocates device memory), so it is kept; it is not destroyed at exit,
/// when the CUDA runtime may already be shutting down, and the driver reclaims it.
cublasHandle_t cublas_handle() {
  static cublasHandle_t handle = [] {
    cublasHandle_t h = nullptr;
    CUBLAS_CHECK(cublasCreate(&h));
    // Plain FP32 arithmetic, like the hand-written kernels: no TF32 tensor cores,
    // which would round the inputs to 10-bit mantissas (and win an unfair race).
    CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
    return h;
  }();
  return handle;
}

}  // namespace

void matmul_cublas(const GemmProblem& p, cudaStream_t stream) {
  cublasHandle_t h = cublas_handle();
  CUBLAS_CHECK(cublasSetStream(h, stream));
  if (p.K == 0) {
    // An empty sum: C = beta C. Done here so that beta = 0 surely writes zeros
    // (C may hold NaN), as the hand-written kernels do, whatever cuBLAS does with k = 0.
    const std::size_t mn = static_cast<std::size_t>(p.M) * static_cast<std::size_t>(p.N);
    if (p.beta == 0.f) {
      CUDA_CHECK(cudaMemsetAsync(p.C, 0, mn * sizeof(float), stream));  // 0.0f is all zero bits
    } else {
      CUBLAS_CHECK(cublasSscal_64(h, static_cast<std::int64_t>(mn), &p.beta, p.C, 1));
    }
    return;
  }
  const cublasOperation_t op_b = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  // Leading dimensions must be at least 1 even when K is 0 (an empty sum: C = beta C).
  const int ld_b = std::max(1, p.trans_b ? p.K : p.N);
  const int ld_a = std::max(1, p.trans_a ? p.M : p.K);
  CUBLAS_CHECK(cublasSgemm(h, op_b, op_a, /*m=*/p.N, /*n=*/p.M, /*k=*/p.K, &p.alpha, p.B, ld_b, p.A, ld_a, &p.beta, p.C,
                           /*ldc=*/p.N));
}

}  // namespace course
