/// @file matmul_14_wgmma_tf32_sm90a.cu
/// @brief Stage 07, kernel 14 (Task 7.8): TF32 on Hopper's warpgroup MMA, one operand from registers.
///
/// TF32 wgmma (m64nNk8) reads its shared-memory operands only K-major: each row of a
/// tile must run along k. In C[M, N] = A B with A [M, K] and B [K, N] (the plain
/// layout) only A is stored that way. Two facts get around it without a transposing
/// copy:
///
/// - wgmma can take its first operand (the 64 rows) from registers, and registers can
///   be loaded from a tile in any layout: kernel 11's fragment loads do exactly that.
/// - C^T = B^T A^T: swapping the roles swaps which operand must be K-major.
///
/// So the operand that is stored K-major goes to shared memory for wgmma to read (Y,
/// 128-byte swizzled, like kernel 13's tiles), and the other one (X) is copied into a
/// padded tile as it is stored and loaded into registers, rounded to TF32 by cvt.rna,
/// one 64 x 8 fragment per warpgroup and step:
///
/// | product            | B stored          | X (registers)      | Y (wgmma reads)    | D, 128 x BN    |
/// |--------------------|-------------------|--------------------|--------------------|----------------|
/// | op(A) B^T          | [N, K]            | op(A): 128 rows m  | B: BN rows n       | a tile of C    |
/// | A B (A stored [M, K]) | [K, N]         | B^T: 128 rows n    | A: BN rows m       | a tile of C^T  |
/// | A^T B              | [K, N]            | neither is K-major: kernel 11 computes it           |
///
/// The values Y holds are rounded in shared memory by the threads that copied them,
/// once the copies have landed, since the tensor cores read them from there: each value
/// once per tile. (cuBLAS's TF32 rounds its FP32 inputs too: s07_matmul_sweep --roofline
/// measures it. The pass costs shared-memory bandwidth: lesson 07 measures that.) Four stages of 32-deep tiles; each step's four wgmma (k = 8 each) read
/// their X fragments from registers, which must stay untouched until the wgmma are done.
/// So the fragments have two sets of registers, used by even and odd steps: step t loads
/// its set, issues its wgmma and waits only for step t - 1's, whose set is then free,
/// while its own run on. (The compiler does not know that an issued wgmma still reads
/// registers: wgmma::keep_until_here tells it the set is in use until that wait.)
#include <cstdint>
#include <type_traits>

#include "04_cuda_matmul/matmul_kernels.hpp"
#include "07_fast_gemm/fast_gemm_kernels.hpp"
#include "07_fast_gemm/mma_tiles.cuh"
#include "07_fast_gemm/ptx.cuh"
#include "07_fast_gemm/rounding.cuh"
#include "07_fast_gemm/simt_tiles.cuh"
#include "07_fast_gemm/wgmma.cuh"
#include "common/gpu/cuda_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

namespace {

constexpr int kBX = 128, kBK = 32, kStages = 4, kThreads = 256;  // 2 warpgroups of 64 rows of X

/// Byte offset of chunk c (4 floats: k = 4c .. 4c + 3) of row r in a K-major 128-byte-swizzled tile.
__device__ __forceinline__ int swizzled_chunk(int r, int c) { return r * 128 + ((c ^ (r % 8)) << 4); }

/// Y's BN x 32 tile: cp.async 16 bytes (4 values along k) per chunk into its swizzled place;
/// rounded to TF32 in place once landed. Y's rows (K long, 16-byte aligned) hold whole chunks.
template <int BN>
struct YFill {
  static constexpr int kPerThread = BN * (kBK / 4) / kThreads;
  static_assert(BN * (kBK / 4) % kThreads == 0, "every thread copies the same number of chunks");
  __device__ static void origin(int i, int& r, int& c) {
    const int chunk = static_cast<int>(threadIdx.x) + i * kThreads;
    r = chunk / (kBK / 4);
    c = chunk % (kBK / 4);
  }
  __device__ static void start(std::uint8_t* tile, const simt::Operand& y, int r0, int k0, int k_end) {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      int r, c;
      origin(i, r, c);
      const bool in = r0 + r < y.outer && k0 + 4 * c < k_end;
      const float* src = y.data + static_cast<std::size_t>(r0 + r) * y.ld + (k0 + 4 * c);
      ptx::cp_async_16(tile + swizzled_chunk(r, c), in ? src : y.data, in);
    }
  }
  __device__ static void round_own(std::uint8_t* tile) {
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      int r, c;
      origin(i, r, c);
      float4* v = reinterpret_cast<float4*>(tile + swizzled_chunk(r, c));
      float4 x = *v;
      x.x = __uint_as_float(ptx::to_tf32(x.x)), x.y = __uint_as_float(ptx::to_tf32(x.y));
      x.z = __uint_as_float(ptx::to_tf32(x.z)), x.w = __uint_as_float(ptx::to_tf32(x.w));
      *v = x;
    }
  }
};

