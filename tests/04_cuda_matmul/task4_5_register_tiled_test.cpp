// Task 4.5: 64 x 64 block tiles with 4 x 4 outputs per thread, against cuBLAS.
#include <gtest/gtest.h>

#include "gemm_check.hpp"

using namespace course;
using namespace course::gputest;

TEST(Task4_5_RegisterTiled, MatchesCublasOnSmallAwkwardSizes) {
  SKIP_WITHOUT_GPU();
  expect_matches_cublas(kGemmRegisterTiled, small_gemm_shapes());
}

TEST(Task4_5_RegisterTiled, MatchesCublasOnLargeSizes) {
  SKIP_WITHOUT_GPU();
  expect_matches_cublas(kGemmRegisterTiled, large_gemm_shapes());
}
