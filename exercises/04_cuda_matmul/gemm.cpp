/// @file gemm.cpp
/// @brief Stage 04: course::gemm() checks its arguments and dispatches to a kernel (glue, not a task).
#include "04_cuda_matmul/gemm.hpp"

#include <iterator>
#include <stdexcept>
#include <string>

#include "04_cuda_matmul/matmul_kernels.hpp"

namespace course {

namespace {

const char* const kKernelNames[kNumGemmKernels] = {"cuBLAS",   "single block", "grid",          "coalesced",
                                                   "tiled 16", "tiled 32",     "register tiles"};

void check_kernel_number(int kernel) {
  if (kernel < 0 || kernel >= kNumGemmKernels)
    throw std::invalid_argument("gemm kernel " + std::to_string(kernel) +
                                " does not exist: kernels are 0 (cuBLAS) to " + std::to_string(kNumGemmKernels - 1));
}

}  // namespace

std::string gemm_kernel_name(int kernel) {
  check_kernel_number(kernel);
  return kKernelNames[kernel];
}

std::vector<std::string> gemm_kernel_names() { return {std::begin(kKernelNames), std::end(kKernelNames)}; }

void gemm(int kernel, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, const float* B,
          float beta, float* C, cudaStream_t stream) {
  check_kernel_number(kernel);
  if (M < 0 || N < 0 || K < 0)
    throw std::invalid_argument("gemm: sizes must not be negative, got M=" + std::to_string(M) +
                                " N=" + std::to_string(N) + " K=" + std::to_string(K));
  if (M == 0 || N == 0) return;  // C is empty: nothing to compute
  if (C == nullptr)
    throw std::invalid_argument("gemm: C is null but holds " + std::to_string(M) + " x " + std::to_string(N) +
                                " values");
  if (K > 0 && (A == nullptr || B == nullptr))
    throw std::invalid_argument(std::string("gemm: ") + (A == nullptr ? "A" : "B") +
                                " is null but K = " + std::to_string(K));
  const GemmProblem p{trans_a, trans_b, M, N, K, alpha, beta, A, B, C};
  switch (kernel) {
    case kGemmCublas:
      matmul_cublas(p, stream);
      break;
    case kGemmSingleBlock:
      matmul_single_block(p, stream);
      break;
    case kGemmGrid:
      matmul_grid(p, stream);
      break;
    case kGemmCoalesced:
      matmul_coalesced(p, stream);
      break;
    case kGemmTiled16:
      matmul_tiled_16(p, stream);
      break;
    case kGemmTiled32:
      matmul_tiled_32(p, stream);
      break;
    case kGemmRegisterTiled:
      matmul_register_tiled(p, stream);
      break;
  }
}

void gemm_k_slices(bool trans_a, bool trans_b, int M, int N, int K, int k_slice, const float* A, const float* B,
                   float* partials, cudaStream_t stream) {
  if (k_slice < 1) throw std::invalid_argument("gemm_k_slices: k_slice must be at least 1, got " + std::to_string(k_slice));
  if (M < 0 || N < 0 || K < 0)
    throw std::invalid_argument("gemm_k_slices: sizes must not be negative, got M=" + std::to_string(M) +
                                " N=" + std::to_string(N) + " K=" + std::to_string(K));
  if (M == 0 || N == 0 || K == 0) return;  // no slices
  if (A == nullptr || B == nullptr || partials == nullptr)
    throw std::invalid_argument(std::string("gemm_k_slices: ") + (A == nullptr ? "A" : B == nullptr ? "B" : "partials") +
                                " is null");
  const GemmProblem p{trans_a, trans_b, M, N, K, 1.f, 0.f, A, B, partials, k_slice};
  matmul_register_tiled(p, stream);
}

}  // namespace course
