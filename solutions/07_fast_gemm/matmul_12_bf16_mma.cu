/// @file matmul_12_bf16_mma.cu
/// @brief Stage 07, kernel 12 (Task 7.7): tensor cores on BF16 inputs with FP32 sums (mma.sync.m16n8k16, ldmatrix).
///
/// BF16 halves the bytes of every operand and doubles what one mma does
/// (16 x 8 x 16 = 2048 multiply-adds). The kernel is kernel 11's pipeline with
/// 2-byte elements:
///
/// - **ldmatrix for every fragment.** With 16-bit elements ldmatrix serves both
///   layouts: S[o][k] tiles plainly, S[k][o] tiles with `.trans`, which transposes
///   each 8 x 8 matrix on its way into registers. One ldmatrix.x4 gives a whole
///   16 x 16 A fragment, or the B fragments of two 16 x 8 blocks; a warp tile of
///   64 x 32 takes 4 + 2 of them per 16-deep step, for 16 mma.
/// - **Two ways in.** course::gemm_bf16() passes BF16 matrices (what cuBLAS's BF16
///   GEMM takes): 16-byte cp.async copies, four tiles in flight. Kernel 12 through
///   course::gemm() receives FP32 matrices, as every layer of the course keeps its
///   values in FP32: each thread loads its chunk of 8 values as two float4 before the
///   multiplications of the current tile, and rounds them to BF16 (rounding.cuh) and
///   stores them after, so the loads fly while the tensor cores work. Either way the
///   tensor cores see the same BF16 values: the results are bit for bit the same.
///
///     fill stages 0 .. S-2
///     for t:  wait for tile t; __syncthreads()
///             start tile t + S - 1 (cp.async, or loads into registers)
///             for each 16-deep step: 4 ldmatrix of A, 2 of B, 16 mma
///             finish tile t + S - 1 (FP32 input: round, store to shared memory)
#include <cstdint>
#include <type_traits>

#include "04_cuda_matmul/matmul_kernels.hpp"
#include "07_fast_gemm/fast_gemm_kernels.hpp"
#include "07_fast_gemm/mma_tiles.cuh"
#include "07_fast_gemm/ptx.cuh"
#include "07_fast_gemm/rounding.cuh"
#include "07_fast_gemm/simt_tiles.cuh"
#include "common/gpu/cuda_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

namespace {

using LargeBf16 = mma::Config<128, 128, 32, 64, 32, 4>;
using SmallBf16 = mma::Config<64, 64, 32, 32, 32, 4>;

template <int OUTER, int BK, bool K_CONTIGUOUS>
using Bf16Tile = mma::TileLayout<std::uint16_t, OUTER, BK, K_CONTIGUOUS, 8>;

/// One operand, with elements of type T (float or BF16 bits) in global memory.
template <typename T>
struct Source {
  const T* data = nullptr;
  int outer = 0, ld = 0;
  bool vec = false;  ///< chunks may be read 16 bytes at a time (see chunks_fit)
};

/// Loads one operand's tiles of BF16 values: chunks of 8 elements along the contiguous dimension.
/// BF16 input with 16-byte chunks: cp.async in fetch(), nothing in stash(). FP32 input (or
/// unaligned BF16): loads into registers in fetch(), rounded to BF16 and stored in stash().
template <class Layout, int THREADS, typename T>
struct Bf16Copy {
  static constexpr int kPerThread = Layout::kChunks / THREADS;
  static constexpr bool K_CONTIGUOUS = Layout::kKContiguous;
  static_assert(Layout::kChunks % THREADS == 0, "every thread copies the same number of chunks");
  float staged[kPerThread][8];  ///< fetched, not yet stored (register path)

  __device__ static const T* address(const Source<T>& x, int go, int gk) {
    return K_CONTIGUOUS ? x.data + static_cast<std::size_t>(go) * x.ld + gk : x.data + static_cast<std::size_t>(gk) * x.ld + go;
  }
  __device__ static bool inside(const Source<T>& x, int go, int gk, int j, int k_end) {
    return K_CONTIGUOUS ? go < x.outer && gk + j < k_end : go + j < x.outer && gk < k_end;
  }
  __device__ static float value(const T* p) {
    if constexpr (std::is_same_v<T, float>)
      return __ldg(p);
    else
      return bf16_bits_to_float(__ldg(reinterpret_cast<const unsigned short*>(p)));
  }

