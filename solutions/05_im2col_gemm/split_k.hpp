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
/// Split-K cuts the K rows into S slices and computes the S partial products
/// C_s = A_s^T B_s at the same time, then adds them. Kernel 6 does the first
/// part in ONE launch (stage 04's gemm_k_slices(): the blocks of grid layer z
/// sweep slice z only and write partial z), so S slices cost no more host work
/// than one GEMM; a second kernel adds the S partials of each output in a fixed
/// order (the same bits on every run):
///
///     gemm_k_slices: S x (tiles of C) blocks --> partials [S, M, N] --> sum_partials --> C
///
/// A slice holds at least kSplitKRows rows: with fewer, a block spends more on
/// starting up and writing its partial than on its products. cuBLAS makes the
/// same split inside one call when it sees this shape. Kernels 1 to 5 have no
/// one-launch split, so for them the product is left whole (split_k_chunks
/// returns 1); kernel 6 and any added kernel that honours k_slice have one
/// (gemm_has_k_slices()).
#pragma once

#include <cuda_runtime.h>

namespace course {

/// The fewest rows of K a slice (chunk) gets: 16 steps of kernel 6's 16-deep tile.
constexpr int kSplitKRows = 256;
/// The most chunks by default (the trainer's --split-k).
constexpr int kDefaultSplitK = 256;

/// How many chunks to split a sum of K terms into: 1 unless the kernel has a one-launch
/// split (gemm_has_k_slices(): kernel 6, and added kernels that honour k_slice), max_chunks > 1 and K > kSplitKRows;
/// then ceil(K / kSplitKRows) capped at max_chunks.
int split_k_chunks(int gemm_kernel, long K, int max_chunks);

/// Runs C = A^T B in chunks (see the file comment).
class SplitKGemm {
 public:
  /// Throws std::invalid_argument when max_chunks < 1.
  explicit SplitKGemm(int max_chunks = kDefaultSplitK);

  int max_chunks() const { return max_chunks_; }

  /// C [M, N] = A^T B with A stored [K, M] and B stored [K, N], as `chunks` partial
  /// products added by one kernel. `partials` holds chunks * M * N floats (unused, may
  /// be null, when chunks is 1: then C is computed by one gemm() call). C is overwritten.
  /// A kernel with a one-launch split (gemm_has_k_slices()) computes the partials in one launch (gemm_k_slices); any other kernel
  /// computes them one gemm() call after another (correct, but not faster).
  ///
  /// Asynchronous like a kernel launch, on `stream`. Throws std::invalid_argument when
  /// chunks is not in [1, max_chunks()], a size is negative or a pointer is null.
  void run(int gemm_kernel, int M, int N, int K, const float* A, const float* B, float* C, int chunks,
           float* partials, cudaStream_t stream = 0);

 private:
  int max_chunks_;
};

}  // namespace course
