/// @file dense_chain_forward.cuh
/// @brief Stage 08 (given, not a task, device): the dense chain's shared memory, its forward layers and its head (dense_chain.cu).
#pragma once

#include <cooperative_groups.h>

#include "08_fused/dense_chain.hpp"
#include "08_fused/fused_common.cuh"

namespace course {

namespace cg = cooperative_groups;

/// Warps of a block of the chain.
constexpr int kChainWarps = kFusedThreads / 32;

/// Where a block of the chain keeps its rows in shared memory (offsets in floats, each a multiple of 4).
struct ChainSmem {
  int act[kChainMaxLayers];  ///< the input of layer l: rows x round_up_to_4(IN)
  int dz[kChainMaxLayers];   ///< dL/dz of layer l: rows x round_up_to_4(OUT)
  int scratch;               ///< kChainWarps x rows x 32 partial sums of an input gradient
  int source;                ///< rows ints: each row's example in the data set (-1: past B)
  int label;                 ///< rows ints
  int total;
};

__host__ __device__ inline ChainSmem chain_smem(const ChainLayer* layers, int L, int rows) {
  ChainSmem s{};
  int at = 0;
  for (int l = 0; l < L; ++l) {
    s.act[l] = at;
    at += rows * round_up_to_4(layers[l].IN);
  }
  for (int l = 0; l < L; ++l) {
    s.dz[l] = at;
    at += rows * round_up_to_4(layers[l].OUT);
  }
  s.scratch = at;
  at += kChainWarps * rows * 32;
  s.source = at;
  at += round_up_to_4(rows);
  s.label = at;
  at += round_up_to_4(rows);
  s.total = at;
  return s;
}

// Clusters need sm_90. A build for several architectures (80 to 90, where CMake sees a GPU) compiles the
// chain for the older ones as a kernel that stops at once: the engine never launches it there
// (FusedEngine::dense_chain_enabled asks for compute capability 9.0).
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
#define COURSE_CHAIN_HAS_CLUSTERS 1
#else
#define COURSE_CHAIN_HAS_CLUSTERS 0
#endif

#if COURSE_CHAIN_HAS_CLUSTERS
/// Writes v at `offset` floats into the shared memory of every block of the cluster (this one's too).
__device__ inline void store_in_every_block(cg::cluster_group& cluster, float* smem, int offset, float v) {
#pragma unroll
  for (int q = 0; q < kChainCluster; ++q) cluster.map_shared_rank(smem, q)[offset] = v;
}

/// Outputs a warp of the chain's forward sums at once: their loads of W are in flight together.
constexpr int kChainOutputsPerWarp = 4;

/// Hidden layer l forward for the block's chunk of outputs: a warp takes kChainOutputsPerWarp outputs at a
/// time (o, o + kChainWarps, ...), its lanes split the sum over IN, and a shuffle tree adds the lanes' shares.
__device__ inline void chain_layer_forward(const DenseChainArgs& a, int l, int n0, int rank, cg::cluster_group& cluster,
                                           float* smem, const ChainSmem& at) {
  constexpr int J = kChainOutputsPerWarp;
  const ChainLayer& ly = a.layer[l];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int in_pitch = round_up_to_4(ly.IN), out_pitch = round_up_to_4(ly.OUT);
  const float* in = smem + at.act[l];
  const int chunk = (ly.OUT + kChainCluster - 1) / kChainCluster;
  const int o0 = rank * chunk, o1 = min(ly.OUT, o0 + chunk);
  for (int base = o0 + warp; base < o1; base += kChainWarps * J) {
    float acc[J][kChainMaxRows], bias[J];
    const float* wr[J];
    bool has[J];
#pragma unroll
    for (int j = 0; j < J; ++j) {
      has[j] = base + j * kChainWarps < o1;  // the same for the whole warp
      wr[j] = ly.w + static_cast<long long>(has[j] ? base + j * kChainWarps : base) * ly.IN;
      bias[j] = has[j] ? ly.b[base + j * kChainWarps] : 0.f;  // loaded beside W, not after the sums
#pragma unroll
      for (int e = 0; e < kChainMaxRows; ++e) acc[j][e] = 0.f;
    }
    if (ly.IN % 4 == 0) {  // rows of W and of the activations start on 16-byte boundaries
#pragma unroll 4
      for (int q = lane; q < ly.IN / 4; q += 32) {
        float4 wv[J];
#pragma unroll
        for (int j = 0; j < J; ++j)
          wv[j] = has[j] ? reinterpret_cast<const float4*>(wr[j])[q] : make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
        for (int e = 0; e < kChainMaxRows; ++e)
          if (e < a.rows) {
            const float4 xv = *reinterpret_cast<const float4*>(in + e * in_pitch + 4 * q);
#pragma unroll
            for (int j = 0; j < J; ++j)
              acc[j][e] += xv.x * wv[j].x + xv.y * wv[j].y + xv.z * wv[j].z + xv.w * wv[j].w;
          }
      }
    } else {
#pragma unroll 2
      for (int i = lane; i < ly.IN; i += 32) {
        float wv[J];
#pragma unroll
        for (int j = 0; j < J; ++j) wv[j] = has[j] ? wr[j][i] : 0.f;
#pragma unroll
        for (int e = 0; e < kChainMaxRows; ++e)
          if (e < a.rows) {
            const float xv = in[e * in_pitch + i];
#pragma unroll
            for (int j = 0; j < J; ++j) acc[j][e] += xv * wv[j];
          }
      }
    }
    // Lane j * rows + e keeps output j of row e.
    float mine = 0.f, mine_bias = 0.f;
#pragma unroll
    for (int j = 0; j < J; ++j)
#pragma unroll
      for (int e = 0; e < kChainMaxRows; ++e)
        if (e < a.rows && has[j]) {
#pragma unroll
          for (int offset = 16; offset > 0; offset /= 2) acc[j][e] += __shfl_xor_sync(0xffffffffu, acc[j][e], offset);
          if (lane == j * a.rows + e) {
            mine = acc[j][e];
            mine_bias = bias[j];
          }
        }
    const int j = lane / a.rows, e = lane % a.rows, o = base + j * kChainWarps;
    if (j < J && o < o1) {
      const float v = fused_activate(ly.act, mine + mine_bias);
      store_in_every_block(cluster, smem, at.act[l + 1] + e * out_pitch + o, v);
      if (n0 + e < a.B) ly.y[static_cast<long long>(n0 + e) * ly.OUT + o] = v;
    }
  }
  cluster.sync();  // every block now holds the layer's whole output
}

/// The head (every block, for all its rows: warp e takes row e): logits, loss, dz. KC > 0: K known to the compiler.
template <int KC>
__device__ void chain_head(const DenseChainArgs& a, int n0, int rank, float* smem, const ChainSmem& at) {
  constexpr int kMax = KC > 0 ? KC : kHeadMaxClasses;
  const ChainLayer& ly = a.layer[a.L - 1];
  const int K = ly.OUT;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  if (warp >= a.rows) return;
  const int e = warp, n = n0 + e;
  const bool has_row = n < a.B;
  const float* x = smem + at.act[a.L - 1] + e * round_up_to_4(ly.IN);
  float* dz = smem + at.dz[a.L - 1] + e * round_up_to_4(K);
  float z[kMax];
#pragma unroll
  for (int k = 0; k < kMax; ++k) z[k] = 0.f;
  if (has_row) {
    for (int i = lane; i < ly.IN; i += 32) {
      const float xv = x[i];
#pragma unroll
      for (int k = 0; k < kMax; ++k)
        if (KC > 0 || k < K) z[k] += xv * ly.w[static_cast<long long>(k) * ly.IN + i];
    }
#pragma unroll
    for (int k = 0; k < kMax; ++k)
      if (KC > 0 || k < K) {
#pragma unroll
        for (int offset = 16; offset > 0; offset /= 2) z[k] += __shfl_xor_sync(0xffffffffu, z[k], offset);
        z[k] += ly.b[k];
      }
    const int label = reinterpret_cast<const int*>(smem + at.label)[e];
    float top = z[0], z_label = z[0];
    int best = 0;
#pragma unroll
    for (int k = 1; k < kMax; ++k)
      if (KC > 0 || k < K) {
        if (z[k] > top) {
          top = z[k];
          best = k;
        }
        if (k == label) z_label = z[k];
      }
    float loss = 0.f;
    if (a.loss == FusedLoss::CrossEntropy) {
      float sum = 0.f;
#pragma unroll
      for (int k = 0; k < kMax; ++k)
        if (KC > 0 || k < K) {
          z[k] = expf(z[k] - top);
          sum += z[k];
        }
      loss = logf(sum) - (z_label - top);
      const float inv_b = 1.f / static_cast<float>(a.B);
#pragma unroll
      for (int k = 0; k < kMax; ++k)
        if (KC > 0 || k < K) z[k] = (z[k] / sum - (k == label ? 1.f : 0.f)) * inv_b;
    } else {
      const float scale = 1.f / (static_cast<float>(a.B) * static_cast<float>(K));
#pragma unroll
      for (int k = 0; k < kMax; ++k)
        if (KC > 0 || k < K) {
          const float diff = z[k] - (k == label ? 1.f : 0.f);
          loss += diff * diff;
          z[k] = 2.f * diff * scale;
        }
      loss /= static_cast<float>(K);
    }
    if (rank == 0 && lane == 0) {  // every block computed the same: one adds it
      atomicAdd(a.loss_sum, static_cast<double>(loss));
      if (best == label) atomicAdd(a.correct, 1ull);
    }
  }  // a row past B keeps z = 0: its dz
  if (lane == 0)
#pragma unroll
    for (int k = 0; k < kMax; ++k)
      if (KC > 0 || k < K) {
        dz[k] = z[k];
        if (rank == 0 && has_row) ly.dz[static_cast<long long>(n) * K + k] = z[k];
      }
}

#endif  // COURSE_CHAIN_HAS_CLUSTERS

}  // namespace course