  __device__ void fetch(std::uint16_t* s, const Source<T>& x, int o0, int k0, int k_end) {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      int o, k;
      Layout::chunk_origin(static_cast<int>(threadIdx.x) + i * THREADS, o, k);
      const int go = o0 + o, gk = k0 + k;
      const T* src = address(x, go, gk);
      if constexpr (std::is_same_v<T, std::uint16_t>) {
        if (x.vec) {  // 8 BF16 values = 16 bytes, wholly inside or outside
          const bool in = inside(x, go, gk, 0, k_end);
          ptx::cp_async_16(s + Layout::at(o, k), in ? src : x.data, in);
          continue;
        }
      } else {
        if (x.vec) {  // two float4, each wholly inside or outside
          const float4 lo = inside(x, go, gk, 0, k_end) ? __ldg(reinterpret_cast<const float4*>(src)) : make_float4(0, 0, 0, 0);
          const float4 hi = inside(x, go, gk, 4, k_end) ? __ldg(reinterpret_cast<const float4*>(src + 4)) : make_float4(0, 0, 0, 0);
          staged[i][0] = lo.x, staged[i][1] = lo.y, staged[i][2] = lo.z, staged[i][3] = lo.w;
          staged[i][4] = hi.x, staged[i][5] = hi.y, staged[i][6] = hi.z, staged[i][7] = hi.w;
          continue;
        }
      }
#pragma unroll
      for (int j = 0; j < 8; ++j) staged[i][j] = inside(x, go, gk, j, k_end) ? value(src + j) : 0.f;
    }
  }

  /// The registers fetch() filled, rounded to BF16, into the tile (one 16-byte store per chunk).
  __device__ void stash(std::uint16_t* s, const Source<T>& x) const {
    if constexpr (std::is_same_v<T, std::uint16_t>)
      if (x.vec) return;  // cp.async wrote the tile
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      int o, k;
      Layout::chunk_origin(static_cast<int>(threadIdx.x) + i * THREADS, o, k);
      uint4 packed;
      unsigned* words = &packed.x;
#pragma unroll
      for (int j = 0; j < 4; ++j)
        words[j] = round_to_bf16_bits(staged[i][2 * j]) | (static_cast<unsigned>(round_to_bf16_bits(staged[i][2 * j + 1])) << 16);
      *reinterpret_cast<uint4*>(s + Layout::at(o, k)) = packed;
    }
  }
};

/// The A fragment of the 16 x 16 block at (m, k) (ptx.cuh): one ldmatrix.x4, transposing for S[k][m].
template <class Layout>
__device__ void load_a_bf16(unsigned (&a)[4], const std::uint16_t* s, int m, int k) {
  const int lane = threadIdx.x % 32;
  if (Layout::kKContiguous)  // matrices: rows m..m+7 | m+8..m+15 of columns k..k+7, then of k+8..k+15
    ptx::ldmatrix_x4(a, s + Layout::at(m + lane % 16, k + (lane / 16) * 8));
  else  // S[k][m]: matrix i holds rows k + (i / 2) * 8 .. + 7 at columns m + (i % 2) * 8 .. + 7
    ptx::ldmatrix_x4_trans(a, s + Layout::at(m + ((lane / 8) % 2) * 8, k + lane % 8 + (lane / 16) * 8));
}

/// The B fragments of the 16 x 8 blocks at (k, n) and (k, n + 8): b[0..1] and b[2..3].
template <class Layout>
__device__ void load_b_bf16_pair(unsigned (&b)[4], const std::uint16_t* s, int k, int n) {
  const int lane = threadIdx.x % 32;
  if (Layout::kKContiguous)  // S[n][k]: matrix i = rows n + (i / 2) * 8 .. + 7 at columns k + (i % 2) * 8 .. + 7
    ptx::ldmatrix_x4(b, s + Layout::at(n + lane % 8 + (lane / 16) * 8, k + ((lane / 8) % 2) * 8));
  else  // S[k][n]: matrix i = rows k + (i % 2) * 8 .. + 7 at columns n + (i / 2) * 8 .. + 7, transposed
    ptx::ldmatrix_x4_trans(b, s + Layout::at(n + (lane / 16) * 8, k + lane % 8 + ((lane / 8) % 2) * 8));
}

