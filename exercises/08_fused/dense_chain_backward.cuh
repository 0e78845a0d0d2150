/// @file dense_chain_backward.cuh
/// @brief Stage 08 (given, not a task, device): the dense chain's input gradients, from the head's dz down to the first layer's (dense_chain.cu).
#pragma once

#include "08_fused/dense_chain_forward.cuh"

namespace course {

#if COURSE_CHAIN_HAS_CLUSTERS
/// dz of the last hidden layer h = L - 2, every column, in every block: the head's K outputs are few.
template <int KC>
__device__ void chain_last_hidden_dz(const DenseChainArgs& a, int n0, int rank, float* smem, const ChainSmem& at) {
  constexpr int kMax = KC > 0 ? KC : kHeadMaxClasses;
  const int h = a.L - 2;
  const ChainLayer& head = a.layer[a.L - 1];
  const ChainLayer& ly = a.layer[h];
  const int K = head.OUT, width = ly.OUT, pitch = round_up_to_4(width), k_pitch = round_up_to_4(K);
  const int chunk = (width + kChainCluster - 1) / kChainCluster;
  const float* y = smem + at.act[h + 1];
  const float* dz_head = smem + at.dz[a.L - 1];
  float* dz = smem + at.dz[h];
  for (int i = static_cast<int>(threadIdx.x); i < width; i += blockDim.x) {
    float wk[kMax];  // column i of the head's W, in registers (every loop over k unrolled)
#pragma unroll
    for (int k = 0; k < kMax; ++k) wk[k] = KC > 0 || k < K ? head.w[static_cast<long long>(k) * head.IN + i] : 0.f;
    const bool mine = i / chunk == rank;  // this block writes its chunk's columns to global memory
    for (int e = 0; e < a.rows; ++e) {
      float sum = 0.f;
#pragma unroll
      for (int k = 0; k < kMax; ++k)
        if (KC > 0 || k < K) sum += dz_head[e * k_pitch + k] * wk[k];
      const float v = sum * fused_slope(ly.act, y[e * pitch + i]);
      dz[e * pitch + i] = v;
      if (mine && n0 + e < a.B) ly.dz[static_cast<long long>(n0 + e) * width + i] = v;
    }
  }
  __syncthreads();
}

/// dz of layer l - 1 from dz of layer l, the block's chunk of columns: lanes take 32 columns, warps split the
/// sum over OUT of layer l, and the warps' partial sums meet in shared memory, added in warp order.
__device__ inline void chain_input_gradient(const DenseChainArgs& a, int l, int n0, int rank,
                                            cg::cluster_group& cluster, float* smem, const ChainSmem& at) {
  const ChainLayer& ly = a.layer[l];
  const ChainLayer& below = a.layer[l - 1];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int width = ly.IN, pitch = round_up_to_4(width), out_pitch = round_up_to_4(ly.OUT);
  const int chunk = (width + kChainCluster - 1) / kChainCluster;
  const int c0 = rank * chunk, c1 = min(width, c0 + chunk);
  const float* dz_l = smem + at.dz[l];
  const float* y = smem + at.act[l];  // layer l - 1's output: its slope
  float* scratch = smem + at.scratch;
  const bool hand_on = l - 1 > 0;  // the first layer's dz is only for its weight gradient
  for (int base = c0; base < c1; base += 32) {
    const int c = base + lane;
    const bool valid = c < c1;
    float acc[kChainMaxRows];
#pragma unroll
    for (int e = 0; e < kChainMaxRows; ++e) acc[e] = 0.f;
#pragma unroll 8
    for (int o = warp; o < ly.OUT; o += kChainWarps) {
      const float wv = valid ? ly.w[static_cast<long long>(o) * ly.IN + c] : 0.f;
#pragma unroll
      for (int e = 0; e < kChainMaxRows; ++e)
        if (e < a.rows) acc[e] += dz_l[e * out_pitch + o] * wv;
    }
#pragma unroll
    for (int e = 0; e < kChainMaxRows; ++e)
      if (e < a.rows) scratch[(warp * a.rows + e) * 32 + lane] = acc[e];
    __syncthreads();
    if (static_cast<int>(threadIdx.x) < a.rows * 32) {
      const int e = static_cast<int>(threadIdx.x) / 32, cc = base + lane;
      float sum = 0.f;
      for (int w = 0; w < kChainWarps; ++w) sum += scratch[(w * a.rows + e) * 32 + lane];
      if (cc < c1) {
        const float v = sum * fused_slope(below.act, y[e * pitch + cc]);
        if (n0 + e < a.B) below.dz[static_cast<long long>(n0 + e) * width + cc] = v;
        if (hand_on) store_in_every_block(cluster, smem, at.dz[l - 1] + e * pitch + cc, v);
      }
    }
    __syncthreads();  // the scratch is free again
  }
  if (hand_on) cluster.sync();
}
#endif  // COURSE_CHAIN_HAS_CLUSTERS

}  // namespace course
