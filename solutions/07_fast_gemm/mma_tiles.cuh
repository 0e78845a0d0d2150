/// @file mma_tiles.cuh
/// @brief Stage 07: what the two tensor-core kernels (11 and 12) share — tile sizes, shared-memory layout, the store of C (glue, not a task).
///
/// **Tiles keep the layout of global memory.** Unlike kernels 7 to 10, the
/// tensor-core kernels do not transpose on the way into shared memory: a tile of
/// an operand stored with k contiguous (A [M, K], or B stored [N, K]) is kept as
/// S[o][k], one stored with o contiguous (A stored [K, M], B [K, N]) as S[k][o].
/// Then every copy is a straight 16-byte cp.async, and the fragment loads
/// (ldmatrix, with .trans where needed) do the reordering. Rows are padded so
/// that the 8 rows one ldmatrix phase reads, or the 32 scalar loads of a
/// fragment, fall in distinct banks:
///
/// | element | layout  | row length (elements) | why                                              |
/// |---------|---------|-----------------------|--------------------------------------------------|
/// | FP32    | S[o][k] | BK + 4 = 36           | row r starts at bank 4r: lanes (g, t) hit 4g + t  |
/// | FP32    | S[k][o] | OUTER + 8             | row r starts at bank 8r: lanes (g, t) hit 8t + g  |
/// | BF16    | S[o][k] | BK + 8 = 40 (80 B)    | 8 rows of 16 B fall in 8 distinct 16-byte bank groups |
/// | BF16    | S[k][o] | OUTER + 8 (272 B)     | the same                                          |
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "04_cuda_matmul/matmul_kernels.hpp"
#include "07_fast_gemm/ptx.cuh"
#include "07_fast_gemm/simt_tiles.cuh"

namespace course::mma {

/// Block tile BM x BN x BK, warp tile WM x WN, STAGES tiles in flight.
template <int BM_, int BN_, int BK_, int WM_, int WN_, int STAGES_>
struct Config {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, WM = WM_, WN = WN_, STAGES = STAGES_;
  static constexpr int kWarpsN = BN / WN;
  static constexpr int kThreads = (BM / WM) * (BN / WN) * 32;
  /// Blocks that must fit on one SM: two of 8 warps (at most 128 registers a thread), or three of 4
  /// warps (at most 170: the FP32-input loads keep 32 values in registers and would spill at 128).
  static constexpr int kMinBlocks = kThreads >= 256 ? 2 : 3;
  static constexpr int MI = WM / 16;  ///< 16-row blocks of a warp tile (the m of one mma)
  static constexpr int NI = WN / 8;   ///< 8-column blocks (the n of one mma)
  static_assert(BM % WM == 0 && BN % WN == 0 && WM % 16 == 0 && WN % 16 == 0, "tiles must nest");
};

/// Shared-memory geometry of one operand's tile: OUTER x BK elements of type T,
/// k-contiguous (S[o][k]) or not (S[k][o]), rows padded by PAD elements.
template <typename T, int OUTER, int BK, bool K_CONTIGUOUS, int PAD>
struct TileLayout {
  static constexpr bool kKContiguous = K_CONTIGUOUS;
  static constexpr int kRow = K_CONTIGUOUS ? BK + PAD : OUTER + PAD;  ///< elements per row
  static constexpr int kElements = (K_CONTIGUOUS ? OUTER : BK) * kRow;
  static constexpr int kChunk = 16 / static_cast<int>(sizeof(T));    ///< elements in 16 bytes
  static constexpr int kChunks = OUTER * BK / kChunk;
  static_assert(kRow % kChunk == 0, "rows must stay 16-byte aligned");
  /// Offset of element (o, k): o is the row (m or n) of op(X), in either layout.
  __device__ static int at(int o, int k) { return K_CONTIGUOUS ? o * kRow + k : k * kRow + o; }
  /// Chunk c's first element (o, k): consecutive chunks run along the contiguous dimension.
  __device__ static void chunk_origin(int c, int& o, int& k) {
    if (K_CONTIGUOUS) {
      o = c / (BK / kChunk);
      k = (c % (BK / kChunk)) * kChunk;
    } else {
      k = c / (OUTER / kChunk);
      o = (c % (OUTER / kChunk)) * kChunk;
    }
  }
};

/// An operand's tile for TF32: FP32 elements, padded as the table at the top says.
template <int OUTER, int BK, bool K_CONTIGUOUS>
using Tf32Tile = TileLayout<float, OUTER, BK, K_CONTIGUOUS, K_CONTIGUOUS ? 4 : 8>;

/// Copies one operand's tile with cp.async (16-byte copies, or 4-byte ones where float4
/// chunks are not allowed).
template <class Layout, int THREADS>
struct Tf32Copy {
  static constexpr int kPerThread = Layout::kChunks / THREADS;
  static_assert(Layout::kChunks % THREADS == 0, "every thread copies the same number of chunks");
  static constexpr bool K_CONTIGUOUS = Layout::kKContiguous;

