/// @file matmul_kernels.hpp
/// @brief Stage 04: what every matmul version shares (glue, not a task).
///
/// course::gemm() (gemm.cpp) checks its arguments once, packs them into a
/// GemmProblem and hands it to one of the launchers below; each launcher lives
/// in the file of its kernel. Under nvcc this header also gives the device
/// code the index mapping of the transposed operands, written once.
#pragma once

#include <cstddef>
#include <string>

#include <cuda_runtime.h>

namespace course {

/// One product C = alpha * op(A) * op(B) + beta * C, as course::gemm() received it
/// (layouts in gemm.hpp). Passed to kernels by value: it is 56 bytes of kernel arguments.
struct GemmProblem {
  bool trans_a = false, trans_b = false;
  int M = 0, N = 0, K = 0;
  float alpha = 1.f, beta = 0.f;
  const float* A = nullptr;
  const float* B = nullptr;
  float* C = nullptr;
  /// Split-K (kernel 6, and added kernels that say so; gemm_k_slices()): when > 0, the blocks of grid layer z
  /// sum only k in [z * k_slice, (z + 1) * k_slice) and write that partial product,
  /// alpha and beta ignored, to the z-th [M, N] matrix from C on. 0: all of K into C.
  int k_slice = 0;
};

void matmul_cublas(const GemmProblem& p, cudaStream_t stream);          ///< kernel 0, matmul_cublas.cpp
void matmul_single_block(const GemmProblem& p, cudaStream_t stream);    ///< kernel 1, Task 4.1
void matmul_grid(const GemmProblem& p, cudaStream_t stream);            ///< kernel 2, Task 4.2
void matmul_coalesced(const GemmProblem& p, cudaStream_t stream);       ///< kernel 3, Task 4.3
void matmul_tiled_16(const GemmProblem& p, cudaStream_t stream);        ///< kernel 4, Task 4.4
void matmul_tiled_32(const GemmProblem& p, cudaStream_t stream);        ///< kernel 5, Task 4.4
void matmul_register_tiled(const GemmProblem& p, cudaStream_t stream);  ///< kernel 6, Task 4.5

/// A kernel added to course::gemm()'s numbered list after the seven here (numbers 7
/// and on): from then on gemm(number, ...) runs `launch`, and the tables name it `name`.
struct GemmKernelEntry {
  std::string name;                                              ///< "warp tiles"
  void (*launch)(const GemmProblem& p, cudaStream_t stream) = nullptr;  ///< computes p as gemm() defines it
  /// True when `launch` honours GemmProblem::k_slice (the partial products of split-K in
  /// one launch), so that gemm_k_slices() and a split-K built on it can use it.
  bool k_slices = false;
};

/// Adds kernel `number`, which must be the next free number (gemm_kernel_count()); adding
/// the same entry again under its own number does nothing, so a stage may call its
/// registration more than once. Throws std::invalid_argument for any other number or a
/// null launcher. Not thread-safe: register before launching from several threads.
void add_gemm_kernel(int number, const GemmKernelEntry& entry);

#ifdef __CUDACC__
// The index mapping of gemm.hpp's table. Indices are computed in size_t: a
// 50000 x 50000 matrix has more elements than an int can count.

/// op(A)[m][k]
__device__ __forceinline__ float load_a(const GemmProblem& p, int m, int k) {
  return p.trans_a ? p.A[static_cast<std::size_t>(k) * p.M + m] : p.A[static_cast<std::size_t>(m) * p.K + k];
}

/// op(B)[k][n]
__device__ __forceinline__ float load_b(const GemmProblem& p, int k, int n) {
  return p.trans_b ? p.B[static_cast<std::size_t>(n) * p.K + k] : p.B[static_cast<std::size_t>(k) * p.N + n];
}

/// C[m][n] = alpha * acc + beta * C[m][n], without reading C when beta is 0
/// (C may then be uninitialised memory, and 0 * NaN would be NaN).
__device__ __forceinline__ void store_c(const GemmProblem& p, int m, int n, float acc) {
  float* c = p.C + static_cast<std::size_t>(m) * p.N + n;
  *c = p.beta == 0.f ? p.alpha * acc : p.alpha * acc + p.beta * *c;
}
#endif

}  // namespace course
