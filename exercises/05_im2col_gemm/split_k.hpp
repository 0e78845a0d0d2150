/// @file split_k.hpp
/// @brief Stage 05: a product with a long inner dimension and a small result, split into chunks that run side by side.
///
///     C [M, N] = A^T B        A stored [K, M], B stored [K, N] (row-major), K much larger than M and N
///
/// The weight gradient of a conv layer is such a product (conv_gpu.hpp): it
/// sums over every output pixel of the batch, K = B*Ho*Wo = 64*28*28 = 50176
/// for conv1 of `cnn`, into a result of C_out x C_in*K*K = 16 x 9 values.
/// Stage 04's GEMM kernels give each block of threads one tile of C (64 x 64
/// for kernel 6), so this product gets ONE block, on one of the H100's 132
/// multiprocessors, and that block walks all 50176 rows alone while the rest
/// of the GPU idles.
///
/// Split-K cuts the K rows into S chunks. In the K-major layout each chunk is
/// a contiguous block of rows of A and of B, so each chunk's partial product
/// C_s = A_s^T B_s is an ordinary gemm() call. The S calls go to S CUDA streams,
/// so the GPU runs them at the same time on S multiprocessors; then one kernel
/// adds the S partials, in a fixed order (the same bits on every run):
///
///     stream     : --record "ready"--gemm(chunk 0)--wait done 1..S-1--sum partials-->
///     side s     :         \--wait ready--gemm(chunk s)--record done s--/
///
/// Each chunk costs a launch and two event operations on the host (a few
/// microseconds), so chunks hold at least kSplitKRows rows. cuBLAS makes the
/// same split inside one call when it sees this shape, so with cuBLAS the
/// product is left whole (split_k_chunks returns 1).
#pragma once

#include <vector>

#include <cuda_runtime.h>

namespace course {

/// The fewest rows of K a chunk gets: below this a chunk's launch costs more than its work.
constexpr int kSplitKRows = 1024;
/// The most chunks by default (the trainer's --split-k).
constexpr int kDefaultSplitK = 32;

/// How many chunks to split a sum of K terms into: 1 for cuBLAS (gemm kernel 0) or when
/// max_chunks <= 1, else ceil(K / kSplitKRows) capped at max_chunks.
int split_k_chunks(int gemm_kernel, long K, int max_chunks);

/// Runs C = A^T B in chunks on side streams (see the file comment). Owns its streams and events.
class SplitKGemm {
 public:
  /// Creates max_chunks - 1 side streams (chunk 0 runs on the caller's stream) and their events.
  /// Throws std::invalid_argument when max_chunks < 1, course::GpuError when CUDA fails.
  explicit SplitKGemm(int max_chunks = kDefaultSplitK);
  ~SplitKGemm();
  SplitKGemm(const SplitKGemm&) = delete;
  SplitKGemm& operator=(const SplitKGemm&) = delete;

  int max_chunks() const { return static_cast<int>(side_.size()) + 1; }

  /// C [M, N] = A^T B with A stored [K, M] and B stored [K, N], as `chunks` partial
  /// products (gemm kernel `gemm_kernel`, stage 04) added by one kernel. `partials`
  /// holds chunks * M * N floats (unused, may be null, when chunks is 1: then C is
  /// computed by one gemm() call). C is overwritten.
  ///
  /// Asynchronous like a kernel launch: the chunks start after the work queued
  /// on `stream` so far, and the work queued on `stream` afterwards starts after
  /// the sum. Throws std::invalid_argument when chunks is not in [1, max_chunks()],
  /// a size is negative or a pointer is null.
  void run(int gemm_kernel, int M, int N, int K, const float* A, const float* B, float* C, int chunks,
           float* partials, cudaStream_t stream = 0);

 private:
  std::vector<cudaStream_t> side_;  ///< side_[s - 1] runs chunk s
  std::vector<cudaEvent_t> done_;   ///< done_[s - 1]: chunk s has finished
  cudaEvent_t ready_ = nullptr;     ///< the inputs are ready (recorded on the caller's stream)
};

}  // namespace course
