/// @file simt_tiles.cuh
/// @brief Stage 07: the pieces kernels 7 to 10 are built of — tile loads (Tasks 7.1, 7.3), the warp tile (Task 7.2), the store of C.
///
/// **The tiles in shared memory.** Every kernel keeps the BK-deep slices of op(A)
/// and op(B) that it multiplies k-major, As[k][m] and Bs[k][n], with kPad floats
/// of padding per row: then the values one thread multiplies at one k are
/// neighbours (a float4 read, as in stage 04's kernel 6), whatever the layout
/// in global memory.
///
/// **Loading them.** Global memory is read in chunks of 4 neighbouring floats along
/// the matrix's contiguous dimension: one float4 load (16 bytes, the widest a
/// thread can issue) when the rows are 16-byte aligned, else 4 single loads. Two
/// cases, for either operand:
///
/// | stored as                                   | contiguous | chunk                | into shared memory              |
/// |---------------------------------------------|------------|----------------------|---------------------------------|
/// | A [M, K], or B^T: B stored [N, K]            | k          | (o, k..k+3)          | 4 floats down a column: S[k+j][o] |
/// | A^T: A stored [K, M], or B [K, N]            | m or n     | (k, o..o+3)          | one float4: S[k][o..o+3]        |
///
/// (o is the operand's other index: m for A, n for B.) The first case transposes
/// on the way in, and padding keeps its stores from colliding. Shared memory has
/// 32 banks of 4 bytes; with rows OUTER + kPad = 132 floats long, row k starts
/// 4k banks after row 0. With BK = 8 a warp's 32 chunks are 16 values of o times
/// 2 of k (0 and 4), so its j-th store writes S[k + j][o] at bank 4(k + j) + o
/// (mod 32): 16 consecutive banks for k = 0 and the other 16 for k = 4, each bank
/// once. Without the padding (rows of 128 floats) the bank would be o alone, each
/// of the 16 banks hit twice: a 2-way conflict, every store taking two passes. (With
/// BK = 16, k takes 4 values and pairs of them share banks even with the padding:
/// 2-way on a few stores per tile, small next to the reads of the products.)
///
/// Kernels 7 and 8 load into registers and then store (Task 7.1). Kernel 9 (Task 7.3)
/// issues cp.async copies, which write shared memory directly and let the thread go on
/// computing while they fly, for the tiles that land as they are; a tile that must be
/// transposed still goes through registers, loaded before the multiplications of the
/// current tile and stored after them.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "04_cuda_matmul/matmul_kernels.hpp"
#include "07_fast_gemm/fast_gemm_kernels.hpp"
#include "07_fast_gemm/ptx.cuh"

namespace course::simt {

/// Floats of padding per row of a shared tile: rows stay 16-byte aligned for float4
/// reads, and successive rows start 4 banks apart (see the file comment).
constexpr int kPad = 4;

/// One operand of C = op(A) op(B), seen as op(X)[o][k] with o its outer index (m for A, n for B).
struct Operand {
  const float* data = nullptr;
  int outer = 0;     ///< M for A, N for B
  int ld = 0;        ///< floats from one stored row to the next
  bool vec = false;  ///< chunks may be read as float4 (rows 16-byte aligned, chunks never straddle an edge)
};

/// The host's view of the two operands of `p` (float4 reads where fast_gemm_kernels.hpp allows them).
inline Operand operand_a(const GemmProblem& p) { return {p.A, p.M, p.trans_a ? p.M : p.K, float4_chunks_a(p)}; }
inline Operand operand_b(const GemmProblem& p) { return {p.B, p.N, p.trans_b ? p.K : p.N, float4_chunks_b(p)}; }

/// The BK x OUTER tile of one operand that a block of THREADS threads copies per step,
/// stored S[k][o] (rows OUTER + kPad long). K_CONTIGUOUS: the operand is stored with k
/// contiguous (A [M, K], or B stored [N, K]). FULL: the kernel runs only on products
/// whose every tile lies wholly inside the matrices and whose every chunk is a float4
/// (full_tiles() in fast_gemm_kernels.hpp says which): load() and copy_async() then skip every
/// check (kernel 10's full-tile instances; given code, outside the tasks).
template <int OUTER, int BK, int THREADS, bool K_CONTIGUOUS, bool FULL = false>
struct TileCopy {
  static constexpr int kChunks = OUTER * BK / 4;
  static constexpr int kPerThread = kChunks / THREADS;  ///< chunks each thread copies
  static_assert(OUTER % 4 == 0 && BK % 4 == 0, "chunks are 4 floats");
  static_assert(kChunks % THREADS == 0, "every thread copies the same number of chunks");
  using Tile = float[BK][OUTER + kPad];

