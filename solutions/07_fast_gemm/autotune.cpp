/// @file autotune.cpp
/// @brief Stage 07, kernel 10 (Task 7.4): the tuner that picks kernel 9's tile sizes per shape (autotune.hpp says how).
#include "07_fast_gemm/autotune.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "04_cuda_matmul/gemm.hpp"
#include "07_fast_gemm/fast_gemm_kernels.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

int TileSizes::register_cap() const {
  // 65536 registers per SM shared by min_blocks blocks, allocated per warp in units of 8; 255 at most.
  const int per_thread = threads > 0 && min_blocks > 0 ? 65536 / (threads * min_blocks) : 255;
  return std::min(255, per_thread / 8 * 8);
}

std::string TileSizes::str() const {
  char text[128];
  std::snprintf(text, sizeof text, "%dx%dx%d (warps %dx%d, %d threads, <= %d registers)", bm, bn, bk, wm, wn, threads,
                register_cap());
  return text;
}

std::string TuneKey::str() const {
  std::ostringstream o;
  o << "C[" << M << " x " << N << "] = " << (trans_a ? "A^T" : "A") << "[" << M << " x " << K << "] "
    << (trans_b ? "B^T" : "B") << "[" << K << " x " << N << "]";
  if (k_slice > 0) o << " in slices of " << k_slice;
  o << " (float4 loads: A " << (vec_a ? "yes" : "no") << ", B " << (vec_b ? "yes" : "no") << ")";
  return o.str();
}

TuneKey tune_key(const GemmProblem& p) {
  return {p.trans_a, p.trans_b, p.M, p.N, p.K, p.k_slice, float4_chunks_a(p), float4_chunks_b(p)};
}

namespace {

/// A CUDA event pair, destroyed with its scope.
struct EventPair {
  cudaEvent_t start = nullptr, stop = nullptr;
  EventPair() {
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
  }
  ~EventPair() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
};

/// Median milliseconds of `launch(q)` on `stream`: runs timed one by one with events, as many
/// as fit in about 2 ms (3 to 25), after the run the caller already made as a warm-up.
double median_ms(void (*launch)(const GemmProblem&, cudaStream_t), const GemmProblem& q, cudaStream_t stream) {
  EventPair e;
  std::vector<double> runs;
  double total = 0;
  while (runs.size() < 3 || (total < 2.0 && runs.size() < 25)) {
    CUDA_CHECK(cudaEventRecord(e.start, stream));
    launch(q, stream);
    CUDA_CHECK(cudaEventRecord(e.stop, stream));
    CUDA_CHECK(cudaEventSynchronize(e.stop));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, e.start, e.stop));
    runs.push_back(ms);
    total += ms;
  }
  std::sort(runs.begin(), runs.end());
  return runs[runs.size() / 2];
}

/// Why `got` is not `want` within FP32 rounding of sums of K products, or "" when it is.
/// The bound: ||got - want|| / ||want|| <= 1e-6 + 8 u sqrt(K), u = 2^-24: both sides add
/// the same K rounded products in different orders, and such rounding errors grow like
/// sqrt(K) (a random walk); a wrong tile gives errors of order 1.
std::string mismatch(const std::vector<float>& got, const std::vector<float>& want, int K) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i])) return "element " + std::to_string(i) + " is " + std::to_string(got[i]);
    const double d = static_cast<double>(got[i]) - want[i];
    diff += d * d;
    norm += static_cast<double>(want[i]) * want[i];
  }
  const double rel = std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
  const double tol = 1e-6 + 8.0 * std::ldexp(1.0, -24) * std::sqrt(std::max(K, 1));
  if (rel <= tol) return "";
  char text[96];
  std::snprintf(text, sizeof text, "relative error %.3g > %.3g", rel, tol);
  return text;
}

}  // namespace

Autotuner::Autotuner(std::vector<GemmCandidate> candidates, std::ostream* report)
    : candidates_(std::move(candidates)), report_(report) {
  if (candidates_.empty()) throw std::invalid_argument("Autotuner: no candidates");
}