  __device__ static void copy(float* s, const simt::Operand& x, int o0, int k0, int k_end) {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      int o, k;
      Layout::chunk_origin(static_cast<int>(threadIdx.x) + i * THREADS, o, k);
      const int go = o0 + o, gk = k0 + k;
      const float* src = K_CONTIGUOUS ? x.data + static_cast<std::size_t>(go) * x.ld + gk
                                      : x.data + static_cast<std::size_t>(gk) * x.ld + go;
      float* dst = s + Layout::at(o, k);
      if (x.vec) {
        const bool in = go < x.outer && gk < k_end;  // an aligned chunk is wholly inside or outside
        ptx::cp_async_16(dst, in ? src : x.data, in);
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const bool in = K_CONTIGUOUS ? go < x.outer && gk + j < k_end : go + j < x.outer && gk < k_end;
          ptx::cp_async_4(dst + j, in ? src + j : x.data, in);
        }
      }
    }
  }
};

/// The A fragment of the 16 x 8 block at (m, k) of a tile (ptx.cuh's table).
template <bool K_CONTIGUOUS, class Layout>
__device__ void load_a_tf32(unsigned (&a)[4], const float* s, int m, int k) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  if (K_CONTIGUOUS) {  // S[m][k]: four 8 x 4 FP32 blocks = four 8 x 8 16-bit matrices
    ptx::ldmatrix_x4(a, s + Layout::at(m + lane % 8 + ((lane / 8) % 2) * 8, k + (lane / 16) * 4));
#pragma unroll
    for (int i = 0; i < 4; ++i) a[i] = ptx::to_tf32(__uint_as_float(a[i]));
  } else {  // S[k][m]
    a[0] = ptx::to_tf32(s[Layout::at(m + g, k + t)]);
    a[1] = ptx::to_tf32(s[Layout::at(m + g + 8, k + t)]);
    a[2] = ptx::to_tf32(s[Layout::at(m + g, k + t + 4)]);
    a[3] = ptx::to_tf32(s[Layout::at(m + g + 8, k + t + 4)]);
  }
}

/// The B fragments of the two 8 x 8 blocks at (k, n) and (k, n + 8): b[0..1] and b[2..3].
template <bool K_CONTIGUOUS, class Layout>
__device__ void load_b_tf32_pair(unsigned (&b)[4], const float* s, int k, int n) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  if (K_CONTIGUOUS) {  // S[n][k]
    ptx::ldmatrix_x4(b, s + Layout::at(n + lane % 8 + (lane / 16) * 8, k + ((lane / 8) % 2) * 4));
#pragma unroll
    for (int i = 0; i < 4; ++i) b[i] = ptx::to_tf32(__uint_as_float(b[i]));
  } else {  // S[k][n]
    b[0] = ptx::to_tf32(s[Layout::at(n + g, k + t)]);
    b[1] = ptx::to_tf32(s[Layout::at(n + g, k + t + 4)]);
    b[2] = ptx::to_tf32(s[Layout::at(n + g + 8, k + t)]);
    b[3] = ptx::to_tf32(s[Layout::at(n + g + 8, k + t + 4)]);
  }
}