  /// Chunk c's first element (o, k) in the tile. Consecutive threads take consecutive chunks
  /// along the contiguous dimension, so a warp reads neighbouring addresses.
  __device__ static void chunk_origin(int c, int& o, int& k) {
    if (K_CONTIGUOUS) {
      o = c / (BK / 4);
      k = (c % (BK / 4)) * 4;
    } else {
      k = c / (OUTER / 4);
      o = (c % (OUTER / 4)) * 4;
    }
  }

  /// Address of op(X)[go][gk].
  __device__ static const float* address(const Operand& x, int go, int gk) {
    return K_CONTIGUOUS ? x.data + static_cast<std::size_t>(go) * x.ld + gk
                        : x.data + static_cast<std::size_t>(gk) * x.ld + go;
  }

  /// Is element j (0..3) of the chunk at (go, gk) inside op(X) and before k_end?
  __device__ static bool inside(const Operand& x, int go, int gk, int j, int k_end) {
    return K_CONTIGUOUS ? go < x.outer && gk + j < k_end : go + j < x.outer && gk < k_end;
  }

  /// Chunk i's first element, counted from the tile's first one (an int: full_tiles()
  /// checks that it fits). It depends on the thread alone, so the compiler works it out once.
  __device__ static int chunk_offset(int i, int ld) {
    int o, k;
    chunk_origin(static_cast<int>(threadIdx.x) + i * THREADS, o, k);
    return K_CONTIGUOUS ? o * ld + k : k * ld + o;
  }

  /// This thread's chunks of the tile whose first element is op(X)[o0][k0], into registers;
  /// zeros for elements outside op(X) or at k >= k_end.
  __device__ static void load(const Operand& x, int o0, int k0, int k_end, float4 (&r)[kPerThread]) {
    if constexpr (FULL) {  // every chunk inside and a float4: one address, no checks
      const float* tile = address(x, o0, k0);
#pragma unroll
      for (int i = 0; i < kPerThread; ++i) r[i] = __ldg(reinterpret_cast<const float4*>(tile + chunk_offset(i, x.ld)));
    } else {
      // BEGIN Task 7.1 (device): for each of this thread's chunks (c = threadIdx.x + i * THREADS), one float4 load when x.vec, else 4 single loads; zeros outside
      // HINT: chunk_origin(c, o, k) gives the chunk's place in the tile; address(x, o0 + o, k0 + k) its first element; inside(x, o0 + o, k0 + k, j, k_end) says whether element j exists.
#pragma unroll
      for (int i = 0; i < kPerThread; ++i) {
        int o, k;
        chunk_origin(static_cast<int>(threadIdx.x) + i * THREADS, o, k);
        const int go = o0 + o, gk = k0 + k;
        const float* src = address(x, go, gk);
        if (x.vec) {
          // Aligned chunks lie wholly inside or outside: element 0 decides for all four.
          r[i] = inside(x, go, gk, 0, k_end) ? __ldg(reinterpret_cast<const float4*>(src)) : make_float4(0.f, 0.f, 0.f, 0.f);
        } else {
          r[i].x = inside(x, go, gk, 0, k_end) ? __ldg(src) : 0.f;
          r[i].y = inside(x, go, gk, 1, k_end) ? __ldg(src + 1) : 0.f;
          r[i].z = inside(x, go, gk, 2, k_end) ? __ldg(src + 2) : 0.f;
          r[i].w = inside(x, go, gk, 3, k_end) ? __ldg(src + 3) : 0.f;
        }
      }
      // END Task 7.1
    }
  }

  /// The chunks load() read, into the tile: down a column (transposed) when k is
  /// contiguous in X, as one float4 otherwise.
  __device__ static void store(Tile& s, const float4 (&r)[kPerThread]) {
    // BEGIN Task 7.1 (device): store each chunk at its place in s[k][o]: K_CONTIGUOUS: s[k + j][o] for j = 0..3 (the transpose); else one float4 at s[k][o]
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      int o, k;
      chunk_origin(static_cast<int>(threadIdx.x) + i * THREADS, o, k);
      if (K_CONTIGUOUS) {
        s[k + 0][o] = r[i].x;
        s[k + 1][o] = r[i].y;
        s[k + 2][o] = r[i].z;
        s[k + 3][o] = r[i].w;
      } else {
        *reinterpret_cast<float4*>(&s[k][o]) = r[i];
      }
    }
    // END Task 7.1
  }

