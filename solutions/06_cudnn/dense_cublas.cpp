/// @file dense_cublas.cpp
/// @brief Stage 06 (Task 6.9): the dense layer's three products as cublasSgemm calls on row-major data.
///
/// cuBLAS follows Fortran BLAS: a matrix is column-major, and
///
///     cublasSgemm(h, opA, opB, m, n, k, &alpha, A, lda, B, ldb, &beta, C, ldc)
///
/// computes C = alpha op(A) op(B) + beta C with C [m, n] column-major
/// (leading dimension ldc = the distance between columns), op(A) [m, k],
/// op(B) [k, n]. Our matrices are row-major. The bytes of a row-major
/// matrix M [R, C] read column-major (leading dimension C) are M^T [C, R]:
/// the same memory, transposed by the reading alone. So for a row-major
/// product C = A B we ask cuBLAS for its transpose,
///
///     C^T = (A B)^T = B^T A^T,
///
/// whose column-major result is, byte for byte, our row-major C. The operands
/// swap places (our B first), m and n swap (m = our columns of C), and every
/// row-major operand is already the transpose cuBLAS reads: it passes as
/// CUBLAS_OP_N when the product wants that transpose, CUBLAS_OP_T when it wants
/// the matrix itself. Each call below is worked out in its comment.
#include "06_cudnn/dense_cublas.hpp"

#include "06_cudnn/bias_gradient.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/gpu/cudnn_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

void dense_forward_cublas(const GpuHandles& h, const DenseDescriptors& d, const float* x, const float* W,
                          const float* b, float* y, int B, int IN, int OUT) {
  // BEGIN Task 6.9: Y = X W^T as one cublasSgemm (ask for Y^T = W X^T, column-major), then add b to every row with cudnnAddTensor
  // HINT: read column-major, x's bytes are X^T [IN, B] (ld IN), W's are W^T [IN, OUT] (ld IN), and y's are Y^T [OUT, B] (ld OUT).
  // HINT: so m = OUT, n = B, k = IN, A = W with CUBLAS_OP_T (we need W, the bytes hold W^T), B = x with CUBLAS_OP_N.
  const float one = 1.f, zero = 0.f;
  // Y^T [OUT, B] = W [OUT, IN] X^T [IN, B]: W is the stored W^T transposed (OP_T), X^T is x as stored (OP_N).
  CUBLAS_CHECK(cublasSgemm(h.cublas, CUBLAS_OP_T, CUBLAS_OP_N, /*m=*/OUT, /*n=*/B, /*k=*/IN, &one, W, /*lda=*/IN, x,
                           /*ldb=*/IN, &zero, y, /*ldc=*/OUT));
  CUDNN_CHECK(cudnnAddTensor(h.cudnn, &one, d.bias, b, &one, d.y, y));
  // END Task 6.9
}

void dense_backward_cublas(const GpuHandles& h, const DenseDescriptors& d, const float* x, const float* W,
                           const float* dy, float* dW, float* db, float* dx, int B, int IN, int OUT) {
  // BEGIN Task 6.9: dW = dY^T X and (when dx is not null) dX = dY W as cublasSgemm calls, and db = column sums of dY with bias_gradient_gpu
  // HINT: dW's bytes read column-major are dW^T [IN, OUT] = X^T dY: x as stored (OP_N, ld IN), dy's bytes are dY^T, so OP_T (ld OUT); m = IN, n = OUT, k = B.
  // HINT: dX's bytes are dX^T [IN, B] = W^T dY^T: both as stored (OP_N); m = IN, n = B, k = OUT.
  const float one = 1.f, zero = 0.f;
  // dW^T [IN, OUT] = X^T [IN, B] dY [B, OUT]: X^T is x as stored (OP_N), dY is the stored dY^T transposed (OP_T).
  CUBLAS_CHECK(cublasSgemm(h.cublas, CUBLAS_OP_N, CUBLAS_OP_T, /*m=*/IN, /*n=*/OUT, /*k=*/B, &one, x, /*lda=*/IN, dy,
                           /*ldb=*/OUT, &zero, dW, /*ldc=*/IN));
  bias_gradient_gpu(h, d.y, dy, db);  // d.y describes dY as [B, OUT, 1, 1]
  if (dx != nullptr) {
    // dX^T [IN, B] = W^T [IN, OUT] dY^T [OUT, B]: both are the stored bytes as they are (OP_N, OP_N).
    CUBLAS_CHECK(cublasSgemm(h.cublas, CUBLAS_OP_N, CUBLAS_OP_N, /*m=*/IN, /*n=*/B, /*k=*/OUT, &one, W, /*lda=*/IN, dy,
                             /*ldb=*/OUT, &zero, dx, /*ldc=*/IN));
  }
  // END Task 6.9
}

}  // namespace course