template <int BN>
__device__ __forceinline__ void wgmma_tf32(float (&d)[BN / 2], const unsigned (&a)[4], std::uint64_t db) {
  if constexpr (BN == 256)
    wgmma::wgmma_m64n256k8_tf32(d, a, db, 1);
  else
    wgmma::wgmma_m64n128k8_tf32(d, a, db, 1);
}

/// SWAPPED: D = C^T (X = B^T, Y = A); otherwise D = C (X = op(A), Y = B stored [N, K]).
/// X_K_CONTIGUOUS: X's rows run along k in memory.
template <int BN, bool SWAPPED, bool X_K_CONTIGUOUS>
__global__ void __launch_bounds__(kThreads, 1) matmul_wgmma_tf32_kernel(GemmProblem p, simt::Operand x, simt::Operand y) {
  using XLayout = mma::Tf32Tile<kBX, kBK, X_K_CONTIGUOUS>;
  using XCopy = mma::Tf32Copy<XLayout, kThreads>;
  constexpr int kXBytes = XLayout::kElements * 4, kYBytes = BN * kBK * 4;
  constexpr int kYOffset = (kXBytes + 1023) / 1024 * 1024;  // Y's swizzle needs a 1024-byte boundary
  constexpr int kStageBytes = kYOffset + kYBytes;
  extern __shared__ std::uint8_t tf32_smem[];
  std::uint8_t* smem = tf32_smem + ((1024 - (ptx::shared_address(tf32_smem) & 1023)) & 1023);
  float d[BN / 2];  // this thread's part of the warpgroup's 64 x BN accumulator (mma::store_wgmma_d)
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) d[i] = 0.f;
  // BEGIN Task 7.8 (device): kernel 13's four-stage loop with X in registers: wait for tile t, round this thread's Y copies, fence, sync, start tile t + 2; per 8 of k load this warpgroup's X fragment (rounded, into the step's register set) and issue one wgmma with Y's descriptor; wait for the step before; at the end wait for all (the store of D that follows is given)
  // HINT: X fragment of warp w of the warpgroup: mma::load_a_tf32 at row 64 wg + 16 w; Y descriptor wgmma::descriptor(Y tile + 32 s, 16, 1024) for s = 0..3.
  const int wg = threadIdx.x / 128, warp = (threadIdx.x / 32) % 4;
  const int x0 = blockIdx.y * kBX, y0 = blockIdx.x * BN;
  int k_begin, k_end;
  simt::k_range(p, k_begin, k_end);
  const int tiles = k_end > k_begin ? (k_end - k_begin + kBK - 1) / kBK : 0;
  auto x_tile = [&](int t) { return reinterpret_cast<float*>(smem + (t % kStages) * kStageBytes); };
  auto y_tile = [&](int t) { return smem + (t % kStages) * kStageBytes + kYOffset; };
  auto start = [&](int t) {
    XCopy::copy(x_tile(t), x, x0, k_begin + t * kBK, k_end);
    YFill<BN>::start(y_tile(t), y, y0, k_begin + t * kBK, k_end);
  };
  for (int t = 0; t < kStages - 2; ++t) {
    if (t < tiles) start(t);
    ptx::cp_async_commit();
  }
  unsigned a[2][kBK / 8][4];  // X fragments of even and odd steps
  // One step: `set` (0 or 1, a constant, so that a[] stays in registers) holds tile t's fragments.
  auto step = [&](int t, auto set) {
    constexpr int kSet = decltype(set)::value;
    ptx::cp_async_wait<kStages - 3>();  // tile t has landed (this thread's copies)
    YFill<BN>::round_own(y_tile(t));     // the tensor cores read Y as it lies: round it there
    wgmma::fence_shared_for_async();
    __syncthreads();                     // tile t is whole; everyone's wgmma of tile t - 2 are done
    if (t + kStages - 2 < tiles) start(t + kStages - 2);
    ptx::cp_async_commit();
#pragma unroll
    for (int s = 0; s < kBK / 8; ++s)
      mma::load_a_tf32<X_K_CONTIGUOUS, XLayout>(a[kSet][s], x_tile(t), wg * 64 + warp * 16, 8 * s);
    wgmma::fence();
#pragma unroll
    for (int s = 0; s < kBK / 8; ++s) wgmma_tf32<BN>(d, a[kSet][s], wgmma::descriptor(y_tile(t) + 32 * s, 16, 1024));
    wgmma::commit_group();
    wgmma::wait_group<1>();  // tile t - 1's wgmma are done: the other set is free again
#pragma unroll
    for (int s = 0; s < kBK / 8; ++s)
#pragma unroll
      for (int i = 0; i < 4; ++i) wgmma::keep_until_here(a[1 - kSet][s][i]);
  };
  int t = 0;
  for (; t + 1 < tiles; t += 2) {
    step(t, std::integral_constant<int, 0>{});
    step(t + 1, std::integral_constant<int, 1>{});
  }
  if (t < tiles) step(t, std::integral_constant<int, 0>{});
  wgmma::wait_group<0>();