/// Where C[m][n] goes: C itself, or partial blockIdx.z when p.k_slice > 0 (split-K).
__device__ inline float* c_address(const GemmProblem& p, int m, int n) {
  return p.C + (static_cast<std::size_t>(p.k_slice > 0 ? blockIdx.z : 0) * p.M + m) * p.N + n;
}

/// C[m][n] from v as course::gemm() defines it (alpha, beta; beta = 0 never reads C), or the sum
/// as it is into a split-K partial.
__device__ inline void store_c1(const GemmProblem& p, int m, int n, float v) {
  if (m >= p.M || n >= p.N) return;
  float* c = c_address(p, m, n);
  const float alpha = p.k_slice > 0 ? 1.f : p.alpha, beta = p.k_slice > 0 ? 0.f : p.beta;
  *c = beta == 0.f ? alpha * v : alpha * v + beta * *c;
}

/// C[m][n], C[m][n + 1] from v0, v1 the same way: one 8-byte store when both are inside and aligned.
__device__ inline void store_c2(const GemmProblem& p, int m, int n, float v0, float v1) {
  if (m >= p.M) return;
  float* c = c_address(p, m, n);
  const float alpha = p.k_slice > 0 ? 1.f : p.alpha, beta = p.k_slice > 0 ? 0.f : p.beta;
  if (n + 1 < p.N && reinterpret_cast<std::uintptr_t>(c) % 8 == 0) {
    float2 out = make_float2(alpha * v0, alpha * v1);
    if (beta != 0.f) {
      const float2 old = *reinterpret_cast<const float2*>(c);
      out.x += beta * old.x;
      out.y += beta * old.y;
    }
    *reinterpret_cast<float2*>(c) = out;
    return;
  }
  store_c1(p, m, n, v0);
  store_c1(p, m, n + 1, v1);
}

/// The accumulators of a warp tile, MI x NI mma tiles of 16 x 8 (ptx.cuh: c[0..3] of each), into C.
template <int MI, int NI>
__device__ inline void store_warp_tile(const GemmProblem& p, int m0, int n0, const float (&acc)[MI][NI][4]) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int mi = 0; mi < MI; ++mi)
#pragma unroll
    for (int ni = 0; ni < NI; ++ni) {
      const int m = m0 + mi * 16 + g, n = n0 + ni * 8 + 2 * t;
      store_c2(p, m, n, acc[mi][ni][0], acc[mi][ni][1]);
      store_c2(p, m + 8, n, acc[mi][ni][2], acc[mi][ni][3]);
    }
}

/// A warpgroup's wgmma accumulators d[N / 2] for its 64 x N block of D, whose first element is
/// D[row0][col0], into C (SWAPPED: D = C^T, so D[r][c] goes to C[c][r]). Thread (warp w of the
/// warpgroup, lane) holds D[r][c] at r = row0 + 16 w + lane / 4 (+ 8), c = col0 + 8 j + 2 (lane % 4) (+ 1):
/// d[4 j], d[4 j + 1] on row r, d[4 j + 2], d[4 j + 3] on row r + 8.
template <int N, bool SWAPPED>
__device__ inline void store_wgmma_d(const GemmProblem& p, const float (&d)[N / 2], int row0, int col0) {
  const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  const int r = row0 + warp * 16 + lane / 4;
#pragma unroll
  for (int j = 0; j < N / 8; ++j) {
    const int c = col0 + 8 * j + 2 * (lane % 4);
    if (SWAPPED) {
      store_c1(p, c, r, d[4 * j]);
      store_c1(p, c + 1, r, d[4 * j + 1]);
      store_c1(p, c, r + 8, d[4 * j + 2]);
      store_c1(p, c + 1, r + 8, d[4 * j + 3]);
    } else {
      store_c2(p, r, c, d[4 * j], d[4 * j + 1]);
      store_c2(p, r + 8, c, d[4 * j + 2], d[4 * j + 3]);
    }
  }
}

}  // namespace course::mma
