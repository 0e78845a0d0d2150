/// @file matmul_13_wgmma_sm90a.cu
/// @brief Stage 07, kernel 13 (Task 7.8): Hopper's warpgroup MMA (wgmma), the tensor cores reading shared memory themselves.
///
/// Kernel 12 spends shared-memory bandwidth and instructions moving every
/// fragment into registers (ldmatrix) before each mma.sync, and an mma.sync
/// computes 16 x 8 x 16. Hopper's `wgmma` is issued by a warpgroup of 4 warps
/// for a 64 x N x 16 product (N up to 256), reads A and B from shared memory
/// directly through descriptors (wgmma.cuh), and runs asynchronously: the
/// threads issue it and are free until they wait for it. What is left to the
/// kernel is to bring tiles into shared memory in the layout the tensor cores
/// read (128-byte swizzled), and to keep them coming:
///
///     block: 2 warpgroups, a 128 x BN tile of C (each warpgroup 64 rows), BN = 128 or 256
///     fill stages 0, 1 (4 stages of 64-deep tiles of A and B)
///     for t:  wait for tile t; fence for the tensor cores; __syncthreads()
///             start copying tile t + 2 into the stage tile t - 2 used
///             4 x wgmma m64nBNk16 on tile t; commit; wait until tile t - 1's are done
///
/// Tiles move with 16-byte cp.async copies when A and B are BF16 (gemm_bf16), or
/// through registers, rounded to BF16, when they are FP32 (gemm()). Each copy goes to
/// its swizzled place: chunk c (8 values) of row r lands at chunk c ^ (r % 8).
///
/// Compiled for sm_90a only (the file's name says so to the build). It needs rows
/// whose lengths are multiples of 8 values and 16-byte aligned matrices; other
/// products are handed to kernel 12.
#include <cstdint>
#include <string>
#include <type_traits>

#include "04_cuda_matmul/matmul_kernels.hpp"
#include "07_fast_gemm/fast_gemm_kernels.hpp"
#include "07_fast_gemm/mma_tiles.cuh"
#include "07_fast_gemm/ptx.cuh"
#include "07_fast_gemm/rounding.cuh"
#include "07_fast_gemm/simt_tiles.cuh"
#include "07_fast_gemm/wgmma.cuh"
#include "common/gpu/gpu_capability.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/gpu/gpu_capability.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

namespace {

constexpr int kBM = 128, kBK = 64, kStages = 4, kThreads = 256;  // 2 warpgroups
constexpr int kRowBytes = 128;                                   // 64 BF16 values: one swizzled row
constexpr int kBlockBytes = kBK * kRowBytes;                     // 64 columns of an M- or N-major tile

/// Byte offset of element (o, k) in a 128-byte-swizzled tile (wgmma.cuh's table); o is m for A, n for B.
template <bool K_MAJOR>
__device__ __forceinline__ int swizzled(int o, int k) {
  if (K_MAJOR) return o * kRowBytes + (((k / 8) ^ (o % 8)) << 4) + (k % 8) * 2;
  return (o / 64) * kBlockBytes + k * kRowBytes + ((((o % 64) / 8) ^ (k % 8)) << 4) + (o % 8) * 2;
}

/// One operand in global memory: elements of type T (BF16 bits or float).
template <typename T>
struct Matrix {
  const T* data = nullptr;
  int outer = 0, ld = 0;  ///< M (or N) and the stored row length
};

/// Copies one operand's OUTER x 64 tiles into shared memory, 8 values (16 bytes of BF16) per chunk.
template <int OUTER, bool K_MAJOR, typename T>
struct TileFill {
  static constexpr int kChunks = OUTER * kBK / 8;
  static constexpr int kPerThread = kChunks / kThreads;
  static_assert(kChunks % kThreads == 0, "every thread copies the same number of chunks");
  float staged[std::is_same_v<T, float> ? kPerThread : 1][8];  ///< FP32 input: loaded, not yet stored

