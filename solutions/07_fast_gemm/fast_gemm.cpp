/// @file fast_gemm.cpp
/// @brief Stage 07: kernels 7 to 12 added to course::gemm(), their precisions, and the cuBLAS yardsticks (glue, not a task).
#include "07_fast_gemm/fast_gemm.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "04_cuda_matmul/matmul_kernels.hpp"
#include "07_fast_gemm/fast_gemm_kernels.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/gpu/gpu_capability.hpp"

namespace course {

std::string precision_name(Precision p) {
  switch (p) {
    case Precision::FP32: return "fp32";
    case Precision::TF32: return "tf32";
    case Precision::BF16: return "bf16";
  }
  return "?";
}

Precision parse_precision(const std::string& name) {
  if (name == "fp32") return Precision::FP32;
  if (name == "tf32") return Precision::TF32;
  if (name == "bf16") return Precision::BF16;
  throw std::invalid_argument("unknown precision '" + name + "' (fp32, tf32 or bf16)");
}

namespace {

/// The kernel's own launcher, whatever this GPU can do.
using Launcher = void (*)(const GemmProblem&, cudaStream_t);
Launcher own_launcher(int kernel) {
  switch (kernel) {
    case kGemmVectorized: return &matmul_vectorized;
    case kGemmWarpTiled: return &matmul_warp_tiled;
    case kGemmAsyncCopy: return &matmul_async_copy;
    case kGemmAutotuned: return &matmul_autotuned;
    case kGemmTf32: return &matmul_tf32_mma;
    case kGemmBf16: return &matmul_bf16_mma;
    case kGemmWgmma: return &matmul_wgmma;
    case kGemmWgmmaTf32: return &matmul_wgmma_tf32;
    case kGemmTmaTf32: return &matmul_tma_tf32;
    case kGemmTmaBf16: return &matmul_tma_bf16;
  }
  throw std::invalid_argument("no stage 07 kernel " + std::to_string(kernel));
}

/// What a kernel needs of the GPU (common/gpu/gpu_features.def) and what runs where it is missing.
struct Fallback {
  int kernel;
  GpuFeature needs;
  int instead;
};
constexpr Fallback kFallbacks[] = {
#define COURSE_KERNEL_FALLBACK(kernel, feature, instead) {kernel, GpuFeature::feature, instead},
#include "07_fast_gemm/kernel_fallbacks.def"
#undef COURSE_KERNEL_FALLBACK
};

/// The one fallback step of `kernel` on this GPU, or null when the kernel runs as it is.
const Fallback* fallback_here(int kernel) {
  for (const Fallback& f : kFallbacks) {
    if (f.kernel != kernel) continue;  // the GPU is asked about this kernel's feature only
    const bool has = f.needs == GpuFeature::Wgmma ? wgmma_available() : gpu_has(f.needs);
    return has ? nullptr : &f;
  }
  return nullptr;
}

/// Kernel K as gemm() runs it: its own launcher, or its fallback's on a GPU without what it needs.
template <int K>
void launch_here(const GemmProblem& p, cudaStream_t stream) {
  own_launcher(kernel_that_runs(K))(p, stream);
}

}  // namespace

int kernel_that_runs(int kernel) {
  const Fallback* f = fallback_here(kernel);
  return f ? kernel_that_runs(f->instead) : kernel;
}

std::vector<std::string> kernel_choice_notes(int kernel) {
  std::vector<std::string> notes;
  for (const Fallback* f = fallback_here(kernel); f; f = fallback_here(f->instead)) {
    const std::string why = f->needs == GpuFeature::Wgmma && gpu_has(GpuFeature::Wgmma)
                                ? "this build has no sm_90a code (90 is not among CMAKE_CUDA_ARCHITECTURES)"
                                : feature_requirement(f->needs) + "; choosing as " + chosen_capability_note();
    notes.push_back("kernel " + std::to_string(f->kernel) + " (" + gemm_kernel_name(f->kernel) + "): " + why +
                    ": kernel " + std::to_string(f->instead) + " (" + gemm_kernel_name(f->instead) + ") runs instead");
  }
  return notes;
}

void register_fast_gemm_kernels() {
  add_gemm_kernel(kGemmVectorized, {"vectorized", &launch_here<kGemmVectorized>, true});
  add_gemm_kernel(kGemmWarpTiled, {"warp tiles", &launch_here<kGemmWarpTiled>, true});
  add_gemm_kernel(kGemmAsyncCopy, {"async copy", &launch_here<kGemmAsyncCopy>, true});
  add_gemm_kernel(kGemmAutotuned, {"autotuned", &launch_here<kGemmAutotuned>, true});
  add_gemm_kernel(kGemmTf32, {"TF32 mma", &launch_here<kGemmTf32>, true});
  add_gemm_kernel(kGemmBf16, {"BF16 mma", &launch_here<kGemmBf16>, true});
  add_gemm_kernel(kGemmWgmma, {"BF16 wgmma", &launch_here<kGemmWgmma>, true});
  add_gemm_kernel(kGemmWgmmaTf32, {"TF32 wgmma", &launch_here<kGemmWgmmaTf32>, true});
  add_gemm_kernel(kGemmTmaTf32, {"TF32 wgmma + TMA", &launch_here<kGemmTmaTf32>, true});
  add_gemm_kernel(kGemmTmaBf16, {"BF16 wgmma + TMA", &launch_here<kGemmTmaBf16>, true});
}

#ifndef COURSE_HAVE_SM90A
// A build without sm_90a code (no 90 among CMAKE_CUDA_ARCHITECTURES) has no kernels 13 to 16 of
// its own: they hand every product to kernels 12 and 11, and say so through wgmma_available().
bool wgmma_available() { return false; }
void matmul_wgmma(const GemmProblem& p, cudaStream_t stream) { matmul_bf16_mma(p, stream); }
void matmul_wgmma_tf32(const GemmProblem& p, cudaStream_t stream) { matmul_tf32_mma(p, stream); }
void matmul_tma_tf32(const GemmProblem& p, cudaStream_t stream) { matmul_tf32_mma(p, stream); }
void matmul_tma_bf16(const GemmProblem& p, cudaStream_t stream) { matmul_bf16_mma(p, stream); }
void matmul_tma_bf16_inputs(const GemmProblem& p, const __nv_bfloat16* A, const __nv_bfloat16* B,
                            cudaStream_t stream) {
  matmul_bf16_mma_bf16_inputs(p, A, B, stream);
}
void matmul_wgmma_bf16_inputs(const GemmProblem& p, const __nv_bfloat16* A, const __nv_bfloat16* B,
                              cudaStream_t stream) {
  matmul_bf16_mma_bf16_inputs(p, A, B, stream);
}
#endif

Precision gemm_precision(int kernel) {
  gemm_kernel_name(kernel);  // throws std::invalid_argument for a kernel gemm() does not know
  if (kernel == kGemmTf32 || kernel == kGemmWgmmaTf32 || kernel == kGemmTmaTf32) return Precision::TF32;
  if (kernel == kGemmBf16 || kernel == kGemmWgmma || kernel == kGemmTmaBf16) return Precision::BF16;
  return Precision::FP32;
}

int default_kernel(Precision precision) {
  switch (precision) {
    case Precision::TF32: return kGemmTf32;
    case Precision::BF16: return kGemmBf16;
    case Precision::FP32: break;
  }
  return kGemmAutotuned;
}

void gemm_bf16(int kernel, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const __nv_bfloat16* A,
               const __nv_bfloat16* B, float beta, float* C, cudaStream_t stream) {
  if (kernel != kGemmBf16 && kernel != kGemmWgmma && kernel != kGemmTmaBf16)
    throw std::invalid_argument("gemm_bf16: kernel " + std::to_string(kernel) + " does not take BF16 inputs (12, 13 and 16 do)");
  if (!gpu_has(GpuFeature::Bf16Mma))
    throw std::runtime_error("gemm_bf16: BF16 inputs need kernel 12's mma: " + without_feature_note(GpuFeature::Bf16Mma));
  if (M < 0 || N < 0 || K < 0)
    throw std::invalid_argument("gemm_bf16: sizes must not be negative, got M=" + std::to_string(M) +
                                " N=" + std::to_string(N) + " K=" + std::to_string(K));
  if (M == 0 || N == 0) return;
  if (C == nullptr) throw std::invalid_argument("gemm_bf16: C is null");
  if (K > 0 && (A == nullptr || B == nullptr)) throw std::invalid_argument("gemm_bf16: A or B is null");
  // The problem's A and B are not read through p (they are BF16): the launcher takes them apart.
  const GemmProblem p{trans_a, trans_b, M, N, K, alpha, beta, nullptr, nullptr, C};
  if (kernel == kGemmWgmma)
    matmul_wgmma_bf16_inputs(p, A, B, stream);
  else if (kernel == kGemmTmaBf16)
    matmul_tma_bf16_inputs(p, A, B, stream);
  else
    matmul_bf16_mma_bf16_inputs(p, A, B, stream);
}

namespace {

/// A cuBLAS handle of this stage's own (stage 04's keeps plain FP32 math).
cublasHandle_t handle() {
  static cublasHandle_t h = [] {
    cublasHandle_t made = nullptr;
    CUBLAS_CHECK(cublasCreate(&made));
    return made;
  }();
  return h;
}

/// cublasGemmEx on row-major matrices, as stage 04's matmul_cublas.cpp explains: cuBLAS is
/// column-major, so it computes C^T = op(B)^T op(A)^T, whose bytes are our row-major C.
void gemm_ex(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const void* A, const void* B,
             cudaDataType_t input, cublasComputeType_t compute, float beta, float* C, cudaStream_t stream) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    gemm(kGemmCublas, trans_a, trans_b, M, N, 0, alpha, nullptr, nullptr, beta, C, stream);  // C = beta C
    return;
  }
  CUBLAS_CHECK(cublasSetStream(handle(), stream));
  CUBLAS_CHECK(cublasGemmEx(handle(), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K,
                            &alpha, B, input, std::max(1, trans_b ? K : N), A, input, std::max(1, trans_a ? M : K),
                            &beta, C, CUDA_R_32F, N, compute, CUBLAS_GEMM_DEFAULT));
}

}  // namespace

void cublas_gemm_tf32(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, const float* B,
                      float beta, float* C, cudaStream_t stream) {
  gemm_ex(trans_a, trans_b, M, N, K, alpha, A, B, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, beta, C, stream);
}

void cublas_gemm_bf16(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const __nv_bfloat16* A,
                      const __nv_bfloat16* B, float beta, float* C, cudaStream_t stream) {
  gemm_ex(trans_a, trans_b, M, N, K, alpha, A, B, CUDA_R_16BF, CUBLAS_COMPUTE_32F, beta, C, stream);
}

}  // namespace course
