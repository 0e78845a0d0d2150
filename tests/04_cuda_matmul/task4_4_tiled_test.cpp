// Task 4.4: shared-memory tiles sweeping K, TILE = 16 (kernel 4) and 32 (kernel 5), against cuBLAS.
#include <gtest/gtest.h>

#include "gemm_check.hpp"

using namespace course;
using namespace course::gputest;

TEST(Task4_4_Tiled, Tile16MatchesCublasOnSmallAwkwardSizes) {
  SKIP_WITHOUT_GPU();
  expect_matches_cublas(kGemmTiled16, small_gemm_shapes());
}

TEST(Task4_4_Tiled, Tile32MatchesCublasOnSmallAwkwardSizes) {
  SKIP_WITHOUT_GPU();
  expect_matches_cublas(kGemmTiled32, small_gemm_shapes());
}

TEST(Task4_4_Tiled, Tile16MatchesCublasOnLargeSizes) {
  SKIP_WITHOUT_GPU();
  expect_matches_cublas(kGemmTiled16, large_gemm_shapes());
}

TEST(Task4_4_Tiled, Tile32MatchesCublasOnLargeSizes) {
  SKIP_WITHOUT_GPU();
  expect_matches_cublas(kGemmTiled32, large_gemm_shapes());
}
