/// @file autotune.hpp
/// @brief Stage 07, kernel 10 (Task 7.4): kernel 9's tile sizes chosen per shape by measurement.
///
/// No single tile size is best everywhere. 128 x 128 tiles reuse every loaded value
/// 128 times, but C[64 x 256] (the MLP's first layer at batch 64) has only two of
/// them: 2 of the H100's 132 SMs work. 32 x 64 tiles give it 16 blocks and waste
/// nothing at the edges, but at 4096 x 4096 they read twice the bytes per FMA.
/// Libraries answer with heuristics and tables measured in advance; this stage
/// answers by measuring on the spot:
///
///     the first time a shape is seen:
///       reference = cuBLAS on the same inputs (or kernel 6's split-K slices)
///       for each candidate tile size:
///         run it into a scratch C; compare with the reference -> rejected if wrong
///         time it (median of a few runs, CUDA events)
///       keep the fastest correct one for this shape, print the choice
///     every time: launch the kept choice
///
/// A shape is everything the speed or the result can depend on: M, N, K, the
/// transposes, the split-K slice and whether float4 loads are possible. The choice
/// costs one tuning per shape per process (milliseconds); a training run meets a
/// handful of shapes. Tuning waits for the GPU, so it cannot happen inside a
/// CUDA graph capture: the launcher refuses with a message saying so.
#pragma once

#include <cuda_runtime.h>

#include <map>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "04_cuda_matmul/matmul_kernels.hpp"

namespace course {

/// The sizes of one instance of kernel 9 (matmul_9_async_copy.cuh's TileShape).
struct TileSizes {
  int bm = 0, bn = 0, bk = 0, wm = 0, wn = 0, threads = 0;
  int min_blocks = 0;  ///< blocks per SM the registers are sized for (__launch_bounds__)
  /// The registers a thread may use under those bounds (ptxas may use fewer, and then more blocks fit).
  int register_cap() const;
  /// "128x128x16 (warps 32x64, 256 threads, <= 128 registers)"
  std::string str() const;
};

/// One configuration the tuner may choose.
struct GemmCandidate {
  TileSizes sizes;
  void (*launch)(const GemmProblem& p, cudaStream_t stream) = nullptr;
};

/// Kernel 9's template at every tile size kernel 10 tries (matmul_9_async_copy.cu).
const std::vector<GemmCandidate>& async_copy_candidates();

/// What the tuner keys its choices by (see the file comment).
struct TuneKey {
  bool trans_a = false, trans_b = false;
  int M = 0, N = 0, K = 0, k_slice = 0;
  bool vec_a = false, vec_b = false;
  bool operator<(const TuneKey& o) const {
    return std::tie(trans_a, trans_b, M, N, K, k_slice, vec_a, vec_b) <
           std::tie(o.trans_a, o.trans_b, o.M, o.N, o.K, o.k_slice, o.vec_a, o.vec_b);
  }
  /// "C[64 x 256] = A[64 x 784] B^T (float4 loads: A yes, B yes)"
  std::string str() const;
};

/// The outcome of tuning one shape.
struct TuneResult {
  int choice = -1;                     ///< index into the candidates
  double ms = 0;                       ///< its median time
  std::vector<double> candidate_ms;    ///< every candidate's median time (NaN: rejected)
  std::vector<std::string> rejected;   ///< "<sizes>: <why>" for each candidate that was wrong or failed
};

/// Chooses among `candidates` per shape, by running and timing them (see the file comment).
class Autotuner {
 public:
  /// `report`: where each choice is printed as it is made (nullptr: nowhere).
  explicit Autotuner(std::vector<GemmCandidate> candidates, std::ostream* report = nullptr);

  /// The fastest candidate that computes p correctly, tuned the first time p's shape is seen
  /// (waits for `stream`). p's own A and B are the inputs; its C is not touched. Throws
  /// GpuError when no candidate is correct, std::logic_error when `stream` is being captured.
  const TuneResult& choose(const GemmProblem& p, cudaStream_t stream);

  const std::vector<GemmCandidate>& candidates() const { return candidates_; }
  /// Every choice made so far.
  const std::map<TuneKey, TuneResult>& choices() const { return choices_; }
  void set_report(std::ostream* report) { report_ = report; }

 private:
  TuneResult tune(const GemmProblem& p, const TuneKey& key, cudaStream_t stream);

  std::vector<GemmCandidate> candidates_;
  std::ostream* report_;
  std::map<TuneKey, TuneResult> choices_;
};

/// The tuner behind kernel 10 (kernel 9's candidates), reporting to std::cout.
Autotuner& kernel10_autotuner();

/// The key of p (what choose() caches by).
TuneKey tune_key(const GemmProblem& p);

}  // namespace course