template <class Cfg, bool TRANS_A, bool TRANS_B, typename T>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks) matmul_bf16_kernel(GemmProblem p, Source<T> a, Source<T> b) {
#if COURSE_DEVICE_ARCH >= 800  // cp.async and these mma shapes: left out of an sm_75 build (ptx.cuh)
  using LayoutA = Bf16Tile<Cfg::BM, Cfg::BK, !TRANS_A>;
  using LayoutB = Bf16Tile<Cfg::BN, Cfg::BK, TRANS_B>;
  constexpr int S = Cfg::STAGES, MI = Cfg::MI, NI = Cfg::NI;
  extern __shared__ __align__(16) std::uint16_t tiles_bf16[];  // S x (tile of A, tile of B)
  std::uint16_t* As = tiles_bf16;
  std::uint16_t* Bs = tiles_bf16 + S * LayoutA::kElements;
  // BEGIN Task 7.7 (device): kernel 11's pipeline on BF16 tiles: fetch tile t + S - 1 before the multiplications of tile t and stash it after; per 16-deep step MI ldmatrix of A, NI / 2 of B, MI x NI mma.sync m16n8k16
  // HINT: Bf16Copy<LayoutA, Cfg::kThreads, T> copy_a; copy_a.fetch(buffer, a, row0, k0, k_end) then copy_a.stash(buffer, a); cp_async_commit after each tile, cp_async_wait<S - 2> and __syncthreads at the top of each step.
  Bf16Copy<LayoutA, Cfg::kThreads, T> copy_a;
  Bf16Copy<LayoutB, Cfg::kThreads, T> copy_b;
  const int warp = threadIdx.x / 32;
  const int wm0 = (warp / Cfg::kWarpsN) * Cfg::WM, wn0 = (warp % Cfg::kWarpsN) * Cfg::WN;
  const int row0 = blockIdx.y * Cfg::BM, col0 = blockIdx.x * Cfg::BN;
  int k_begin, k_end;
  simt::k_range(p, k_begin, k_end);
  const int tiles = k_end > k_begin ? (k_end - k_begin + Cfg::BK - 1) / Cfg::BK : 0;
  float acc[MI][NI][4] = {};
#pragma unroll
  for (int s = 0; s < S - 1; ++s) {
    if (s < tiles) {
      copy_a.fetch(As + s * LayoutA::kElements, a, row0, k_begin + s * Cfg::BK, k_end);
      copy_b.fetch(Bs + s * LayoutB::kElements, b, col0, k_begin + s * Cfg::BK, k_end);
      copy_a.stash(As + s * LayoutA::kElements, a);
      copy_b.stash(Bs + s * LayoutB::kElements, b);
    }
    ptx::cp_async_commit();
  }
  for (int t = 0; t < tiles; ++t) {
    ptx::cp_async_wait<S - 2>();
    __syncthreads();  // tile t is in place; every warp is done with tile t - 1, whose buffer is refilled next
    const int next = t + S - 1;
    std::uint16_t* a_next = As + (next % S) * LayoutA::kElements;
    std::uint16_t* b_next = Bs + (next % S) * LayoutB::kElements;
    if (next < tiles) {
      copy_a.fetch(a_next, a, row0, k_begin + next * Cfg::BK, k_end);
      copy_b.fetch(b_next, b, col0, k_begin + next * Cfg::BK, k_end);
    }
    const std::uint16_t* as = As + (t % S) * LayoutA::kElements;
    const std::uint16_t* bs = Bs + (t % S) * LayoutB::kElements;
#pragma unroll
    for (int kk = 0; kk < Cfg::BK; kk += 16) {
      unsigned fa[MI][4], fb[NI][2];
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) load_a_bf16<LayoutA>(fa[mi], as, wm0 + mi * 16, kk);
#pragma unroll
      for (int ni = 0; ni < NI; ni += 2) {
        unsigned pair[4];
        load_b_bf16_pair<LayoutB>(pair, bs, kk, wn0 + ni * 8);
        fb[ni][0] = pair[0], fb[ni][1] = pair[1], fb[ni + 1][0] = pair[2], fb[ni + 1][1] = pair[3];
      }
#pragma unroll
      for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) ptx::mma_bf16_16x8x16(acc[mi][ni], fa[mi], fb[ni]);
    }
    if (next < tiles) {
      copy_a.stash(a_next, a);
      copy_b.stash(b_next, b);
    }
    ptx::cp_async_commit();
  }
  mma::store_warp_tile<MI, NI>(p, row0 + wm0, col0 + wn0, acc);
  // END Task 7.7
