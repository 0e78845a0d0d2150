/// @file matmul_16_tma_bf16_sm90a.cu
/// @brief Stage 07, kernel 16 (given, not a task): kernel 13 (BF16 wgmma) with kernel 15's TMA copies and split roles.
///
/// Kernel 13's 8 warps copy and multiply in turn, and wait for the slowest copy at a
/// __syncthreads() every step. Kernel 16 moves kernel 15's pipeline (tma.cuh) to BF16:
///
///     block: warpgroup 0 copies, warpgroups 1 and 2 multiply 64 rows of A each by B's 256 columns
///     copier:      for t: wait until stage t % 4 is free; TMA A's 128 x 64 and B's 256 x 64 -> stage
///     multipliers: for t: wait until tile t has loaded; 4 wgmma m64n256k16 straight from shared
///                         memory; wait for tile t - 1's; mark stage (t - 1) % 4 free
///
/// BF16 wgmma reads both operands from shared memory in either layout, so, unlike TF32,
/// nothing goes through registers: a K-major operand comes as one box of 64 values of k
/// (128 bytes) per row, an M- or N-major one as boxes of 64 x 64, each one of kernel 13's
/// 64-column blocks; kernel 13's descriptors read them. Given BF16 matrices (gemm_bf16) it
/// copies them as they are. Given FP32 ones (gemm) it first rounds both to BF16 (round to
/// nearest, ties to even: rounding.cuh) into workspaces, one read of each FP32 matrix and
/// one write of half its size, where kernel 13 rounds every value of every tile it loads.
/// Products without split-K whose BF16 rows are multiples of 8 values and 16-byte aligned
/// run here on a Hopper GPU; the others go to kernel 13.
#include <cuda.h>

#include <cstdint>
#include <string>

#include "04_cuda_matmul/matmul_kernels.hpp"
#include "07_fast_gemm/fast_gemm_kernels.hpp"
#include "07_fast_gemm/mma_tiles.cuh"
#include "07_fast_gemm/ptx.cuh"
#include "07_fast_gemm/rounding.cuh"
#include "07_fast_gemm/tma.cuh"
#include "07_fast_gemm/wgmma.cuh"
#include "common/gpu/cuda_check.hpp"

namespace course {

namespace {

constexpr int kBM = 128, kBN = 256, kBK = 64, kStages = 4, kThreads = 384;
constexpr int kABytes = kBM * kBK * 2, kBBytes = kBN * kBK * 2;  // 16 KiB, 32 KiB
constexpr int kStageBytes = kABytes + kBBytes;
constexpr int kBlockBytes = 64 * kBK * 2;  // one 64-column block of an M- or N-major tile (kernel 13's)

template <bool A_K_MAJOR, bool B_K_MAJOR>
__global__ void __launch_bounds__(kThreads, 1)
    matmul_tma_bf16_kernel(GemmProblem p, const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map) {
  extern __shared__ std::uint8_t tma_bf16_smem[];
  std::uint8_t* smem = tma_bf16_smem + ((1024 - (ptx::shared_address(tma_bf16_smem) & 1023)) & 1023);
  __shared__ std::uint64_t loaded[kStages], stage_free[kStages];
  tma::Pipeline<kStages> pipeline{loaded, stage_free};
  const int wg = threadIdx.x / 128;
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  const int tiles = (p.K + kBK - 1) / kBK;
  auto a_tile = [&](int t) { return smem + (t % kStages) * kStageBytes; };
  auto b_tile = [&](int t) { return smem + (t % kStages) * kStageBytes + kABytes; };
  pipeline.init(256);  // stage_free waits for every multiplying thread

  if (wg == 0) {  // the copier
    tma::release_registers<40>();
    if (threadIdx.x != 0) return;
    for (int t = 0; t < tiles; ++t) {
      const int k0 = t * kBK;
      std::uint64_t* barrier = pipeline.expect_tile(t, kStageBytes);
      if (A_K_MAJOR)
        tma::load_2d(a_tile(t), &a_map, k0, row0, barrier);
      else
        for (int b = 0; b < kBM / 64; ++b) tma::load_2d(a_tile(t) + b * kBlockBytes, &a_map, row0 + 64 * b, k0, barrier);
      if (B_K_MAJOR)
        tma::load_2d(b_tile(t), &b_map, k0, col0, barrier);
      else
        for (int b = 0; b < kBN / 64; ++b) tma::load_2d(b_tile(t) + b * kBlockBytes, &b_map, col0 + 64 * b, k0, barrier);
    }
    return;
  }

  tma::claim_registers<232>();
  const int mg = wg - 1;
  float d[kBN / 2];
#pragma unroll
  for (int i = 0; i < kBN / 2; ++i) d[i] = 0.f;
  for (int t = 0; t < tiles; ++t) {
    pipeline.wait_loaded(t);
    const std::uint8_t* ta = a_tile(t);
    const std::uint8_t* tb = b_tile(t);
    wgmma::fence();
#pragma unroll
    for (int s = 0; s < kBK / 16; ++s) {  // kernel 13's descriptors, one per 16 of k
      const std::uint64_t da = A_K_MAJOR ? wgmma::descriptor(ta + mg * 64 * 128 + 32 * s, 16, 1024)
                                         : wgmma::descriptor(ta + mg * kBlockBytes + 2048 * s, kBlockBytes, 1024);
      const std::uint64_t db = B_K_MAJOR ? wgmma::descriptor(tb + 32 * s, 16, 1024)
                                         : wgmma::descriptor(tb + 2048 * s, kBlockBytes, 1024);
      wgmma::wgmma_m64n256k16_bf16<A_K_MAJOR ? 0 : 1, B_K_MAJOR ? 0 : 1>(d, da, db, 1);
    }
    wgmma::commit_group();
    wgmma::wait_group<1>();  // tile t - 1's wgmma are done with their stage
    if (t >= 1) pipeline.release(t - 1);
  }
  wgmma::wait_group<0>();
  const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  const int m = row0 + mg * 64 + warp * 16 + lane / 4;
#pragma unroll
  for (int j = 0; j < kBN / 8; ++j) {
    const int n = col0 + 8 * j + 2 * (lane % 4);
    mma::store_c2(p, m, n, d[4 * j], d[4 * j + 1]);
    mma::store_c2(p, m + 8, n, d[4 * j + 2], d[4 * j + 3]);
  }
}

/// FP32 values rounded to BF16 (ties to even), 2 at a time.
__global__ void round_to_bf16_kernel(const float2* __restrict__ in, std::uint32_t* __restrict__ out, std::size_t pairs) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < pairs;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float2 v = in[i];
    out[i] = round_to_bf16_bits(v.x) | (static_cast<std::uint32_t>(round_to_bf16_bits(v.y)) << 16);
  }
}