  /// True when the tile must be transposed on its way in (k contiguous in X): it then goes
  /// through registers (load, store). Otherwise each chunk lands in shared memory as it is
  /// stored in X, and cp.async can copy it there directly (copy_async).
  static constexpr bool kThroughRegisters = K_CONTIGUOUS;

  /// The tile copied with cp.async straight into shared memory, for an operand stored with o
  /// contiguous (nothing passes through registers, nothing waits): one 16-byte copy per chunk
  /// where load() would read a float4, else four 4-byte copies. Elements outside op(X) or past
  /// k_end are written as zeros. The caller commits and waits.
  __device__ static void copy_async(Tile& s, const Operand& x, int o0, int k0, int k_end) {
    static_assert(!K_CONTIGUOUS, "a k-contiguous tile is transposed on the way in: load() and store()");
    if constexpr (FULL) {
      const float* tile = address(x, o0, k0);
#pragma unroll
      for (int i = 0; i < kPerThread; ++i) {
        int o, k;
        chunk_origin(static_cast<int>(threadIdx.x) + i * THREADS, o, k);
        ptx::cp_async_16(&s[k][o], tile + chunk_offset(i, x.ld), true);
      }
    } else {
      // BEGIN Task 7.3 (device): for each of this thread's chunks, one cp_async_16 into s[k][o] when x.vec, else cp_async_4 per element into s[k][o + j]; an element outside op(X) gets a zero and its copy must not read (pass x.data as the source)
      // HINT: ptx::cp_async_16(dst, src, copy) and ptx::cp_async_4(dst, src, copy) with copy = inside(x, o0 + o, k0 + k, j, k_end).
#pragma unroll
      for (int i = 0; i < kPerThread; ++i) {
        int o, k;
        chunk_origin(static_cast<int>(threadIdx.x) + i * THREADS, o, k);
        const int go = o0 + o, gk = k0 + k;
        const float* src = address(x, go, gk);
        if (x.vec) {
          const bool in = inside(x, go, gk, 0, k_end);
          ptx::cp_async_16(&s[k][o], in ? src : x.data, in);
        } else {
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            const bool in = inside(x, go, gk, j, k_end);
            ptx::cp_async_4(&s[k][o + j], in ? src + j : x.data, in);
          }
        }
      }
      // END Task 7.3
    }
  }
};

/// The three levels of tiling (kernels 8 to 10). A block computes a BM x BN tile of C;
/// its warps split it into warp tiles of WM x WN; the 32 lanes of a warp are a 4 x 8 grid
/// (lane_m = lane / 8, lane_n = lane % 8), and each lane computes MI x NI sub-tiles of
/// 4 x 4 outputs, spaced 16 rows and 32 columns apart (MI = WM / 16, NI = WN / 32):
///
///     rows of lane:    wm0 + mi * 16 + lane_m * 4 + (0..3),   mi = 0 .. MI-1
///     columns of lane: wn0 + ni * 32 + lane_n * 4 + (0..3),   ni = 0 .. NI-1
///
/// At each k a lane reads MI float4 of As and NI float4 of Bs, for 16 MI NI FMAs. The 8
/// lanes with one lane_m read the same As address (a broadcast), and the 8 lanes of one
/// lane_m read 8 neighbouring float4 of Bs: 128 bytes, every bank once. Kernel 7's
/// layout (8 contiguous columns per thread) lets two lanes of a quarter warp hit one
/// bank; spacing the sub-tiles 32 columns apart is what removes it.
///
/// The FMAs go row by row with every other row backwards (a serpentine), so that each
/// one shares an operand with the one before it: ptxas marks that operand for the reuse
/// cache, and fewer FMAs wait for a busy register-file bank (lesson 07 measures it).
template <int MI, int NI>
struct WarpTile {
  static constexpr int kRows = MI * 4, kCols = NI * 4;  ///< outputs per lane
  float acc[kRows][kCols];

  __device__ void zero() {
#pragma unroll
    for (int i = 0; i < kRows; ++i)
#pragma unroll
      for (int j = 0; j < kCols; ++j) acc[i][j] = 0.f;
  }

