// Task 7.4: the autotuner. It must return only candidates that compute the product
// correctly, however fast a wrong one is; remember its choice per shape; refuse to tune
// inside a CUDA graph capture; and kernel 10 (its choices) must pass the same product
// checks as every kernel.
#include <gtest/gtest.h>

#include <sstream>
#include <stdexcept>

#include "07_fast_gemm/autotune.hpp"
#include "fast_gemm_check.hpp"

using namespace course;
using namespace course::s07test;

namespace {

int g_counted_launches = 0;

// Planted candidates. Zeros: the fastest possible "GEMM", and wrong. Short: skips the
// last k of every sum (an off-by-one at the tile edge), wrong by one term in every element.
// Refused: a launch that fails the way a configuration with too many resources does.
void write_zeros(const GemmProblem& p, cudaStream_t stream) {
  const std::size_t slices = p.k_slice > 0 ? static_cast<std::size_t>((p.K + p.k_slice - 1) / p.k_slice) : 1;
  CUDA_CHECK(cudaMemsetAsync(p.C, 0, slices * p.M * p.N * sizeof(float), stream));
}
void skip_last_k(const GemmProblem& p, cudaStream_t stream) {
  GemmProblem q = p;
  q.K = p.K - 1;
  gemm(kGemmCublas, q.trans_a, q.trans_b, q.M, q.N, q.K, q.alpha, q.A, q.B, q.beta, q.C, stream);
}
void refuse(const GemmProblem&, cudaStream_t) {
  throw GpuError("matmul launch failed at test:1: too many resources requested for launch");
}
void counted_kernel9(const GemmProblem& p, cudaStream_t stream) {
  ++g_counted_launches;
  async_copy_candidates().front().launch(p, stream);
}

std::vector<GemmCandidate> planted_and(const std::vector<GemmCandidate>& good) {
  std::vector<GemmCandidate> all = {{{1, 1, 1, 1, 1, 1}, &write_zeros},
                                    {{2, 2, 2, 2, 2, 2}, &skip_last_k},
                                    {{3, 3, 3, 3, 3, 3}, &refuse}};
  all.insert(all.end(), good.begin(), good.end());
  return all;
}

}  // namespace

TEST(Task7_4_Autotune, NeverChoosesAWrongCandidateHoweverFast) {
  SKIP_WITHOUT_FEATURE(CpAsync, "kernel 10");
  std::ostringstream report;
  Autotuner tuner(planted_and(async_copy_candidates()), &report);
  for (const Case& c : {Case{256, 256, 256}, Case{64, 784, 256, true, false}, Case{1000, 10, 128, false, true}}) {
    const std::vector<float> a = random_floats(static_cast<std::size_t>(c.M) * c.K, 3);
    const std::vector<float> b = random_floats(static_cast<std::size_t>(c.K) * c.N, 4);
    DeviceBuffer<float> A, B, C(static_cast<std::size_t>(c.M) * c.N);
    A.upload(a), B.upload(b);
    const GemmProblem p{c.trans_a, c.trans_b, c.M, c.N, c.K, 1.f, 0.f, A.get(), B.get(), C.get()};
    const TuneResult& r = tuner.choose(p, 0);
    std::string rejected;  // what the tuner rejected, for the messages
    for (const std::string& why : r.rejected) rejected += "\n    " + why;
    EXPECT_GE(r.choice, 3) << c.str() << ": chose planted candidate " << r.choice
                           << " (0 writes zeros, 1 skips the last k, 2 fails to launch); rejected:" << rejected;
    EXPECT_EQ(r.rejected.size(), 3u) << c.str()
                                     << ": the three planted candidates must be rejected; rejected:" << rejected;
    for (int planted = 0; planted < 3; ++planted)
      EXPECT_TRUE(std::isnan(r.candidate_ms[static_cast<std::size_t>(planted)]))
          << c.str() << ": planted " << planted << " was timed (" << r.candidate_ms[static_cast<std::size_t>(planted)]
          << " ms), so it was not rejected";
    EXPECT_GT(r.ms, 0) << c.str() << ": the chosen candidate's median time in ms";
  }
  EXPECT_NE(report.str().find("rejected"), std::string::npos) << "the report says what was rejected:\n" << report.str();
}

TEST(Task7_4_Autotune, NoCorrectCandidateIsAnError) {
  SKIP_WITHOUT_FEATURE(CpAsync, "kernel 10");
  Autotuner tuner(planted_and({}));
  DeviceBuffer<float> A(64 * 64), B(64 * 64), C(64 * 64);
  CUDA_CHECK(cudaMemset(A.get(), 0x3F, 64 * 64 * sizeof(float)));  // 0.75 everywhere: a product that is not zero
  CUDA_CHECK(cudaMemset(B.get(), 0x3F, 64 * 64 * sizeof(float)));
  const GemmProblem p{false, false, 64, 64, 64, 1.f, 0.f, A.get(), B.get(), C.get()};
  EXPECT_THROW(tuner.choose(p, 0), GpuError);
}

