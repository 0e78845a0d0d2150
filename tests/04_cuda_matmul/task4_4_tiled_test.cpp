// Task 4.4: shared-memory tiles sweeping K, TILE = 16 (kernel 4) and 32 (kernel 5), against cuBLAS.
#include <gtest/gtest.h>

#include "gemm_check.hpp"

using namespace course;
using namespace course::gputest;

S04_MATCHES_CUBLAS_TEST(Task4_4_Tiled, Tile16MatchesCublasOnSmallAwkwardSizes, kGemmTiled16, small_gemm_shapes())
S04_MATCHES_CUBLAS_TEST(Task4_4_Tiled, Tile32MatchesCublasOnSmallAwkwardSizes, kGemmTiled32, small_gemm_shapes())
S04_MATCHES_CUBLAS_TEST(Task4_4_Tiled, Tile16MatchesCublasOnLargeSizes, kGemmTiled16, large_gemm_shapes())
S04_MATCHES_CUBLAS_TEST(Task4_4_Tiled, Tile32MatchesCublasOnLargeSizes, kGemmTiled32, large_gemm_shapes())