#pragma unroll
  for (int s = 0; s < kBK / 8; ++s)
#pragma unroll
    for (int i = 0; i < 4; ++i) wgmma::keep_until_here(a[0][s][i]), wgmma::keep_until_here(a[1][s][i]);
  // END Task 7.8
  mma::store_wgmma_d<BN, SWAPPED>(p, d, blockIdx.y * kBX + (threadIdx.x / 128) * 64, blockIdx.x * BN);
}

template <int BN, bool SWAPPED, bool X_K_CONTIGUOUS>
void launch(const GemmProblem& p, const simt::Operand& x, const simt::Operand& y, cudaStream_t stream) {
  using XLayout = mma::Tf32Tile<kBX, kBK, X_K_CONTIGUOUS>;
  constexpr int x_bytes = (XLayout::kElements * 4 + 1023) / 1024 * 1024;
  constexpr int bytes = kStages * (x_bytes + BN * kBK * 4) + 1024;
  static const bool raised = [] {
    CUDA_CHECK(cudaFuncSetAttribute(matmul_wgmma_tf32_kernel<BN, SWAPPED, X_K_CONTIGUOUS>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    return true;
  }();
  (void)raised;
  const dim3 grid((y.outer + BN - 1) / BN, (x.outer + kBX - 1) / kBX, simt::k_slices(p));
  matmul_wgmma_tf32_kernel<BN, SWAPPED, X_K_CONTIGUOUS><<<grid, kThreads, bytes, stream>>>(p, x, y);
  CUDA_CHECK_LAUNCH();
}

template <bool SWAPPED, bool X_K_CONTIGUOUS>
void launch_sized(const GemmProblem& p, const simt::Operand& x, const simt::Operand& y, cudaStream_t stream) {
  // 128 x 256 blocks where there are enough of them to fill the GPU, else 128 x 128.
  const long wide = static_cast<long>((x.outer + kBX - 1) / kBX) * ((y.outer + 255) / 256) * simt::k_slices(p);
  if (y.outer >= 256 && wide >= multiprocessor_count())
    launch<256, SWAPPED, X_K_CONTIGUOUS>(p, x, y, stream);
  else
    launch<128, SWAPPED, X_K_CONTIGUOUS>(p, x, y, stream);
}

}  // namespace

void matmul_wgmma_tf32(const GemmProblem& p, cudaStream_t stream) {
  // BEGIN Task 7.8: choose the roles (B stored [N, K]: X = op(A), Y = B; else A stored [M, K]: X = B^T, Y = A, D = C^T; neither: kernel 11) and launch when Y's rows are 16-byte aligned multiples of 4 values on a Hopper GPU
  const simt::Operand a = simt::operand_a(p), b = simt::operand_b(p);
  const bool slices_fit = p.k_slice % 4 == 0;
  if (wgmma_available() && slices_fit && p.trans_b && b.vec) {  // Y = B, stored [N, K]
    if (p.trans_a)
      launch_sized<false, false>(p, a, b, stream);
    else
      launch_sized<false, true>(p, a, b, stream);
  } else if (wgmma_available() && slices_fit && !p.trans_a && a.vec) {  // Y = A [M, K]; X = B^T from B [K, N]
    launch_sized<true, false>(p, b, a, stream);
  } else {
    matmul_tf32_mma(p, stream);
  }
  // END Task 7.8
}

}  // namespace course
