// Task 4.2: a 2D grid of blocks, one thread per output, against cuBLAS.
#include <gtest/gtest.h>

#include "gemm_check.hpp"

using namespace course;
using namespace course::gputest;

TEST(Task4_2_Grid, MatchesCublasOnSmallAwkwardSizes) {
  SKIP_WITHOUT_GPU();
  expect_matches_cublas(kGemmGrid, small_gemm_shapes());
}

TEST(Task4_2_Grid, MatchesCublasOnLargeSizes) {
  SKIP_WITHOUT_GPU();
  expect_matches_cublas(kGemmGrid, large_gemm_shapes());
}