  /// acc += the products of one BK-deep slice: As[k][wm0 + ...] times Bs[k][wn0 + ...] (see above).
  template <int BK, int LDA, int LDB>
  __device__ void multiply(const float (&As)[BK][LDA], const float (&Bs)[BK][LDB], int wm0, int wn0, int lane) {
    // BEGIN Task 7.2 (device): for each k, read this lane's MI float4 of As and NI float4 of Bs (sub-tiles 16 rows and 32 columns apart), then kRows x kCols FMAs into acc, row by row with every other row backwards
    // HINT: lane_m = lane / 8 and lane_n = lane % 8; row block mi starts at wm0 + mi * 16 + lane_m * 4, column block ni at wn0 + ni * 32 + lane_n * 4; FMA order: j = i % 2 == 0 ? jj : kCols - 1 - jj.
    const int lane_m = lane / 8, lane_n = lane % 8;
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[kRows], b[kCols];
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) {
        const float4 v = *reinterpret_cast<const float4*>(&As[k][wm0 + mi * 16 + lane_m * 4]);
        a[mi * 4 + 0] = v.x;
        a[mi * 4 + 1] = v.y;
        a[mi * 4 + 2] = v.z;
        a[mi * 4 + 3] = v.w;
      }
#pragma unroll
      for (int ni = 0; ni < NI; ++ni) {
        const float4 v = *reinterpret_cast<const float4*>(&Bs[k][wn0 + ni * 32 + lane_n * 4]);
        b[ni * 4 + 0] = v.x;
        b[ni * 4 + 1] = v.y;
        b[ni * 4 + 2] = v.z;
        b[ni * 4 + 3] = v.w;
      }
      // Row by row, every other row backwards: each FMA then reads one register that the
      // FMA before it read in the same place (a[i] along a row, b[j] where two rows meet),
      // which the SM's operand reuse cache hands over without a register-file read.
#pragma unroll
      for (int i = 0; i < kRows; ++i)
#pragma unroll
        for (int jj = 0; jj < kCols; ++jj) {
          const int j = i % 2 == 0 ? jj : kCols - 1 - jj;
          acc[i][j] += a[i] * b[j];
        }
    }
    // END Task 7.2
  }

  /// Row and column of C of acc[i][j], for a warp tile at (row0, col0) of C.
  __device__ static int row_of(int row0, int lane, int i) { return row0 + (i / 4) * 16 + (lane / 8) * 4 + i % 4; }
  __device__ static int col_of(int col0, int lane, int j) { return col0 + (j / 4) * 32 + (lane % 8) * 4 + j % 4; }
};

/// C[m][n .. n+3] from v[0..3] as course::gemm() defines it (alpha, beta; beta = 0 never
/// reads C), or into partial blockIdx.z when p.k_slice > 0 (split-K: the sum as it is).
/// One float4 store when `vec_c` (N % 4 == 0 and C 16-byte aligned) and all four are inside.
__device__ inline void store_c4(const GemmProblem& p, bool vec_c, int m, int n, const float (&v)[4]) {
  if (m >= p.M) return;
  float* c = p.C + (static_cast<std::size_t>(p.k_slice > 0 ? blockIdx.z : 0) * p.M + m) * p.N + n;
  const float alpha = p.k_slice > 0 ? 1.f : p.alpha;
  const float beta = p.k_slice > 0 ? 0.f : p.beta;
  if (vec_c && n + 3 < p.N) {
    float4 out = make_float4(alpha * v[0], alpha * v[1], alpha * v[2], alpha * v[3]);
    if (beta != 0.f) {
      const float4 old = *reinterpret_cast<const float4*>(c);
      out.x += beta * old.x;
      out.y += beta * old.y;
      out.z += beta * old.z;
      out.w += beta * old.w;
    }
    *reinterpret_cast<float4*>(c) = out;
    return;
  }
#pragma unroll
  for (int j = 0; j < 4; ++j)
    if (n + j < p.N) c[j] = beta == 0.f ? alpha * v[j] : alpha * v[j] + beta * c[j];
}

/// True when C can take float4 stores (the host decides once per launch).
inline bool c_takes_float4(const GemmProblem& p) {
  return p.N % 4 == 0 && reinterpret_cast<std::uintptr_t>(p.C) % 16 == 0;
}

/// This block's range of k: all of K, or slice blockIdx.z of p.k_slice (split-K).
__device__ inline void k_range(const GemmProblem& p, int& k_begin, int& k_end) {
  k_begin = p.k_slice > 0 ? static_cast<int>(blockIdx.z) * p.k_slice : 0;
  k_end = p.k_slice > 0 ? min(p.K, k_begin + p.k_slice) : p.K;
}

/// Blocks of grid layer z compute slice z of K when p.k_slice > 0: the number of layers.
inline unsigned k_slices(const GemmProblem& p) {
  return p.k_slice > 0 ? static_cast<unsigned>((p.K + p.k_slice - 1) / p.k_slice) : 1u;
}

}  // namespace course::simt