  /// Chunk c's first element (o, k): consecutive chunks run along the stored rows.
  __device__ static void origin(int c, int& o, int& k) {
    if (K_MAJOR) {
      o = c / (kBK / 8);
      k = (c % (kBK / 8)) * 8;
    } else {
      k = c / (OUTER / 8);
      o = (c % (OUTER / 8)) * 8;
    }
  }

  /// Starts the tile whose first element is (o0, k0): cp.async for BF16, loads into registers for FP32.
  /// Chunks outside the matrix or past k_end are zeros (whole chunks: rows are multiples of 8).
  __device__ void start(std::uint8_t* tile, const Matrix<T>& x, int o0, int k0, int k_end) {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      int o, k;
      origin(static_cast<int>(threadIdx.x) + i * kThreads, o, k);
      const bool in = o0 + o < x.outer && k0 + k < k_end;
      const T* src = K_MAJOR ? x.data + static_cast<std::size_t>(o0 + o) * x.ld + (k0 + k)
                             : x.data + static_cast<std::size_t>(k0 + k) * x.ld + (o0 + o);
      if constexpr (std::is_same_v<T, float>) {
        const float4 lo = in ? __ldg(reinterpret_cast<const float4*>(src)) : make_float4(0, 0, 0, 0);
        const float4 hi = in ? __ldg(reinterpret_cast<const float4*>(src + 4)) : make_float4(0, 0, 0, 0);
        staged[i][0] = lo.x, staged[i][1] = lo.y, staged[i][2] = lo.z, staged[i][3] = lo.w;
        staged[i][4] = hi.x, staged[i][5] = hi.y, staged[i][6] = hi.z, staged[i][7] = hi.w;
      } else {
        ptx::cp_async_16(tile + swizzled<K_MAJOR>(o, k), in ? src : x.data, in);
      }
    }
  }

  /// FP32 input: the registers start() filled, rounded to BF16, into their swizzled places.
  __device__ void finish(std::uint8_t* tile) const {
    if constexpr (std::is_same_v<T, float>) {
#pragma unroll
      for (int i = 0; i < kPerThread; ++i) {
        int o, k;
        origin(static_cast<int>(threadIdx.x) + i * kThreads, o, k);
        uint4 packed;
        unsigned* w = &packed.x;
#pragma unroll
        for (int j = 0; j < 4; ++j)
          w[j] = round_to_bf16_bits(staged[i][2 * j]) | (static_cast<unsigned>(round_to_bf16_bits(staged[i][2 * j + 1])) << 16);
        *reinterpret_cast<uint4*>(tile + swizzled<K_MAJOR>(o, k)) = packed;
      }
    }
  }
};

template <int BN>
struct Accumulators {
  float d[BN / 2];
};

template <int BN, bool TRANS_A, bool TRANS_B>
__device__ __forceinline__ void wgmma_step(float (&d)[BN / 2], std::uint64_t da, std::uint64_t db, int accumulate) {
  // wgmma's transpose flags: 1 for an M-major A (A stored [K, M]) and for an N-major B (B stored [K, N]).
  if constexpr (BN == 256)
    wgmma::wgmma_m64n256k16_bf16<TRANS_A ? 1 : 0, TRANS_B ? 0 : 1>(d, da, db, accumulate);
  else
    wgmma::wgmma_m64n128k16_bf16<TRANS_A ? 1 : 0, TRANS_B ? 0 : 1>(d, da, db, accumulate);
}

