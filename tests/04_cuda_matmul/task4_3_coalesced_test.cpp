// Task 4.3: the grid kernel with coalesced access, against cuBLAS.
#include <gtest/gtest.h>

#include "gemm_check.hpp"

using namespace course;
using namespace course::gputest;

S04_MATCHES_CUBLAS_TEST(Task4_3_Coalesced, MatchesCublasOnSmallAwkwardSizes, kGemmCoalesced, small_gemm_shapes())
S04_MATCHES_CUBLAS_TEST(Task4_3_Coalesced, MatchesCublasOnLargeSizes, kGemmCoalesced, large_gemm_shapes())
