// The check every matmul task shares: a kernel against cuBLAS SGEMM on the
// same fresh inputs, for every transpose combination, at awkward sizes.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "04_cuda_matmul/gemm.hpp"
#include "gpu_testkit.hpp"

namespace course::gputest {

struct GemmShape {
  int M, N, K;
};

/// Sizes that are not multiples of any tile (16, 32, 64), plus 1 and one
/// tile +- 1, in every dimension: edge tiles, partial K tiles, single rows and columns.
inline std::vector<GemmShape> small_gemm_shapes() {
  return {{1, 1, 1},    {7, 7, 7},    {31, 31, 31},   {33, 33, 33},   {1, 33, 7},
          {33, 1, 31},  {7, 100, 33}, {100, 7, 1},    {31, 100, 100}, {100, 100, 31},
          {64, 64, 16}, {65, 63, 17}, {129, 127, 65}, {1, 1, 1000},   {100, 33, 0}};
}

/// The sizes 1000 and 1025 in every position.
inline std::vector<GemmShape> large_gemm_shapes() {
  return {{1000, 1025, 33}, {1025, 7, 1000}, {31, 1000, 1025}, {1025, 1025, 1025}};
}

/// Shapes kernel 1 can compute: at most kMaxThreadsPerBlock outputs (32 x 32 is exactly 1024).
inline std::vector<GemmShape> single_block_shapes() {
  return {{1, 1, 1},       {7, 7, 7},      {31, 33, 100}, {32, 32, 1025}, {1, 1000, 7},
          {1000, 1, 1025}, {33, 31, 1000}, {1, 1024, 33}, {5, 3, 0}};
}

inline std::string describe(int kernel, const GemmShape& s, bool ta, bool tb, float alpha, float beta) {
  std::ostringstream o;
  o << "gemm kernel " << kernel << " (" << gemm_kernel_name(kernel) << "): C[" << s.M << " x " << s.N << "] = " << alpha
    << " * " << (ta ? "A^T" : "A") << "[" << s.M << " x " << s.K << "] " << (tb ? "B^T" : "B") << "[" << s.K << " x "
    << s.N << "] + " << beta << " * C";
  return o.str();
}

/// Runs `kernel` and cuBLAS on every shape, for trans_a, trans_b in {false, true} and
/// (alpha, beta) in {(1, 0), (-0.75, 0.5)}. With beta = 0, C starts as NaN: an element
/// the kernel does not write stays NaN and fails. 64 guard values on each side of C
/// must come back untouched. Stops at the first failing case, which it describes.
///
/// Tolerance: ||C - ref|| / ||ref|| <= 1e-5, and every element within
/// sum_atol(K) + 1e-4 * |ref| (gpu_testkit.hpp).
inline void expect_matches_cublas(int kernel, const std::vector<GemmShape>& shapes) {
  constexpr int kGuard = 64;
  constexpr float kSentinel = 12345.f;
  const float cases[2][2] = {{1.f, 0.f}, {-0.75f, 0.5f}};
  for (const GemmShape& s : shapes) {
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      for (const auto& ab : cases) {
        const float alpha = ab[0], beta = ab[1];
        const std::string what = describe(kernel, s, ta, tb, alpha, beta);
        const std::size_t mn = static_cast<std::size_t>(s.M) * s.N;
        const std::uint64_t seed = 1000003ull * s.M + 1009ull * s.N + 17ull * s.K + 2ull * t + (beta != 0);
        const std::vector<float> a = random_floats(static_cast<std::size_t>(s.M) * s.K, seed);
        const std::vector<float> b = random_floats(static_cast<std::size_t>(s.K) * s.N, seed + 1);
        const std::vector<float> c0 =
            beta == 0 ? std::vector<float>(mn, std::numeric_limits<float>::quiet_NaN()) : random_floats(mn, seed + 2);
        std::vector<float> guarded(mn + 2 * kGuard, kSentinel);
        std::copy(c0.begin(), c0.end(), guarded.begin() + kGuard);
        DeviceBuffer<float> A = to_device(a), B = to_device(b), C = to_device(guarded), R = to_device(c0);

        gemm(kernel, ta, tb, s.M, s.N, s.K, alpha, A.get(), B.get(), beta, C.get() + kGuard);
        gemm(kGemmCublas, ta, tb, s.M, s.N, s.K, alpha, A.get(), B.get(), beta, R.get());
        const std::vector<float> out = to_host(C), ref = to_host(R);

        for (int g = 0; g < kGuard; ++g) {
          const std::size_t before = static_cast<std::size_t>(kGuard - 1 - g), after = mn + kGuard + g;
          if (out[before] != kSentinel || out[after] != kSentinel) {
            const bool low = out[before] != kSentinel;
            ADD_FAILURE() << what << ": wrote outside C [m=" << s.M << ", n=" << s.N << "]: the guard value "
                          << (low ? "C[" + std::to_string(-1 - g) + "] (" + std::to_string(g + 1) + " before C[0])"
                                  : "C[" + std::to_string(mn + g) + "] (" + std::to_string(g + 1) +
                                        " past the last element)")
                          << " holds " << out[low ? before : after] << ", expected it untouched at " << kSentinel;
            return;
          }
        }
        const std::vector<float> got(out.begin() + kGuard, out.begin() + kGuard + static_cast<long>(mn));
        const ::testing::AssertionResult ok =
            close_enough(what, got, ref, {{"m", s.M}, {"n", s.N}}, sum_atol(s.K), kSumRtol, kSumRelNorm);
        if (!ok) {
          ADD_FAILURE() << ok.message();
          return;
        }
      }
    }
  }
}

}  // namespace course::gputest

/// Test `Name` of suite `Suite`: `kernel` against cuBLAS on `shapes` (expect_matches_cublas()),
/// skipped without a GPU.
#define S04_MATCHES_CUBLAS_TEST(Suite, Name, kernel, shapes)   \
  TEST(Suite, Name) {                                          \
    SKIP_WITHOUT_GPU();                                        \
    ::course::gputest::expect_matches_cublas(kernel, shapes); \
  }