TEST(Task7_4_Autotune, TunesEachShapeOnceAndRemembers) {
  SKIP_WITHOUT_FEATURE(CpAsync, "kernel 10");
  Autotuner tuner({{{128, 128, 8, 32, 64, 256}, &counted_kernel9}});
  DeviceBuffer<float> A(100 * 300), B(300 * 50), C(100 * 50);
  CUDA_CHECK(cudaMemset(A.get(), 0, A.size() * sizeof(float)));
  CUDA_CHECK(cudaMemset(B.get(), 0, B.size() * sizeof(float)));
  GemmProblem p{false, false, 100, 50, 300, 1.f, 0.f, A.get(), B.get(), C.get()};
  g_counted_launches = 0;
  tuner.choose(p, 0);
  const int tuning = g_counted_launches;
  EXPECT_GE(tuning, 4) << "one checked run and at least three timed ones";
  tuner.choose(p, 0);
  EXPECT_EQ(g_counted_launches, tuning) << "the same shape again: no tuning";
  p.K = 299;
  tuner.choose(p, 0);
  EXPECT_GT(g_counted_launches, tuning) << "another K is another shape";
  EXPECT_EQ(tuner.choices().size(), 2u) << "shapes the tuner remembers a choice for: K = 300 and K = 299";
}

// The capture check is the tuner's glue, not Task 7.4's core: it holds on the exercise track too.
TEST(Stage07_Autotune, RefusesToTuneInsideAGraphCapture) {
  SKIP_WITHOUT_FEATURE(CpAsync, "kernel 10");
  Autotuner tuner(async_copy_candidates());
  DeviceBuffer<float> A(64 * 64), B(64 * 64), C(64 * 64);
  const GemmProblem p{false, false, 64, 64, 64, 1.f, 0.f, A.get(), B.get(), C.get()};
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  EXPECT_THROW(tuner.choose(p, stream), std::logic_error);
  cudaGraph_t graph = nullptr;
  CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  if (graph) cudaGraphDestroy(graph);
  CUDA_CHECK(cudaStreamDestroy(stream));
}

TEST(Task7_4_Autotune, Kernel10EveryShapeClassAndLayout) {
  SKIP_WITHOUT_FEATURE(CpAsync, "kernel 10");
  kernel10_autotuner().set_report(nullptr);
  expect_kernel_right(kGemmAutotuned, shape_classes());
  expect_kernel_right(kGemmAutotuned, misaligned_cases());
  expect_kernel_right(kGemmAutotuned, large_cases(), /*every_layout=*/false);
  expect_k_slices_right(kGemmAutotuned);
}

// Each candidate's launcher runs an instance whose copies check nothing where every tile of
// the product is full (full_tiles(), tested in full_tiles_test.cpp), and the checked instance
// elsewhere. Both are run here: products of full tiles only, and neighbours that miss by
// four in M, N or K (one partial tile), in every layout and with split-K slices of either kind.
TEST(Task7_4_Autotune, FullTileInstancesAndTheirNeighbours) {
  SKIP_WITHOUT_FEATURE(CpAsync, "kernel 10");
  for (const GemmCandidate& candidate : async_copy_candidates()) {
    const TileSizes& t = candidate.sizes;
    const std::string what = "kernel 10's launcher at " + t.str();
    const int m = 2 * t.bm, n = 2 * t.bn, k = 4 * t.bk;
    expect_products_right(what, Precision::FP32, {Case{m, n, k}, Case{m - 4, n, k}, Case{m, n + 4, k}, Case{m, n, k + 4}},
                          [&](const Case& c, const float* A, const float* B, float* C) {
                            const GemmProblem p{c.trans_a, c.trans_b, c.M, c.N, c.K, c.alpha, c.beta, A, B, C};
                            candidate.launch(p, 0);
                          });
    expect_slices_right(what, Precision::FP32, {Case{t.bm, t.bn, 8 * t.bk}}, {2 * t.bk, 2 * t.bk + 4},
                        [&](const Case& c, int k_slice, const float* A, const float* B, float* P) {
                          GemmProblem p{c.trans_a, c.trans_b, c.M, c.N, c.K, 1.f, 0.f, A, B, P};
                          p.k_slice = k_slice;
                          candidate.launch(p, 0);
                        });
  }
}
