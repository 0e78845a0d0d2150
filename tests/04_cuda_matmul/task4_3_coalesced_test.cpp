// Task 4.3: the grid kernel with coalesced access, against cuBLAS.
#include <gtest/gtest.h>

#include "gemm_check.hpp"

using namespace course;
using namespace course::gputest;

TEST(Task4_3_Coalesced, MatchesCublasOnSmallAwkwardSizes) {
  SKIP_WITHOUT_GPU();
  expect_matches_cublas(kGemmCoalesced, small_gemm_shapes());
}

TEST(Task4_3_Coalesced, MatchesCublasOnLargeSizes) {
  SKIP_WITHOUT_GPU();
  expect_matches_cublas(kGemmCoalesced, large_gemm_shapes());
}