const TuneResult& Autotuner::choose(const GemmProblem& p, cudaStream_t stream) {
  const TuneKey key = tune_key(p);
  const auto found = choices_.find(key);
  if (found != choices_.end()) return found->second;
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(stream, &capturing));
  if (capturing != cudaStreamCaptureStatusNone)
    throw std::logic_error("kernel 10 tunes " + key.str() +
                           " on first use, which waits for the GPU and cannot be captured into a CUDA graph: "
                           "run that product once before the capture");
  TuneResult r = tune(p, key, stream);
  if (report_) {
    *report_ << "autotune: " << key.str() << ": " << candidates_[static_cast<std::size_t>(r.choice)].sizes.str()
             << ", " << r.ms * 1e3 << " us";
    if (!r.rejected.empty()) *report_ << " (" << r.rejected.size() << " rejected: " << r.rejected.front() << ")";
    *report_ << "\n";
  }
  return choices_.emplace(key, std::move(r)).first->second;
}

TuneResult Autotuner::tune(const GemmProblem& p, const TuneKey& key, cudaStream_t stream) {
  const std::size_t slices = p.k_slice > 0 ? static_cast<std::size_t>((p.K + p.k_slice - 1) / p.k_slice) : 1;
  const std::size_t outputs = slices * static_cast<std::size_t>(p.M) * static_cast<std::size_t>(p.N);
  DeviceBuffer<float> reference(outputs), scratch(outputs);
  // The reference: cuBLAS, or for split-K slices stage 04's kernel 6 (tested against cuBLAS).
  if (p.k_slice > 0)
    gemm_k_slices(kGemmRegisterTiled, p.trans_a, p.trans_b, p.M, p.N, p.K, p.k_slice, p.A, p.B, reference.get(),
                  stream);
  else
    gemm(kGemmCublas, p.trans_a, p.trans_b, p.M, p.N, p.K, 1.f, p.A, p.B, 0.f, reference.get(), stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const std::vector<float> want = reference.download();
  const int k_per_product = p.k_slice > 0 ? std::min(p.K, p.k_slice) : p.K;

  TuneResult r;
  // BEGIN Task 7.4: run every candidate on q (p into the scratch buffer, alpha 1, beta 0), reject the ones that fail or differ from `want` (mismatch), time the others (median_ms) and choose the fastest; throw GpuError if none is right
  // HINT: fill the scratch with NaN first (cudaMemsetAsync with 0xFF bytes) so that an output a candidate never writes shows; a launch that throws GpuError is rejected with its message.
  GemmProblem q = p;
  q.C = scratch.get();
  q.alpha = 1.f;
  q.beta = 0.f;
  r.candidate_ms.assign(candidates_.size(), std::numeric_limits<double>::quiet_NaN());
  for (std::size_t i = 0; i < candidates_.size(); ++i) {
    const GemmCandidate& c = candidates_[i];
    try {
      CUDA_CHECK(cudaMemsetAsync(scratch.get(), 0xFF, outputs * sizeof(float), stream));  // all NaN
      c.launch(q, stream);
      CUDA_CHECK(cudaStreamSynchronize(stream));
      const std::string wrong = mismatch(scratch.download(), want, k_per_product);
      if (!wrong.empty()) {
        r.rejected.push_back(c.sizes.str() + ": " + wrong);
        continue;
      }
      r.candidate_ms[i] = median_ms(c.launch, q, stream);
    } catch (const GpuError& e) {
      cudaGetLastError();  // a refused launch (too many resources, say) leaves an error behind
      r.rejected.push_back(c.sizes.str() + ": " + e.what());
      continue;
    }
    if (r.choice < 0 || r.candidate_ms[i] < r.ms) {
      r.choice = static_cast<int>(i);
      r.ms = r.candidate_ms[i];
    }
  }
  if (r.choice < 0)
    throw GpuError("autotune: no candidate computes " + key.str() + " correctly; first: " +
                   (r.rejected.empty() ? std::string("none tried") : r.rejected.front()));
  // END Task 7.4
  return r;
}

Autotuner& kernel10_autotuner() {
  static Autotuner tuner(async_copy_candidates(), &std::cout);
  return tuner;
}

void matmul_autotuned(const GemmProblem& p, cudaStream_t stream) {
  Autotuner& tuner = kernel10_autotuner();
  const TuneResult& r = tuner.choose(p, stream);
  tuner.candidates()[static_cast<std::size_t>(r.choice)].launch(p, stream);
}

}  // namespace course
