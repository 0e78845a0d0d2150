// Task 4.2: a 2D grid of blocks, one thread per output, against cuBLAS.
#include <gtest/gtest.h>

#include "gemm_check.hpp"

using namespace course;
using namespace course::gputest;

S04_MATCHES_CUBLAS_TEST(Task4_2_Grid, MatchesCublasOnSmallAwkwardSizes, kGemmGrid, small_gemm_shapes())
S04_MATCHES_CUBLAS_TEST(Task4_2_Grid, MatchesCublasOnLargeSizes, kGemmGrid, large_gemm_shapes())
