// Task 4.5: 64 x 64 block tiles with 4 x 4 outputs per thread, against cuBLAS.
#include <gtest/gtest.h>

#include "gemm_check.hpp"

using namespace course;
using namespace course::gputest;

S04_MATCHES_CUBLAS_TEST(Task4_5_RegisterTiled, MatchesCublasOnSmallAwkwardSizes, kGemmRegisterTiled,
                        small_gemm_shapes())
S04_MATCHES_CUBLAS_TEST(Task4_5_RegisterTiled, MatchesCublasOnLargeSizes, kGemmRegisterTiled, large_gemm_shapes())

// Split-K in one launch (for a small C and a long K, such as a conv layer's weight
// gradient): the partial products of the slices of K add up to the whole product,
// for every operand layout and for slices that do not divide K or the 16-deep tile.
// Every partial is written (they start as NaN), and nothing past the last one.
TEST(Task4_5_RegisterTiled, SlicesOfKAddUpToTheProduct) {
  SKIP_WITHOUT_GPU();
  constexpr float kSentinel = 12345.f;
  for (const GemmShape s : {GemmShape{16, 9, 5000}, GemmShape{65, 63, 1000}, GemmShape{7, 130, 33}}) {
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      for (const int k_slice : {1, 7, 16, 100, 256, 5000}) {
        const int slices = (s.K + k_slice - 1) / k_slice;
        const std::size_t mn = static_cast<std::size_t>(s.M) * s.N;
        const std::string what = describe(kGemmRegisterTiled, s, ta, tb, 1.f, 0.f) + " in slices of " +
                                 std::to_string(k_slice) + " rows of K";
        const std::vector<float> a = random_floats(static_cast<std::size_t>(s.M) * s.K, 7 + t);
        const std::vector<float> b = random_floats(static_cast<std::size_t>(s.K) * s.N, 11 + t);
        std::vector<float> init(mn * slices, std::numeric_limits<float>::quiet_NaN());
        init.resize(mn * slices + 64, kSentinel);
        DeviceBuffer<float> A = to_device(a), B = to_device(b), P = to_device(init), R = to_device(std::vector<float>(mn));
        gemm_k_slices(kGemmRegisterTiled, ta, tb, s.M, s.N, s.K, k_slice, A.get(), B.get(), P.get());
        gemm(kGemmCublas, ta, tb, s.M, s.N, s.K, 1.f, A.get(), B.get(), 0.f, R.get());
        const std::vector<float> parts = to_host(P), ref = to_host(R);
        for (std::size_t g = mn * slices; g < parts.size(); ++g)
          ASSERT_EQ(parts[g], kSentinel) << what << ": wrote past the last partial [" << slices << " x " << s.M << " x "
                                         << s.N << "], " << g - mn * slices + 1 << " floats past its end";
        std::vector<float> sum(mn, 0.f);
        for (int z = 0; z < slices; ++z)
          for (std::size_t i = 0; i < mn; ++i) sum[i] += parts[z * mn + i];
        const ::testing::AssertionResult ok =
            close_enough("the sum of the partials of " + what, sum, ref, {{"m", s.M}, {"n", s.N}}, sum_atol(s.K),
                         kSumRtol, kSumRelNorm);
        if (!ok) FAIL() << ok.message();
      }
    }
  }
  EXPECT_THROW(gemm_k_slices(kGemmRegisterTiled, false, false, 2, 2, 2, 0, nullptr, nullptr, nullptr),
               std::invalid_argument);
  EXPECT_THROW(gemm_k_slices(kGemmTiled32, false, false, 2, 2, 2, 1, nullptr, nullptr, nullptr), std::invalid_argument)
      << "kernel 5 has no one-launch split-K";
}
