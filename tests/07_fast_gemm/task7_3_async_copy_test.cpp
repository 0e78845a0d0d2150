// Task 7.3: kernel 9 (cp.async, two buffers) against the exact product on the CPU, at every
// shape class and layout (fast_gemm_check.hpp states the bound).
#include <gtest/gtest.h>

#include "07_fast_gemm/autotune.hpp"
#include "fast_gemm_check.hpp"

using namespace course;
using namespace course::s07test;

// Misaligned rows take the single-float loads.
COURSE_GEMM_KERNEL_TESTS(Task7_3_AsyncCopy, kGemmAsyncCopy, SKIP_WITHOUT_FEATURE(CpAsync, "kernel 9"))

// Kernel 10 may choose any instance of kernel 9's template: each one is checked the same way.
TEST(Task7_3_AsyncCopy, EveryTileSizeTheTunerMayChoose) {
  SKIP_WITHOUT_FEATURE(CpAsync, "kernel 9");
  for (const GemmCandidate& candidate : async_copy_candidates()) {
    std::vector<Case> cases = shape_classes();
    for (const Case& c : misaligned_cases()) cases.push_back(c);
    expect_products_right("kernel 9 at " + candidate.sizes.str(), Precision::FP32, cases,
                          [&](const Case& c, const float* A, const float* B, float* C) {
                            if (c.M == 0 || c.N == 0) return;
                            const GemmProblem p{c.trans_a, c.trans_b, c.M, c.N, c.K, c.alpha, c.beta, A, B, C};
                            candidate.launch(p, 0);
                          });
  }
}
