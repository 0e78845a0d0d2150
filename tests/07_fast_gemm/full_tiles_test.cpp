// Which products kernel 10 runs without edge checks (full_tiles(), fast_gemm_kernels.hpp):
// only those whose every block tile and split-K slice is full and whose chunks are float4.
// A wrong "yes" reads past the matrices, so every condition is tested on its own. CPU only.
#include <gtest/gtest.h>

#include <cstdint>

#include "07_fast_gemm/fast_gemm_kernels.hpp"

using namespace course;

namespace {

alignas(16) float g_storage[8];
const float* const kAligned = g_storage;      // 16-byte aligned: float4 chunks possible
const float* const kMisaligned = g_storage + 1;  // 4 bytes past it

GemmProblem product(bool trans_a, bool trans_b, int M, int N, int K, int k_slice = 0) {
  GemmProblem p{trans_a, trans_b, M, N, K, 1.f, 0.f, kAligned, kAligned, nullptr};
  p.k_slice = k_slice;
  return p;
}

}  // namespace

TEST(Stage07_FullTiles, EveryTileFullInEveryLayout) {
  for (int t = 0; t < 4; ++t) {
    EXPECT_TRUE(full_tiles(product(t & 1, t & 2, 256, 384, 64), 128, 128, 16)) << "layout " << t;
    EXPECT_TRUE(full_tiles(product(t & 1, t & 2, 32, 64, 16), 32, 64, 16)) << "layout " << t;
  }
  EXPECT_TRUE(full_tiles(product(false, false, 0, 128, 16), 128, 128, 16)) << "no rows: no tile at all";
}

TEST(Stage07_FullTiles, APartialTileInAnyDimension) {
  for (int t = 0; t < 4; ++t) {
    EXPECT_FALSE(full_tiles(product(t & 1, t & 2, 252, 384, 64), 128, 128, 16)) << "M; layout " << t;
    EXPECT_FALSE(full_tiles(product(t & 1, t & 2, 256, 388, 64), 128, 128, 16)) << "N; layout " << t;
    EXPECT_FALSE(full_tiles(product(t & 1, t & 2, 256, 384, 68), 128, 128, 16)) << "K; layout " << t;
    EXPECT_TRUE(full_tiles(product(t & 1, t & 2, 256, 384, 48), 128, 128, 16)) << "K = 48, tiles 16 deep";
    EXPECT_FALSE(full_tiles(product(t & 1, t & 2, 256, 384, 48), 128, 128, 32)) << "K = 48, tiles 32 deep";
  }
}

TEST(Stage07_FullTiles, SplitKSlicesMustBeFullToo) {
  EXPECT_TRUE(full_tiles(product(false, false, 128, 128, 1024, 256), 128, 128, 16));
  EXPECT_FALSE(full_tiles(product(false, false, 128, 128, 1024, 100), 128, 128, 16)) << "slices of 100";
  EXPECT_FALSE(full_tiles(product(false, false, 128, 128, 1000, 256), 128, 128, 16)) << "a short last slice";
}

TEST(Stage07_FullTiles, OperandsMustTakeFloat4Chunks) {
  GemmProblem p = product(false, false, 256, 256, 64);
  p.A = kMisaligned;
  EXPECT_FALSE(full_tiles(p, 128, 128, 16)) << "A not 16-byte aligned";
  p = product(false, false, 256, 256, 64);
  p.B = kMisaligned;
  EXPECT_FALSE(full_tiles(p, 128, 128, 16)) << "B not 16-byte aligned";
}

TEST(Stage07_FullTiles, ChunkOffsetsMustFitAnInt) {
  // A [M, K]: a 128-row tile spans 128 rows of K floats.
  EXPECT_TRUE(full_tiles(product(false, false, 128, 128, 1 << 23), 128, 128, 16));   // 128 * 2^23 < 2^31
  EXPECT_FALSE(full_tiles(product(false, false, 128, 128, 1 << 24), 128, 128, 16));  // 128 * 2^24 = 2^31
  // A stored [K, M] spans 16 rows (BK) of M; B stored [N, K] spans 128 rows of K.
  EXPECT_TRUE(full_tiles(product(true, false, 1 << 24, 128, 16), 128, 128, 16));
  EXPECT_FALSE(full_tiles(product(true, true, 128, 128, 1 << 24), 128, 128, 16));
  EXPECT_TRUE(full_tiles(product(true, true, 128, 128, 1 << 23), 128, 128, 16));
}