#endif
}

/// May chunks of 8 elements of type T be read 16 bytes (BF16) or two float4 (FP32) at a time?
/// The same rule as fast_gemm_kernels.hpp's float4_chunks_a, with 8 BF16 values to a chunk.
template <typename T>
bool chunks_fit(const void* data, int contiguous_length, bool k_contiguous, int k_slice) {
  const int per = std::is_same_v<T, float> ? 4 : 8;
  return reinterpret_cast<std::uintptr_t>(data) % 16 == 0 && contiguous_length % per == 0 &&
         (!k_contiguous || k_slice % per == 0);
}

template <class Cfg, bool TRANS_A, bool TRANS_B, typename T>
void launch_bf16(const GemmProblem& p, const T* A, const T* B, cudaStream_t stream) {
  constexpr int bytes = Cfg::STAGES *
                        (Bf16Tile<Cfg::BM, Cfg::BK, !TRANS_A>::kElements + Bf16Tile<Cfg::BN, Cfg::BK, TRANS_B>::kElements) *
                        static_cast<int>(sizeof(std::uint16_t));
  static const bool raised = [] {
    CUDA_CHECK(cudaFuncSetAttribute(matmul_bf16_kernel<Cfg, TRANS_A, TRANS_B, T>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    return true;
  }();
  (void)raised;
  const Source<T> a{A, p.M, TRANS_A ? p.M : p.K, chunks_fit<T>(A, TRANS_A ? p.M : p.K, !TRANS_A, p.k_slice)};
  const Source<T> b{B, p.N, TRANS_B ? p.K : p.N, chunks_fit<T>(B, TRANS_B ? p.K : p.N, TRANS_B, p.k_slice)};
  const dim3 grid((p.N + Cfg::BN - 1) / Cfg::BN, (p.M + Cfg::BM - 1) / Cfg::BM, simt::k_slices(p));
  matmul_bf16_kernel<Cfg, TRANS_A, TRANS_B, T><<<grid, Cfg::kThreads, bytes, stream>>>(p, a, b);
  CUDA_CHECK_LAUNCH();
}

template <class Cfg, typename T>
void launch_bf16_any_layout(const GemmProblem& p, const T* A, const T* B, cudaStream_t stream) {
  if (!p.trans_a && !p.trans_b)
    launch_bf16<Cfg, false, false>(p, A, B, stream);
  else if (!p.trans_a && p.trans_b)
    launch_bf16<Cfg, false, true>(p, A, B, stream);
  else if (p.trans_a && !p.trans_b)
    launch_bf16<Cfg, true, false>(p, A, B, stream);
  else
    launch_bf16<Cfg, true, true>(p, A, B, stream);
}

/// The 128 x 128 configuration, or the 64 x 64 one when the product has fewer 128 x 128
/// tiles (times split-K slices) than the GPU has SMs.
template <typename T>
void launch_bf16_sized(const GemmProblem& p, const T* A, const T* B, cudaStream_t stream) {
  const long large_tiles = static_cast<long>((p.M + 127) / 128) * ((p.N + 127) / 128) * simt::k_slices(p);
  if (large_tiles >= multiprocessor_count())
    launch_bf16_any_layout<LargeBf16>(p, A, B, stream);
  else
    launch_bf16_any_layout<SmallBf16>(p, A, B, stream);
}

}  // namespace

void matmul_bf16_mma(const GemmProblem& p, cudaStream_t stream) {
  // BEGIN Task 7.7: launch kernel 12 on p's FP32 matrices (rounded to BF16 as they are loaded), sized like kernel 11
  launch_bf16_sized<float>(p, p.A, p.B, stream);
  // END Task 7.7
}

void matmul_bf16_mma_bf16_inputs(const GemmProblem& p, const __nv_bfloat16* A, const __nv_bfloat16* B,
                                 cudaStream_t stream) {
  launch_bf16_sized<std::uint16_t>(p, reinterpret_cast<const std::uint16_t*>(A),
                                   reinterpret_cast<const std::uint16_t*>(B), stream);
}

}  // namespace course
