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

/// The kernels later stages added, numbered kNumGemmKernels, kNumGemmKernels + 1, ...
std::vector<GemmKernelEntry>& added_kernels() {
  static std::vector<GemmKernelEntry> added;
  return added;
}

void check_kernel_number(int kernel) {
  if (kernel < 0 || kernel >= gemm_kernel_count())
    throw std::invalid_argument("gemm kernel " + std::to_string(kernel) + " does not exist: kernels are 0 (cuBLAS) to " +
                                std::to_string(gemm_kernel_count() - 1) +
                                (gemm_kernel_count() == kNumGemmKernels ? " (7 and on: faster kernels that later trainers add)" : ""));
}

/// Throws std::invalid_argument, naming `who`, when a size is negative.
void check_sizes(const char* who, int M, int N, int K) {
  if (M < 0 || N < 0 || K < 0)
    throw std::invalid_argument(std::string(who) + ": sizes must not be negative, got M=" + std::to_string(M) +
                                " N=" + std::to_string(N) + " K=" + std::to_string(K));
}

}  // namespace

int gemm_kernel_count() { return kNumGemmKernels + static_cast<int>(added_kernels().size()); }

void add_gemm_kernel(int number, const GemmKernelEntry& entry) {
  if (entry.launch == nullptr) throw std::invalid_argument("add_gemm_kernel: kernel " + std::to_string(number) + " has no launcher");
  std::vector<GemmKernelEntry>& added = added_kernels();
  const int index = number - kNumGemmKernels;
  if (index >= 0 && index < static_cast<int>(added.size()) && added[static_cast<std::size_t>(index)].launch == entry.launch)
    return;  // registered before
  if (number != gemm_kernel_count())
    throw std::invalid_argument("add_gemm_kernel: kernel " + std::to_string(number) + " (" + entry.name +
                                ") is not the next free number, " + std::to_string(gemm_kernel_count()));
  added.push_back(entry);
}

bool gemm_has_k_slices(int kernel) {
  if (kernel == kGemmRegisterTiled) return true;
  const int index = kernel - kNumGemmKernels;
  return index >= 0 && index < static_cast<int>(added_kernels().size()) &&
         added_kernels()[static_cast<std::size_t>(index)].k_slices;
}

std::string gemm_kernel_name(int kernel) {
  check_kernel_number(kernel);
  return kernel < kNumGemmKernels ? kKernelNames[kernel] : added_kernels()[static_cast<std::size_t>(kernel - kNumGemmKernels)].name;
}

std::vector<std::string> gemm_kernel_names() {
  std::vector<std::string> names(std::begin(kKernelNames), std::end(kKernelNames));
  for (const GemmKernelEntry& e : added_kernels()) names.push_back(e.name);
  return names;
}

void gemm(int kernel, bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, const float* B,
          float beta, float* C, cudaStream_t stream) {
  check_kernel_number(kernel);
  check_sizes("gemm", M, N, K);
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
    default:
      added_kernels()[static_cast<std::size_t>(kernel - kNumGemmKernels)].launch(p, stream);
  }
}

void gemm_k_slices(int kernel, bool trans_a, bool trans_b, int M, int N, int K, int k_slice, const float* A,
                   const float* B, float* partials, cudaStream_t stream) {
  check_kernel_number(kernel);
  if (!gemm_has_k_slices(kernel))
    throw std::invalid_argument("gemm_k_slices: kernel " + std::to_string(kernel) + " (" + gemm_kernel_name(kernel) +
                                ") has no one-launch split-K");
  if (k_slice < 1) throw std::invalid_argument("gemm_k_slices: k_slice must be at least 1, got " + std::to_string(k_slice));
  check_sizes("gemm_k_slices", M, N, K);
  if (M == 0 || N == 0 || K == 0) return;  // no slices
  if (A == nullptr || B == nullptr || partials == nullptr)
    throw std::invalid_argument(std::string("gemm_k_slices: ") + (A == nullptr ? "A" : B == nullptr ? "B" : "partials") +
                                " is null");
  const GemmProblem p{trans_a, trans_b, M, N, K, 1.f, 0.f, A, B, partials, k_slice};
  if (kernel == kGemmRegisterTiled)
    matmul_register_tiled(p, stream);
  else
    added_kernels()[static_cast<std::size_t>(kernel - kNumGemmKernels)].launch(p, stream);
}

}  // namespace course