template <int BN, bool TRANS_A, bool TRANS_B, typename T>
__global__ void __launch_bounds__(kThreads, 1) matmul_wgmma_kernel(GemmProblem p, Matrix<T> a, Matrix<T> b) {
  constexpr bool A_K_MAJOR = !TRANS_A, B_K_MAJOR = TRANS_B;
  constexpr int kABytes = kBM * kBK * 2, kBBytes = BN * kBK * 2, kStageBytes = kABytes + kBBytes;
  extern __shared__ std::uint8_t wgmma_smem[];
  // The swizzle repeats every 1024 bytes and must start on such a boundary (the launcher adds the slack).
  std::uint8_t* smem = wgmma_smem + ((1024 - (ptx::shared_address(wgmma_smem) & 1023)) & 1023);
  // BEGIN Task 7.8 (device): the four-stage loop: wait for tile t, fence, sync, start tile t + 2 into stage (t + 2) % 4, then 4 wgmma (one per 16 of k) on stage t % 4 through descriptors, commit, wait for tile t - 1's; finish the FP32 copies; at the end wait for all and store the accumulators
  // HINT: descriptors: K-major tiles wgmma::descriptor(row 0 of this warpgroup + 32 s bytes, 16, 1024); M- or N-major tiles wgmma::descriptor(tile + 2048 s (+ this warpgroup's 64-column block for A), 8192, 1024), s = 0..3.
  // HINT: accumulator j of this thread is row 16 (warp % 4) + lane / 4 (+ 8 for j % 4 >= 2) and column 8 (j / 4) + 2 (lane % 4) (+ 1 for odd j) of the warpgroup's 64 x BN tile.
  TileFill<kBM, A_K_MAJOR, T> fill_a;
  TileFill<BN, B_K_MAJOR, T> fill_b;
  const int wg = threadIdx.x / 128;
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * BN;
  int k_begin, k_end;
  simt::k_range(p, k_begin, k_end);
  const int tiles = k_end > k_begin ? (k_end - k_begin + kBK - 1) / kBK : 0;
  auto stage_a = [&](int s) { return smem + s * kStageBytes; };
  auto stage_b = [&](int s) { return smem + s * kStageBytes + kABytes; };
  auto start = [&](int t) {
    fill_a.start(stage_a(t % kStages), a, row0, k_begin + t * kBK, k_end);
    fill_b.start(stage_b(t % kStages), b, col0, k_begin + t * kBK, k_end);
  };
  auto finish = [&](int t) {
    fill_a.finish(stage_a(t % kStages));
    fill_b.finish(stage_b(t % kStages));
  };
  Accumulators<BN> acc;
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) acc.d[i] = 0.f;
  for (int t = 0; t < kStages - 2; ++t) {
    if (t < tiles) {
      start(t);
      finish(t);
    }
    ptx::cp_async_commit();
  }
  for (int t = 0; t < tiles; ++t) {
    ptx::cp_async_wait<kStages - 3>();  // tile t has landed (this thread's copies)
    wgmma::fence_shared_for_async();    // ... and is visible to the tensor cores
    __syncthreads();                    // everyone's; and every warpgroup has finished tile t - 2
    const int next = t + kStages - 2;
    if (next < tiles) start(next);      // into the stage tile t - 2 used
    ptx::cp_async_commit();
    const std::uint8_t* ta = stage_a(t % kStages);
    const std::uint8_t* tb = stage_b(t % kStages);
    wgmma::fence();
#pragma unroll
    for (int s = 0; s < kBK / 16; ++s) {
      const std::uint64_t da = A_K_MAJOR ? wgmma::descriptor(ta + wg * 64 * kRowBytes + 32 * s, 16, 1024)
                                         : wgmma::descriptor(ta + wg * kBlockBytes + 2048 * s, kBlockBytes, 1024);
      const std::uint64_t db = B_K_MAJOR ? wgmma::descriptor(tb + 32 * s, 16, 1024)
                                         : wgmma::descriptor(tb + 2048 * s, kBlockBytes, 1024);
      wgmma_step<BN, TRANS_A, TRANS_B>(acc.d, da, db, 1);
    }
    wgmma::commit_group();
    wgmma::wait_group<1>();  // tile t - 1's products are done; tile t's may still run
    if (next < tiles) finish(next);
  }
  wgmma::wait_group<0>();
  const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  const int m = row0 + wg * 64 + warp * 16 + lane / 4;
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    const int n = col0 + 8 * j + 2 * (lane % 4);
    mma::store_c2(p, m, n, acc.d[4 * j], acc.d[4 * j + 1]);
    mma::store_c2(p, m + 8, n, acc.d[4 * j + 2], acc.d[4 * j + 3]);
  }
  // END Task 7.8
}

