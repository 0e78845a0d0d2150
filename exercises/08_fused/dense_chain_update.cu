/// @file dense_chain_update.cu
/// @brief Stage 08 (given, not a task): the dense chain's second kernel: every weight gradient, each summed whole by one block, and SGD.
///
/// The chain (dense_chain.cu) leaves what the weight gradients need: the
/// gathered batch, each hidden layer's output and every layer's dz. This
/// kernel gives each 32 x 32 tile of every dW = dz^T x (and db) to one block,
/// which sums the whole batch in order and applies SGD with momentum right
/// there: no partial sums, no atomics, the same bits every run.
#include <stdexcept>
#include <string>

#include "08_fused/dense_chain.hpp"
#include "08_fused/fused_common.cuh"
#include "08_fused/sgd_multi_tensor.cuh"
#include "common/gpu/cuda_check.hpp"

namespace course {

namespace {

int ceil_div(int a, int b) { return (a + b - 1) / b; }

}  // namespace

/// One kChainTile x kChainTile tile of one layer's dW (and, for the first column of tiles, db), summed over the
/// batch, then SGD on it. Thread t takes output row t / 8 of the tile and 4 inputs, 4 (t % 8) to 4 (t % 8) + 3.
__global__ void __launch_bounds__(kFusedThreads) dense_chain_update_kernel(DenseChainUpdateArgs a) {
  constexpr int kXPitch = kChainTile + 4;  // float4 reads of a row of x stay 16-byte aligned
  __shared__ __align__(16) float dz_s[kChainStageRows][kChainTile];
  __shared__ __align__(16) float x_s[kChainStageRows][kXPitch];
  wait_for_previous_kernel();
  const int block = static_cast<int>(blockIdx.x), t = static_cast<int>(threadIdx.x);
  if (block == 0 && t == 0 && a.step != nullptr) {  // Task 8.7's duties: the loss check's copy, the counter
    copy_running_loss_to_slot(a.loss, a.step);
    *a.step += 1;
  }
  int l = -1;
  for (int k = 0; k < a.L; ++k)
    if (a.layer[k].first_block <= block) l = k;
  if (l < 0) return;
  const ChainUpdateLayer& ly = a.layer[l];
  const int tile = block - ly.first_block;
  if (tile >= ly.o_tiles * ly.i_tiles) return;
  const int o_base = tile / ly.i_tiles * kChainTile, i_base = tile % ly.i_tiles * kChainTile;
  const int ol = t / 8, il = t % 8 * 4, o = o_base + ol;
  const bool bias = i_base == 0 && t < kChainTile && o_base + t < ly.OUT;  // the first column of tiles sums db too
  // The parameters and velocities this thread updates, loaded first: they need nothing of the sums below,
  // so their loads wait beside the staging's instead of after the sums.
  float w[4] = {0.f, 0.f, 0.f, 0.f}, v[4] = {0.f, 0.f, 0.f, 0.f}, wb = 0.f, vb = 0.f;
#pragma unroll
  for (int j = 0; j < 4; ++j)
    if (o < ly.OUT && i_base + il + j < ly.IN) {
      const long long p = ly.w_offset + static_cast<long long>(o) * ly.IN + i_base + il + j;
      w[j] = a.params[p];
      v[j] = a.velocity[p];
    }
  if (bias) {
    wb = a.params[ly.b_offset + o_base + t];
    vb = a.velocity[ly.b_offset + o_base + t];
  }
  float acc[4] = {0.f, 0.f, 0.f, 0.f}, bacc = 0.f;
  for (int n0 = 0; n0 < a.B; n0 += kChainStageRows) {
    const int rows = min(kChainStageRows, a.B - n0);
    constexpr int kPerThread = kChainStageRows * kChainTile / kFusedThreads;
    float dv[kPerThread], xv[kPerThread];
#pragma unroll
    for (int u = 0; u < kPerThread; ++u) {
      const int j = t + u * kFusedThreads, r = j / kChainTile, c = j % kChainTile;
      const bool in_batch = r < rows;
      dv[u] = in_batch && o_base + c < ly.OUT ? ly.dz[static_cast<long long>(n0 + r) * ly.OUT + o_base + c] : 0.f;
      xv[u] = in_batch && i_base + c < ly.IN ? ly.x[static_cast<long long>(n0 + r) * ly.IN + i_base + c] : 0.f;
    }
#pragma unroll
    for (int u = 0; u < kPerThread; ++u) {
      const int j = t + u * kFusedThreads, r = j / kChainTile, c = j % kChainTile;
      dz_s[r][c] = dv[u];
      x_s[r][c] = xv[u];
    }
    __syncthreads();
    for (int r = 0; r < rows; ++r) {
      const float d = dz_s[r][ol];
      const float4 xr = *reinterpret_cast<const float4*>(&x_s[r][il]);
      acc[0] += d * xr.x;
      acc[1] += d * xr.y;
      acc[2] += d * xr.z;
      acc[3] += d * xr.w;
      if (bias) bacc += dz_s[r][t];
    }
    __syncthreads();
  }
  const float lr = a.hyper[0], momentum = a.hyper[1];
#pragma unroll
  for (int j = 0; j < 4; ++j)
    if (o < ly.OUT && i_base + il + j < ly.IN) {
      const long long p = ly.w_offset + static_cast<long long>(o) * ly.IN + i_base + il + j;
      v[j] = momentum * v[j] + acc[j];
      a.velocity[p] = v[j];
      a.params[p] = w[j] - lr * v[j];
    }
  if (bias) {
    const long long p = ly.b_offset + o_base + t;
    vb = momentum * vb + bacc;
    a.velocity[p] = vb;
    a.params[p] = wb - lr * vb;
  }
}

DenseChainUpdateArgs plan_dense_chain_update(int B, const ChainLayer* layers, int L, const float* x,
                                             const long long* w_offsets, const long long* b_offsets, float* params,
                                             float* velocity, const float* hyper, int* step) {
  check_chain_layers(layers, L, "plan_dense_chain_update");
  if (B < 1 || x == nullptr || params == nullptr || velocity == nullptr || hyper == nullptr)
    throw std::invalid_argument("plan_dense_chain_update: a batch of at least 1 and x, params, velocity, hyper");
  DenseChainUpdateArgs a{.B = B, .L = L, .params = params, .velocity = velocity, .hyper = hyper, .step = step};
  int blocks = 0;
  for (int l = 0; l < L; ++l) {
    ChainUpdateLayer& u = a.layer[l];
    u.IN = layers[l].IN;
    u.OUT = layers[l].OUT;
    u.x = l == 0 ? x : layers[l - 1].y;
    u.dz = layers[l].dz;
    u.w_offset = w_offsets[l];
    u.b_offset = b_offsets[l];
    u.o_tiles = ceil_div(u.OUT, kChainTile);
    u.i_tiles = ceil_div(u.IN, kChainTile);
    u.first_block = blocks;
    blocks += u.o_tiles * u.i_tiles;
  }
  a.blocks = blocks;
  // Static, not dynamic (the kernel declares its tiles): for the step table. dz's tile, then x's.
  a.smem_bytes = static_cast<int>(sizeof(float)) * kChainStageRows * (kChainTile + kChainTile + 4);
  return a;
}

void dense_chain_update_gpu(const DenseChainUpdateArgs& a, cudaStream_t stream, bool early) {
  launch_fused_kernel(dense_chain_update_kernel, a.blocks, 0, stream, a, early);
  CUDA_CHECK_LAUNCH();
}
KernelTraffic phase_traffic(const DenseChainUpdateArgs& a) {
  const long long B = a.B;
  KernelTraffic t;
  t.kernel = "dense chain update";
  for (int l = 0; l < a.L; ++l) {
    const ChainUpdateLayer& ly = a.layer[l];
    const long long params = static_cast<long long>(ly.OUT) * ly.IN + ly.OUT;
    t.bytes_read += float_bytes(B * (ly.IN + ly.OUT) + 2 * params);  // x, dz; W, b and their velocities
    t.bytes_written += float_bytes(2 * params);
  }
  return t;
}

}  // namespace course