/// The tensor map of a row-major BF16 matrix [rows, ld] of which `cols` columns are used, in
/// boxes of box_rows x 64 columns (tma.cuh).
CUtensorMap tensor_map(const void* data, int cols, int rows, int ld, int box_rows) {
  return tma::tensor_map_2d(data, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, cols, rows, ld, box_rows, "kernel 16");
}

template <bool A_K_MAJOR, bool B_K_MAJOR>
void launch(const GemmProblem& p, const void* A, const void* B, cudaStream_t stream) {
  constexpr int bytes = kStages * kStageBytes + 1024;  // + the slack that aligns the tiles to 1024 bytes
  static const bool raised = [] {
    CUDA_CHECK(cudaFuncSetAttribute(matmul_tma_bf16_kernel<A_K_MAJOR, B_K_MAJOR>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    return true;
  }();
  (void)raised;
  // A [M, K] (K-major) or stored [K, M]; B stored [N, K] (K-major) or [K, N].
  const CUtensorMap a_map = A_K_MAJOR ? tensor_map(A, p.K, p.M, p.K, kBM) : tensor_map(A, p.M, p.K, p.M, 64);
  const CUtensorMap b_map = B_K_MAJOR ? tensor_map(B, p.K, p.N, p.K, kBN) : tensor_map(B, p.N, p.K, p.N, 64);
  const dim3 grid((p.N + kBN - 1) / kBN, (p.M + kBM - 1) / kBM);
  matmul_tma_bf16_kernel<A_K_MAJOR, B_K_MAJOR><<<grid, kThreads, bytes, stream>>>(p, a_map, b_map);
  CUDA_CHECK_LAUNCH();
}

void launch_any_layout(const GemmProblem& p, const void* A, const void* B, cudaStream_t stream) {
  if (!p.trans_a && p.trans_b)
    launch<true, true>(p, A, B, stream);
  else if (!p.trans_a)
    launch<true, false>(p, A, B, stream);
  else if (p.trans_b)
    launch<false, true>(p, A, B, stream);
  else
    launch<false, false>(p, A, B, stream);
}

/// Can kernel 16 take p, with its operands (BF16, or FP32 to be rounded into dense BF16 copies) at A and B?
bool fits(const GemmProblem& p, const void* A, const void* B) {
  const auto aligned = [](const void* x) { return reinterpret_cast<std::uintptr_t>(x) % 16 == 0; };
  return wgmma_available() && p.k_slice == 0 && p.K > 0 && aligned(A) && aligned(B) &&
         (p.trans_a ? p.M : p.K) % 8 == 0 && (p.trans_b ? p.K : p.N) % 8 == 0;
}

/// `count` FP32 values rounded to BF16 into a workspace from the stream's memory pool.
std::uint16_t* rounded_to_bf16(const float* x, std::size_t count, cudaStream_t stream) {
  auto* out = static_cast<std::uint16_t*>(tma::stream_workspace(count * sizeof(std::uint16_t), stream));
  const std::size_t pairs = count / 2;  // count is a multiple of 8 (fits())
  round_to_bf16_kernel<<<tma::grid_stride_blocks(pairs, 256), 256, 0, stream>>>(
      reinterpret_cast<const float2*>(x), reinterpret_cast<std::uint32_t*>(out), pairs);
  CUDA_CHECK_LAUNCH();
  return out;
}

}  // namespace

void matmul_tma_bf16(const GemmProblem& p, cudaStream_t stream) {
  if (!fits(p, p.A, p.B)) {
    matmul_wgmma(p, stream);
    return;
  }
  std::uint16_t* a = rounded_to_bf16(p.A, static_cast<std::size_t>(p.M) * p.K, stream);
  std::uint16_t* b = rounded_to_bf16(p.B, static_cast<std::size_t>(p.K) * p.N, stream);
  launch_any_layout(p, a, b, stream);
  CUDA_CHECK(cudaFreeAsync(a, stream));
  CUDA_CHECK(cudaFreeAsync(b, stream));
}

void matmul_tma_bf16_inputs(const GemmProblem& p, const __nv_bfloat16* A, const __nv_bfloat16* B, cudaStream_t stream) {
  if (fits(p, A, B))
    launch_any_layout(p, A, B, stream);
  else
    matmul_wgmma_bf16_inputs(p, A, B, stream);
}

}  // namespace course
