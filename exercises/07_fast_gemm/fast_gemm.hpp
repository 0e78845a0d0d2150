/// @file fast_gemm.hpp
/// @brief Stage 07: the GEMM past stage 04 — warp tiles, asynchronous copies, an autotuner, then tensor cores.
///
/// Stage 04 ended with kernel 6 (64 x 64 tiles, 4 x 4 outputs per thread) at about
/// half of cuBLAS. This stage continues its numbered list, each kernel fixing what
/// held the one before it back, and adds them to course::gemm() (stage 04's entry
/// point), so stage 04's dense layers and stage 05's convolutions run on them unchanged:
///
/// | N  | file                         | task | what changes                                                   | math |
/// |----|------------------------------|------|----------------------------------------------------------------|------|
/// | 7  | matmul_7_vectorized.cu       | 7.1  | 128 x 128 tiles, 8 x 8 outputs per thread, float4 loads, A stored transposed | FP32 |
/// | 8  | matmul_8_warp_tiled.cu       | 7.2  | block tile -> warp tile -> thread tile: conflict-free shared reads | FP32 |
/// | 9  | matmul_9_async_copy.cuh      | 7.3  | cp.async: the next tile loads while this one is multiplied      | FP32 |
/// | 10 | autotune.cpp                 | 7.4  | kernel 9 as a template over its tile sizes; the fastest correct one per shape | FP32 |
/// | 11 | matmul_11_tf32_mma.cu        | 7.6  | tensor cores: mma.sync on TF32 inputs, FP32 sums               | TF32 |
/// | 12 | matmul_12_bf16_mma.cu        | 7.7  | tensor cores: mma.sync on BF16 inputs, FP32 sums               | BF16 |
/// | 13 | matmul_13_wgmma_sm90a.cu     | 7.8  | Hopper's wgmma: the tensor cores read shared memory themselves | BF16 |
/// | 14 | matmul_14_wgmma_tf32_sm90a.cu| 7.8  | wgmma in TF32, one operand from registers                      | TF32 |
/// | 15 | matmul_15_tma_tf32_sm90a.cu  | —    | kernel 14 with TMA copies by one thread, barriers, Y rounded first (given) | TF32 |
/// | 16 | matmul_16_tma_bf16_sm90a.cu  | —    | kernel 13 with kernel 15's TMA copies and barriers (given)      | BF16 |
///
/// (Task 7.5 is the rounding of FP32 to TF32 and BF16, rounding.cuh, that 11 to 14 use.)
/// Kernels 13 to 16 need a Hopper GPU and a build for it (sm_90a); elsewhere they hand
/// every product to kernels 12 and 11 (wgmma_available() says which).
///
/// Every kernel computes C = alpha op(A) op(B) + beta C with stage 04's layouts
/// (gemm.hpp: row-major, transposes by flag) and any sizes, and honours split-K
/// (GemmProblem::k_slice), so stage 05's conv weight gradients keep their one-launch split.
///
/// **Precision.** Kernels 11 and 12 read FP32 matrices like every other kernel and
/// round each operand as it enters the tensor cores (to TF32: 10 mantissa bits; to
/// BF16: 7), then add the exact products in FP32. So a model trained with them keeps
/// FP32 weights (the "master weights"), FP32 activations and an FP32 loss; only the
/// multiplications are reduced. gemm_bf16() runs kernel 12 on matrices already stored
/// in BF16 (half the bytes), the form cuBLAS's BF16 GEMM takes, for a fair comparison.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "04_cuda_matmul/gemm.hpp"

namespace course {

constexpr int kGemmVectorized = 7;      ///< Task 7.1
constexpr int kGemmWarpTiled = 8;       ///< Task 7.2
constexpr int kGemmAsyncCopy = 9;       ///< Task 7.3
constexpr int kGemmAutotuned = 10;      ///< Task 7.4: kernel 9 with the tile sizes tuned per shape
constexpr int kGemmTf32 = 11;           ///< Task 7.6: TF32 tensor cores
constexpr int kGemmBf16 = 12;           ///< Task 7.7: BF16 tensor cores
constexpr int kGemmWgmma = 13;          ///< Task 7.8: BF16 on Hopper's warpgroup MMA
constexpr int kGemmWgmmaTf32 = 14;      ///< Task 7.8: TF32 on Hopper's warpgroup MMA
constexpr int kGemmTmaTf32 = 15;        ///< given: kernel 14 with TMA, barriers and split roles
constexpr int kGemmTmaBf16 = 16;        ///< given: kernel 13 with TMA, barriers and split roles
constexpr int kLastFastGemm = kGemmTmaBf16;

/// What a kernel's multiplications round their operands to. Every kernel adds in FP32.
enum class Precision { FP32, TF32, BF16 };

/// "fp32", "tf32", "bf16"
std::string precision_name(Precision p);
/// The inverse; throws std::invalid_argument naming the choices for anything else.
Precision parse_precision(const std::string& name);

/// Adds kernels 7 to 14 to course::gemm() (stage 04's add_gemm_kernel). Call it once
/// before using them; calling it again does nothing.
void register_fast_gemm_kernels();

/// The kernel that computes what gemm() is asked of `kernel` on this GPU: the kernel itself, or
/// what runs where the GPU lacks a feature it needs (common/gpu/gpu_features.def, as COURSE_AS_CC may
/// lower it): 9 and 10 need cp.async (else kernel 8), 11 and 12 their mma shapes (else kernel 10),
/// 13 to 16 a Hopper and sm_90a code (else 12 or 11). Followed to the end: on a T4, 11 gives 8.
int kernel_that_runs(int kernel);
/// One line per fallback step kernel_that_runs() takes, saying why; none when the kernel runs itself.
std::vector<std::string> kernel_choice_notes(int kernel);

/// The precision of any kernel of gemm() (0 to 6 and the autotuned ones are FP32;
/// cuBLAS, kernel 0, runs plain FP32 SGEMM). Throws std::invalid_argument for an unknown kernel.
Precision gemm_precision(int kernel);

/// The kernel a trainer uses for `precision` unless told otherwise: 10 (autotuned FP32),
/// 11 (TF32) or 12 (BF16).
int default_kernel(Precision precision);

/// C = alpha * op(A) * op(B) + beta * C with A and B stored in BF16 (layouts as in
/// gemm.hpp) and C in FP32, on kernel 12's or 13's tensor cores (`kernel`): the same work
/// as cublasGemmEx with BF16 inputs and FP32 compute. Throws std::invalid_argument for
/// another kernel, and like course::gemm() otherwise.
void gemm_bf16(int kernel, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const __nv_bfloat16* A,
               const __nv_bfloat16* B, float beta, float* C, cudaStream_t stream = 0);

/// cuBLAS with reduced-precision math, the yardsticks of kernels 11 and 12:
/// cublasGemmEx with FP32 inputs and CUBLAS_COMPUTE_32F_FAST_TF32 (TF32 tensor cores),
/// and with BF16 inputs and CUBLAS_COMPUTE_32F. Same layouts and semantics as course::gemm().
void cublas_gemm_tf32(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, const float* B,
                      float beta, float* C, cudaStream_t stream = 0);
void cublas_gemm_bf16(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const __nv_bfloat16* A,
                      const __nv_bfloat16* B, float beta, float* C, cudaStream_t stream = 0);

}  // namespace course
