/// @file fast_gemm_kernels.hpp
/// @brief Stage 07: the launchers of kernels 7 to 12 (glue, not a task), one in each kernel's file.
///
/// Each takes a course::GemmProblem (stage 04's matmul_kernels.hpp) whose sizes and
/// pointers course::gemm() has already checked, and queues the kernel on `stream`.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "04_cuda_matmul/matmul_kernels.hpp"

namespace course {

/// May a kernel read op(A) in chunks of 4 consecutive floats along A's contiguous
/// dimension as float4? Yes when A is 16-byte aligned and no chunk can straddle an
/// edge: the contiguous length (M for A stored [K, M], K for A [M, K]) is a multiple of
/// 4, and so is the split-K slice when the chunks run along k (a slice edge is then a
/// multiple of 4 too). Kernels 7 to 10 read single floats otherwise.
inline bool float4_chunks_a(const GemmProblem& p) {
  const bool aligned = reinterpret_cast<std::uintptr_t>(p.A) % 16 == 0;
  return aligned && (p.trans_a ? p.M % 4 == 0 : p.K % 4 == 0 && p.k_slice % 4 == 0);
}
/// The same for op(B): contiguous length N for B stored [K, N], K for B stored [N, K].
inline bool float4_chunks_b(const GemmProblem& p) {
  const bool aligned = reinterpret_cast<std::uintptr_t>(p.B) % 16 == 0;
  return aligned && (p.trans_b ? p.K % 4 == 0 && p.k_slice % 4 == 0 : p.N % 4 == 0);
}

/// True when kernel 9's block tiles of bm x bn, bk deep, never cross an edge of p: M, N,
/// K and the split-K slice are multiples of them, both operands take float4 chunks, and a
/// chunk's offset inside a tile fits an int. Kernel 10 then runs the full-tile instance
/// of its choice, whose copies check nothing (simt_tiles.cuh, TileCopy's FULL).
inline bool full_tiles(const GemmProblem& p, int bm, int bn, int bk) {
  // A tile spans `rows` stored rows of `ld` floats: its chunk offsets stay below rows * ld.
  const auto fits = [](long long rows, long long ld) { return rows * ld < (1LL << 31); };
  const bool a_fits = p.trans_a ? fits(bk, p.M) : fits(bm, p.K);  // A stored [K, M] or [M, K]
  const bool b_fits = p.trans_b ? fits(bn, p.K) : fits(bk, p.N);  // B stored [N, K] or [K, N]
  return float4_chunks_a(p) && float4_chunks_b(p) && p.M % bm == 0 && p.N % bn == 0 && p.K % bk == 0 &&
         p.k_slice % bk == 0 && a_fits && b_fits;
}

void matmul_vectorized(const GemmProblem& p, cudaStream_t stream);   ///< kernel 7, Task 7.1
void matmul_warp_tiled(const GemmProblem& p, cudaStream_t stream);   ///< kernel 8, Task 7.2
void matmul_async_copy(const GemmProblem& p, cudaStream_t stream);   ///< kernel 9, Task 7.3
void matmul_autotuned(const GemmProblem& p, cudaStream_t stream);    ///< kernel 10, Task 7.4
void matmul_tf32_mma(const GemmProblem& p, cudaStream_t stream);     ///< kernel 11, Task 7.6
void matmul_bf16_mma(const GemmProblem& p, cudaStream_t stream);     ///< kernel 12, Task 7.7 (FP32 inputs)
void matmul_wgmma(const GemmProblem& p, cudaStream_t stream);        ///< kernel 13, Task 7.8 (FP32 inputs)
void matmul_wgmma_tf32(const GemmProblem& p, cudaStream_t stream);   ///< kernel 14, Task 7.8
void matmul_tma_tf32(const GemmProblem& p, cudaStream_t stream);     ///< kernel 15 (given)
void matmul_tma_bf16(const GemmProblem& p, cudaStream_t stream);     ///< kernel 16 (given, FP32 inputs)

/// The number of SMs of the current device (read once): kernels 11 and 12 pick smaller tiles
/// for products with fewer large tiles than that.
int multiprocessor_count();

/// Kernels 12 and 13 on BF16 inputs (course::gemm_bf16()): A and B are BF16 matrices, p's
/// own A and B are unused.
void matmul_bf16_mma_bf16_inputs(const GemmProblem& p, const __nv_bfloat16* A, const __nv_bfloat16* B,
                                 cudaStream_t stream);
void matmul_wgmma_bf16_inputs(const GemmProblem& p, const __nv_bfloat16* A, const __nv_bfloat16* B,
                              cudaStream_t stream);
/// Kernel 16 on BF16 inputs.
void matmul_tma_bf16_inputs(const GemmProblem& p, const __nv_bfloat16* A, const __nv_bfloat16* B,
                            cudaStream_t stream);

/// True when kernels 13 to 16 run their own wgmma code here: the build has sm_90a code
/// (COURSE_HAVE_SM90A) and the GPU is a Hopper (compute capability 9.0). Otherwise kernel 13
/// hands every product to kernel 12, and kernel 14 to kernel 11.
bool wgmma_available();

}  // namespace course
