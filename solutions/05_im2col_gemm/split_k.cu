/// @file split_k.cu
/// @brief Stage 05: split-K on side streams (glue, not a task; the idea is in split_k.hpp).
#include <algorithm>
#include <stdexcept>
#include <string>

#include "04_cuda_matmul/gemm.hpp"
#include "04_cuda_matmul/mlp_kernels.hpp"
#include "05_im2col_gemm/split_k.hpp"
#include "common/cuda_check.hpp"

namespace course {

/// C[i] = partials[0][i] + partials[1][i] + ... in that order, for the n = M*N elements of C.
__global__ void sum_partials_kernel(const float* __restrict__ partials, int chunks, long n, float* __restrict__ C) {
  const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float sum = 0.f;
  for (int s = 0; s < chunks; ++s) sum += partials[s * n + i];
  C[i] = sum;
}

int split_k_chunks(int gemm_kernel, long K, int max_chunks) {
  if (gemm_kernel == kGemmCublas || max_chunks <= 1 || K <= kSplitKRows) return 1;
  const long wanted = (K + kSplitKRows - 1) / kSplitKRows;
  return static_cast<int>(std::min<long>(wanted, max_chunks));
}

SplitKGemm::SplitKGemm(int max_chunks) {
  if (max_chunks < 1)
    throw std::invalid_argument("SplitKGemm: max_chunks must be at least 1, got " + std::to_string(max_chunks));
  CUDA_CHECK(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
  for (int s = 1; s < max_chunks; ++s) {
    // Non-blocking: these streams never wait for the legacy default stream
    // implicitly; the events below say exactly what waits for what.
    cudaStream_t st = nullptr;
    CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    side_.push_back(st);
    cudaEvent_t e = nullptr;
    CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    done_.push_back(e);
  }
}

SplitKGemm::~SplitKGemm() {
  for (cudaStream_t s : side_) cudaStreamDestroy(s);
  for (cudaEvent_t e : done_) cudaEventDestroy(e);
  if (ready_) cudaEventDestroy(ready_);
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
  if (chunks <= 1 || rows == 0) {
    gemm(gemm_kernel, /*trans_a=*/true, /*trans_b=*/false, M, N, K, 1.f, A, B, 0.f, C, stream);
    return;
  }
  if (partials == nullptr) throw std::invalid_argument("SplitKGemm::run: partials is null but chunks > 1");
  if (A == nullptr || B == nullptr || C == nullptr)
    throw std::invalid_argument("SplitKGemm::run: A, B and C must not be null");
  const long mn = static_cast<long>(M) * N;
  auto chunk = [&](int s, cudaStream_t on) {
    const long k0 = static_cast<long>(s) * rows;
    const int ks = static_cast<int>(std::min<long>(rows, K - k0));
    gemm(gemm_kernel, /*trans_a=*/true, /*trans_b=*/false, M, N, ks, 1.f, A + k0 * M, B + k0 * N, 0.f,
         partials + s * mn, on);
  };
  CUDA_CHECK(cudaEventRecord(ready_, stream));
  for (int s = 1; s < chunks; ++s) {
    cudaStream_t side = side_[static_cast<std::size_t>(s - 1)];
    CUDA_CHECK(cudaStreamWaitEvent(side, ready_, 0));
    chunk(s, side);
    CUDA_CHECK(cudaEventRecord(done_[static_cast<std::size_t>(s - 1)], side));
  }
  chunk(0, stream);
  for (int s = 1; s < chunks; ++s) CUDA_CHECK(cudaStreamWaitEvent(stream, done_[static_cast<std::size_t>(s - 1)], 0));
  sum_partials_kernel<<<blocks_for(mn), kElementwiseThreads, 0, stream>>>(partials, chunks, mn, C);
  CUDA_CHECK_LAUNCH();
}

}  // namespace course
