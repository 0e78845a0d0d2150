/// @file split_k.cu
/// @brief Stage 05: split-K in one launch plus a fixed-order sum (glue, not a task; the idea is in split_k.hpp).
#include <algorithm>
#include <stdexcept>
#include <string>

#include "04_cuda_matmul/gemm.hpp"
#include "04_cuda_matmul/mlp_kernels.hpp"
#include "05_im2col_gemm/split_k.hpp"
#include "common/gpu/cuda_check.hpp"

namespace course {

namespace {
constexpr int kWarp = 32;
constexpr int kSumThreads = 256;  // 8 outputs per block
}  // namespace

/// C[i] = partials[0][i] + partials[1][i] + ... for the n = M*N elements of C, one warp per i:
/// lane l adds chunks l, l + 32, l + 64, ... in that order, then the 32 lane sums are added
/// pairwise in a fixed tree. Fixed order: the same bits on every run. (One thread per i would
/// leave conv1's 144 outputs to 144 threads, each waiting on ~200 loads one after another.)
__global__ void __launch_bounds__(kSumThreads) sum_partials_kernel(const float* __restrict__ partials, int chunks,
                                                                  long n, float* __restrict__ C) {
  const long i = (static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (i >= n) return;  // the whole warp leaves together: n is per warp
  float sum = 0.f;
  for (int s = lane; s < chunks; s += kWarp) sum += partials[s * n + i];
  for (int offset = kWarp / 2; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  if (lane == 0) C[i] = sum;
}

int split_k_chunks(int gemm_kernel, long K, int max_chunks) {
  if (!gemm_has_k_slices(gemm_kernel) || max_chunks <= 1 || K <= kSplitKRows) return 1;
  const long wanted = (K + kSplitKRows - 1) / kSplitKRows;
  return static_cast<int>(std::min<long>(wanted, max_chunks));
}

SplitKGemm::SplitKGemm(int max_chunks) : max_chunks_(max_chunks) {
  if (max_chunks < 1)
    throw std::invalid_argument("SplitKGemm: max_chunks must be at least 1, got " + std::to_string(max_chunks));
}

void SplitKGemm::run(int gemm_kernel, int M, int N, int K, const float* A, const float* B, float* C, int chunks,
                     float* partials, cudaStream_t stream) {
  if (chunks < 1 || chunks > max_chunks())
    throw std::invalid_argument("SplitKGemm::run: chunks must be in [1, " + std::to_string(max_chunks()) + "], got " +
                                std::to_string(chunks));
  if (M < 0 || N < 0 || K < 0)
    throw std::invalid_argument("SplitKGemm::run: sizes must not be negative, got M=" + std::to_string(M) +
                                " N=" + std::to_string(N) + " K=" + std::to_string(K));
  // Chunks of `rows` rows; rounding up can leave the last ones empty, so recount them.
  const int rows = K > 0 ? (K + chunks - 1) / chunks : 0;
  if (rows > 0) chunks = (K + rows - 1) / rows;
  if (chunks <= 1 || rows == 0 || M == 0 || N == 0) {
    gemm(gemm_kernel, /*trans_a=*/true, /*trans_b=*/false, M, N, K, 1.f, A, B, 0.f, C, stream);
    return;
  }
  if (partials == nullptr) throw std::invalid_argument("SplitKGemm::run: partials is null but chunks > 1");
  if (A == nullptr || B == nullptr || C == nullptr)
    throw std::invalid_argument("SplitKGemm::run: A, B and C must not be null");
  const long mn = static_cast<long>(M) * N;
  if (gemm_has_k_slices(gemm_kernel)) {
    gemm_k_slices(gemm_kernel, /*trans_a=*/true, /*trans_b=*/false, M, N, K, rows, A, B, partials, stream);
  } else {
    // In the K-major layout chunk s is a contiguous block of rows of A and of B.
    for (int s = 0; s < chunks; ++s) {
      const long k0 = static_cast<long>(s) * rows;
      const int ks = static_cast<int>(std::min<long>(rows, K - k0));
      gemm(gemm_kernel, /*trans_a=*/true, /*trans_b=*/false, M, N, ks, 1.f, A + k0 * M, B + k0 * N, 0.f,
           partials + s * mn, stream);
    }
  }
  const long threads = mn * kWarp;
  sum_partials_kernel<<<static_cast<unsigned>((threads + kSumThreads - 1) / kSumThreads), kSumThreads, 0, stream>>>(
      partials, chunks, mn, C);
  CUDA_CHECK_LAUNCH();
}

}  // namespace course
