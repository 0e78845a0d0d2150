/// @file gemm.hpp
/// @brief Stage 04: one matrix product, seven ways to compute it on the GPU.
///
///     C[M, N] = alpha * op(A)[M, K] * op(B)[K, N] + beta * C[M, N]
///
/// Every matrix is row-major in device memory. op(X) is X, or X^T when the
/// matching trans flag is set; a transposed operand is passed as the row-major
/// matrix it is the transpose of:
///
/// | flag          | op(A) is       | A is stored as | element op(A)[m][k] |
/// |---------------|----------------|----------------|---------------------|
/// | trans_a false | A              | [M, K]         | A[m * K + k]        |
/// | trans_a true  | A^T            | [K, M]         | A[k * M + m]        |
/// | trans_b false | B              | [K, N]         | B[k * N + n]        |
/// | trans_b true  | B^T            | [N, K]         | B[n * K + k]        |
///
/// The dense layer of a minibatch needs all three shapes (stage 04's dense_gpu.cu):
/// Y = X W^T (trans_b), dW = dY^T X (trans_a), dX = dY W (neither).
///
/// The kernels, numbered as the lesson builds them (`--kernel N` picks one):
///
/// | N | file                        | what changes                                            |
/// |---|-----------------------------|---------------------------------------------------------|
/// | 0 | matmul_cublas.cpp           | cuBLAS SGEMM: the unit of measurement                   |
/// | 1 | matmul_1_single_block.cu    | one thread per output, all in ONE block (<= 1024 outputs) |
/// | 2 | matmul_2_grid.cu            | a grid of blocks, one thread per output, any size       |
/// | 3 | matmul_3_coalesced.cu       | the same, threadIdx.x along the contiguous columns      |
/// | 4 | matmul_4_tiled.cu           | shared-memory tiles of 16 x 16 sweeping K               |
/// | 5 | matmul_4_tiled.cu           | the same with 32 x 32 tiles                             |
/// | 6 | matmul_6_register_tiled.cu  | 64 x 64 tiles, each thread computes a 4 x 4 block of C  |
///
/// Numbers from 7 on are left for faster kernels (add_gemm_kernel() in
/// matmul_kernels.hpp): once added, every caller of gemm(), the dense layers here
/// and any convolution built on gemm(), runs on them unchanged.
///
/// When beta is 0, C is only written, never read (as in BLAS): it may hold
/// anything, NaN included.
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <vector>

namespace course {

constexpr int kGemmCublas = 0;         ///< cuBLAS SGEMM
constexpr int kGemmSingleBlock = 1;    ///< Task 4.1
constexpr int kGemmGrid = 2;           ///< Task 4.2
constexpr int kGemmCoalesced = 3;      ///< Task 4.3
constexpr int kGemmTiled16 = 4;        ///< Task 4.4, TILE = 16
constexpr int kGemmTiled32 = 5;        ///< Task 4.4, TILE = 32
constexpr int kGemmRegisterTiled = 6;  ///< Task 4.5
constexpr int kNumGemmKernels = 7;     ///< stage 04's own kernels: 0 .. kNumGemmKernels - 1

/// The fastest hand-written kernel: what the GPU MLP (and any caller of gemm()) uses unless told otherwise.
constexpr int kBestGemm = kGemmRegisterTiled;

/// A block holds at most 1024 threads on every CUDA GPU since compute capability 2.0,
/// so kernel 1 (one block, one thread per output) cannot compute more outputs than this.
constexpr int kMaxThreadsPerBlock = 1024;

/// C = alpha * op(A) * op(B) + beta * C on `stream`, with kernel `kernel` (0 .. 6, see the
/// table above, or one a later stage added: 0 .. gemm_kernel_count() - 1).
///
/// Asynchronous like a kernel launch: it returns once the work is queued. Throws
/// std::invalid_argument for a kernel number out of range, a negative size, a null
/// pointer to a non-empty matrix, or (kernel 1) more than kMaxThreadsPerBlock outputs;
/// course::GpuError when a launch or cuBLAS call fails.
void gemm(int kernel, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, const float* B,
          float beta, float* C, cudaStream_t stream = 0);

/// The kernels gemm() runs now: stage 04's kNumGemmKernels plus those later stages added.
int gemm_kernel_count();

/// True when `kernel` computes the partial products of split-K in one launch (kernel 6,
/// and the added kernels that say so); false for the others and for numbers out of range.
bool gemm_has_k_slices(int kernel);

/// Split-K, in one launch of `kernel` (one for which gemm_has_k_slices() is true; kernel 6
/// is stage 04's): for z = 0, 1, ..., slices - 1 (slices = ceil(K / k_slice)),
///
///     partials[z] [M, N] = op(A)[:, z-th k_slice columns] * op(B)[same rows, :]
///
/// stored one after another (slices * M * N floats). Their sum is op(A) op(B);
/// the caller adds them. The blocks of all slices run at once, so a
/// product with few tiles of C and a long K fills the GPU. Throws
/// std::invalid_argument for a kernel without one-launch split-K, k_slice < 1, a
/// negative size or a null pointer.
void gemm_k_slices(int kernel, bool trans_a, bool trans_b, int M, int N, int K, int k_slice, const float* A,
                   const float* B, float* partials, cudaStream_t stream = 0);

/// "cuBLAS", "single block", "grid", "coalesced", "tiled 16", "tiled 32", "register tiles"
/// (throws std::invalid_argument for a number out of range).
std::string gemm_kernel_name(int kernel);

/// gemm_kernel_name() of every kernel gemm() runs now, indexed by its number: the column heads of the tables.
std::vector<std::string> gemm_kernel_names();

}  // namespace course
