// Stage 04: the gemm() interface itself, and cuBLAS (the reference of every
// matmul test) against a plain double-precision product on the CPU.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "04_cuda_matmul/matmul_kernels.hpp"
#include "gemm_check.hpp"

using namespace course;
using namespace course::gputest;

// Argument checks come before any GPU work, so these run anywhere.
TEST(Stage04_GemmArguments, RejectsBadKernelSizesAndPointers) {
  std::vector<float> a(4), b(4), c(4);
  EXPECT_THROW(gemm(-1, false, false, 2, 2, 1, 1.f, a.data(), b.data(), 0.f, c.data()), std::invalid_argument);
  EXPECT_THROW(gemm(kNumGemmKernels, false, false, 2, 2, 1, 1.f, a.data(), b.data(), 0.f, c.data()),
               std::invalid_argument);
  EXPECT_THROW(gemm(kGemmGrid, false, false, -2, 2, 1, 1.f, a.data(), b.data(), 0.f, c.data()), std::invalid_argument);
  EXPECT_THROW(gemm(kGemmGrid, false, false, 2, 2, 1, 1.f, nullptr, b.data(), 0.f, c.data()), std::invalid_argument);
  EXPECT_THROW(gemm(kGemmGrid, false, false, 2, 2, 1, 1.f, a.data(), nullptr, 0.f, c.data()), std::invalid_argument);
  EXPECT_THROW(gemm(kGemmGrid, false, false, 2, 2, 1, 1.f, a.data(), b.data(), 0.f, nullptr), std::invalid_argument);
}

TEST(Stage04_GemmArguments, EmptyOutputIsNothingToDo) {
  for (int k = 0; k < kNumGemmKernels; ++k) {
    EXPECT_NO_THROW(gemm(k, false, false, 0, 5, 3, 1.f, nullptr, nullptr, 0.f, nullptr)) << "kernel " << k;
    EXPECT_NO_THROW(gemm(k, true, true, 5, 0, 3, 1.f, nullptr, nullptr, 0.f, nullptr)) << "kernel " << k;
  }
}

TEST(Stage04_GemmArguments, KernelNames) {
  const std::vector<std::string> names = gemm_kernel_names();
  ASSERT_EQ(names.size(), static_cast<std::size_t>(kNumGemmKernels));
  EXPECT_EQ(names[kGemmCublas], "cuBLAS");
  for (int k = 0; k < kNumGemmKernels; ++k) EXPECT_EQ(gemm_kernel_name(k), names[static_cast<std::size_t>(k)]);
  EXPECT_THROW(gemm_kernel_name(kNumGemmKernels), std::invalid_argument);
  EXPECT_GE(kBestGemm, 1) << "the best kernel is a hand-written one";
}

// Later stages add kernels in order; what they add is checked before it is kept. (The
// registrations refused here change nothing: stage 04's tests see its seven kernels.)
TEST(Stage04_GemmArguments, AddedKernelsComeInOrderAndSaySplitK) {
  EXPECT_EQ(gemm_kernel_count(), kNumGemmKernels);
  const GemmKernelEntry fake{"fake", [](const GemmProblem&, cudaStream_t) {}, true};
  EXPECT_THROW(add_gemm_kernel(kNumGemmKernels + 1, fake), std::invalid_argument) << "number 7 must come first";
  EXPECT_THROW(add_gemm_kernel(kGemmGrid, fake), std::invalid_argument) << "stage 04's numbers are taken";
  EXPECT_THROW(add_gemm_kernel(kNumGemmKernels, GemmKernelEntry{"no launcher", nullptr, false}), std::invalid_argument);
  EXPECT_EQ(gemm_kernel_count(), kNumGemmKernels);
  EXPECT_TRUE(gemm_has_k_slices(kGemmRegisterTiled));
  EXPECT_FALSE(gemm_has_k_slices(kGemmTiled32));
  EXPECT_FALSE(gemm_has_k_slices(kNumGemmKernels));
}

// The column-major trick of matmul_cublas.cpp, checked once against the definition:
// C[m][n] = alpha sum_k op(A)[m][k] op(B)[k][n] + beta C[m][n], in double on the CPU.
TEST(Stage04_CublasReference, MatchesDoublePrecisionOnTheCpu) {
  SKIP_WITHOUT_GPU();
  const GemmShape shapes[] = {{1, 1, 1}, {7, 33, 31}, {33, 7, 100}, {100, 31, 7}};
  for (const GemmShape& s : shapes) {
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      const float alpha = 0.5f, beta = -1.5f;
      const std::vector<float> a = random_floats(static_cast<std::size_t>(s.M) * s.K, 31 + t);
      const std::vector<float> b = random_floats(static_cast<std::size_t>(s.K) * s.N, 41 + t);
      const std::vector<float> c0 = random_floats(static_cast<std::size_t>(s.M) * s.N, 51 + t);
      DeviceBuffer<float> A = to_device(a), B = to_device(b), C = to_device(c0);
      gemm(kGemmCublas, ta, tb, s.M, s.N, s.K, alpha, A.get(), B.get(), beta, C.get());
      const std::vector<float> got = to_host(C);
      std::vector<float> ref(got.size());
      for (int m = 0; m < s.M; ++m)
        for (int n = 0; n < s.N; ++n) {
          double acc = 0;
          for (int k = 0; k < s.K; ++k) {
            const double x = ta ? a[static_cast<std::size_t>(k) * s.M + m] : a[static_cast<std::size_t>(m) * s.K + k];
            const double y = tb ? b[static_cast<std::size_t>(n) * s.K + k] : b[static_cast<std::size_t>(k) * s.N + n];
            acc += x * y;
          }
          const std::size_t i = static_cast<std::size_t>(m) * s.N + n;
          ref[i] = static_cast<float>(alpha * acc + beta * c0[i]);
        }
      EXPECT_TRUE(close_enough(describe(kGemmCublas, s, ta, tb, alpha, beta), got, ref, {s.M, s.N}, sum_atol(s.K),
                               kSumRtol, kSumRelNorm));
    }
  }
}