template <int BN, bool TRANS_A, bool TRANS_B, typename T>
void launch(const GemmProblem& p, const T* A, const T* B, cudaStream_t stream) {
  constexpr int bytes = kStages * (kBM + BN) * kBK * 2 + 1024;  // + the slack that aligns the tiles to 1024 bytes
  static const bool raised = [] {
    CUDA_CHECK(cudaFuncSetAttribute(matmul_wgmma_kernel<BN, TRANS_A, TRANS_B, T>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    return true;
  }();
  (void)raised;
  const Matrix<T> a{A, p.M, TRANS_A ? p.M : p.K}, b{B, p.N, TRANS_B ? p.K : p.N};
  const dim3 grid((p.N + BN - 1) / BN, (p.M + kBM - 1) / kBM, simt::k_slices(p));
  matmul_wgmma_kernel<BN, TRANS_A, TRANS_B, T><<<grid, kThreads, bytes, stream>>>(p, a, b);
  CUDA_CHECK_LAUNCH();
}

template <int BN, typename T>
void launch_any_layout(const GemmProblem& p, const T* A, const T* B, cudaStream_t stream) {
  if (!p.trans_a && !p.trans_b)
    launch<BN, false, false>(p, A, B, stream);
  else if (!p.trans_a && p.trans_b)
    launch<BN, false, true>(p, A, B, stream);
  else if (p.trans_a && !p.trans_b)
    launch<BN, true, false>(p, A, B, stream);
  else
    launch<BN, true, true>(p, A, B, stream);
}

/// Can kernel 13 take p? Rows of A and B (as stored) of multiples of 8 values, 16-byte aligned, split-K
/// slices of multiples of 8, and a Hopper GPU (sm_90a code runs on compute capability 9.0 only).
bool fits(const GemmProblem& p, const void* A, const void* B) {
  const auto aligned = [](const void* x) { return reinterpret_cast<std::uintptr_t>(x) % 16 == 0; };
  return wgmma_available() && aligned(A) && aligned(B) && (p.trans_a ? p.M : p.K) % 8 == 0 &&
         (p.trans_b ? p.K : p.N) % 8 == 0 && p.k_slice % 8 == 0;
}

}  // namespace

// Asked of the device once per process, not at every call of kernels 13 to 16: a process of this
// course runs on one device, the one current at the first call. COURSE_AS_CC may make a Hopper
// choose as an older GPU (common/gpu/gpu_capability.hpp).
bool wgmma_available() {
  static const bool hopper = gpu_has(GpuFeature::Wgmma);
  return hopper;
}

void matmul_wgmma(const GemmProblem& p, cudaStream_t stream) {
  // BEGIN Task 7.8: launch kernel 13 on p's FP32 matrices (BN = 128: the FP32 values wait in registers) when it fits, else hand p to kernel 12
  if (fits(p, p.A, p.B))
    launch_any_layout<128, float>(p, p.A, p.B, stream);
  else
    matmul_bf16_mma(p, stream);
  // END Task 7.8
}

void matmul_wgmma_bf16_inputs(const GemmProblem& p, const __nv_bfloat16* A, const __nv_bfloat16* B,
                              cudaStream_t stream) {
  const auto* a = reinterpret_cast<const std::uint16_t*>(A);
  const auto* b = reinterpret_cast<const std::uint16_t*>(B);
  if (!fits(p, A, B)) {
    matmul_bf16_mma_bf16_inputs(p, A, B, stream);
    return;
  }
  // 128 x 256 tiles where there are enough of them to fill the GPU, else 128 x 128.
  const long wide_tiles = static_cast<long>((p.M + kBM - 1) / kBM) * ((p.N + 255) / 256) * simt::k_slices(p);
  if (p.N >= 256 && wide_tiles >= multiprocessor_count())
    launch_any_layout<256>(p, a, b, stream);
  else
    launch_any_layout<128>(p, a, b, stream);
}

}  // namespace course
