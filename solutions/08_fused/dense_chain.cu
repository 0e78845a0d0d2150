/// @file dense_chain.cu
/// @brief Stage 08 (given, not a task): an all-dense model's training step in two kernels, the first in thread block clusters.
///
/// Tasks 8.4 to 8.7 run a dense layer as a kernel of its own each way, and a
/// sum over a layer's inputs is spread over blocks that must meet again: the
/// last block of a tile adds the others' slices (Task 8.4), the update adds
/// the weight gradients' slices (Task 8.7). For the `cnn` that is a small part
/// of the step. For the `mlp` (784 -> 256 -> 128 -> 10) it is the whole step:
/// seven kernels, each mostly waiting on memory for a few microseconds of
/// arithmetic (lesson 08, "Why the `mlp` misses 2x").
///
/// Two facts let the same step run as two kernels:
///
/// 1. Everything but the weight gradients is per example. The forward pass, the
///    loss and every input gradient of example n read only example n (and the
///    weights). So a group of blocks can take a few examples from the gather to
///    the first layer's dz without waiting for any other group.
/// 2. A thread block cluster (sm_90) is such a group: its blocks run at the same
///    time, each can write into the others' shared memory (distributed shared
///    memory), and `cluster.sync()` is a barrier for the cluster alone. A layer's
///    outputs are split over the cluster's blocks, and each block hands its share
///    to all the others: no trip through global memory, no other kernel.
///
/// The first kernel, the chain, runs in clusters of kChainCluster blocks, each
/// cluster `rows` examples (a = dense_chain_args, one row = one example):
///
///     gather       x[e] = images[order[*step * batch + n0 + e]]        every block, all IN of its rows
///     layer l      y_l[e][o] = act(b[o] + sum_i y_{l-1}[e][i] W[o][i]) block r: outputs o of its chunk,
///                                                                        written to every block; cluster.sync()
///     head         z = y W^T + b, L, dz = dL/dz                        every block, one warp a row
///     last hidden  dz[e][i] = act'(y[e][i]) sum_k dz_head[e][k] W[k][i] every block, every i
///     below        dz_{l-1}[e][c] = act'(y_{l-1}[e][c]) sum_o dz_l[e][o] W_l[o][c]
///                                                                       block r: columns c of its chunk, handed
///                                                                        on like the forward outputs
///
/// and writes what the weight gradients need: the gathered batch, each hidden
/// layer's output and every layer's dz. The second kernel, the update, gives each
/// 32 x 32 tile of every dW = dz^T x (and db) to one block, which sums the whole
/// batch in order and applies SGD with momentum right there: no partial sums,
/// no atomics, the same bits every run. The step is then two kernels, not seven.
#include <cooperative_groups.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "08_fused/fused_common.cuh"
#include "08_fused/fused_kernels.hpp"
#include "08_fused/sgd_multi_tensor.cuh"
#include "common/cuda_check.hpp"

namespace course {

namespace cg = cooperative_groups;

namespace {

constexpr int kWarps = kFusedThreads / 32;

int ceil_div(int a, int b) { return (a + b - 1) / b; }

/// Where a block of the chain keeps its rows in shared memory (offsets in floats, each a multiple of 4).
struct ChainSmem {
  int act[kChainMaxLayers];  ///< the input of layer l: rows x round_up_to_4(IN)
  int dz[kChainMaxLayers];   ///< dL/dz of layer l: rows x round_up_to_4(OUT)
  int scratch;               ///< kWarps x rows x 32 partial sums of an input gradient
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
  at += kWarps * rows * 32;
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
/// time (o, o + kWarps, ...), its lanes split the sum over IN, and a shuffle tree adds the lanes' shares.
__device__ inline void chain_layer_forward(const DenseChainArgs& a, int l, int n0, int rank, cg::cluster_group& cluster,
                                           float* smem, const ChainSmem& at) {
  constexpr int J = kChainOutputsPerWarp;
  const ChainLayer& ly = a.layer[l];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int in_pitch = round_up_to_4(ly.IN), out_pitch = round_up_to_4(ly.OUT);
  const float* in = smem + at.act[l];
  const int chunk = (ly.OUT + kChainCluster - 1) / kChainCluster;
  const int o0 = rank * chunk, o1 = min(ly.OUT, o0 + chunk);
  for (int base = o0 + warp; base < o1; base += kWarps * J) {
    float acc[J][kChainMaxRows], bias[J];
    const float* wr[J];
    bool has[J];
#pragma unroll
    for (int j = 0; j < J; ++j) {
      has[j] = base + j * kWarps < o1;  // the same for the whole warp
      wr[j] = ly.w + static_cast<long long>(has[j] ? base + j * kWarps : base) * ly.IN;
      bias[j] = has[j] ? ly.b[base + j * kWarps] : 0.f;  // loaded beside W, not after the sums
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
    const int j = lane / a.rows, e = lane % a.rows, o = base + j * kWarps;
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
    for (int o = warp; o < ly.OUT; o += kWarps) {
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
      for (int w = 0; w < kWarps; ++w) sum += scratch[(w * a.rows + e) * 32 + lane];
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

void check_layers(const ChainLayer* layers, int L, const char* function) {
  if (layers == nullptr || L < 1 || L > kChainMaxLayers)
    throw std::invalid_argument(std::string(function) + ": the dense chain runs 1 to " +
                                std::to_string(kChainMaxLayers) + " layers, got " + std::to_string(L));
  for (int l = 0; l < L; ++l) {
    const ChainLayer& ly = layers[l];
    if (ly.IN < 1 || ly.OUT < 1 || ly.w == nullptr || ly.b == nullptr || ly.dz == nullptr ||
        (l + 1 < L && ly.y == nullptr))
      throw std::invalid_argument(std::string(function) + ": layer " + std::to_string(l) +
                                  " needs sizes of at least 1 and its w, b, dz (and y, below the head)");
    if (l > 0 && ly.IN != layers[l - 1].OUT)
      throw std::invalid_argument(std::string(function) + ": layer " + std::to_string(l) + " takes " +
                                  std::to_string(ly.IN) + " inputs, and the layer below gives " +
                                  std::to_string(layers[l - 1].OUT));
  }
  if (layers[L - 1].OUT > kHeadMaxClasses)
    throw std::invalid_argument(std::string(function) + ": the head takes at most " +
                                std::to_string(kHeadMaxClasses) + " classes, got " + std::to_string(layers[L - 1].OUT));
}

}  // namespace

/// The chain, launched in clusters of kChainCluster blocks (dense_chain_gpu).
__global__ void __launch_bounds__(kFusedThreads) dense_chain_kernel(DenseChainArgs a) {
#if !COURSE_CHAIN_HAS_CLUSTERS
  __trap();
#else
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const int n0 = static_cast<int>(blockIdx.x) / kChainCluster * a.rows;
  float* smem = fused_shared_memory();
  const ChainSmem at = chain_smem(a.layer, a.L, a.rows);
  wait_for_previous_kernel();

  // The gather: each row's example, then the rows (every block all of them; block r writes its chunk of
  // columns of the gathered batch for the first layer's weight gradient).
  int* source = reinterpret_cast<int*>(smem + at.source);
  int* label = reinterpret_cast<int*>(smem + at.label);
  if (static_cast<int>(threadIdx.x) < a.rows) {
    const int n = n0 + static_cast<int>(threadIdx.x);
    const int e = n < a.B ? a.order[static_cast<long long>(*a.step) * a.batch + n] : -1;
    source[threadIdx.x] = e;
    label[threadIdx.x] = e >= 0 ? a.labels[e] : 0;
  }
  __syncthreads();
  const int IN = a.layer[0].IN, pitch = round_up_to_4(IN);
  const int chunk = (IN + kChainCluster - 1) / kChainCluster;
  float* x = smem + at.act[0];
  if (IN % 4 == 0) {  // whole float4s: rows of images, of x and of the shared copy all 16-byte aligned
    const int per_row = IN / 4;
    stage_in_flight<4>(
        a.rows * per_row,
        [&](int j) {
          const int e = source[j / per_row];
          return e >= 0 ? reinterpret_cast<const float4*>(a.images + static_cast<long long>(e) * IN)[j % per_row]
                        : make_float4(0.f, 0.f, 0.f, 0.f);
        },
        [&](int j, float4 v) {
          const int r = j / per_row, i = j % per_row * 4;
          *reinterpret_cast<float4*>(x + r * pitch + i) = v;
          if (source[r] >= 0)  // this block's columns of the gathered batch (a chunk need not end on a float4)
#pragma unroll
            for (int k = 0; k < 4; ++k)
              if ((i + k) / chunk == rank) a.x[static_cast<long long>(n0 + r) * IN + i + k] = (&v.x)[k];
        });
  } else {
    stage_in_flight<8>(
        a.rows * IN,
        [&](int j) {
          const int e = source[j / IN];
          return e >= 0 ? a.images[static_cast<long long>(e) * IN + j % IN] : 0.f;
        },
        [&](int j, float v) {
          const int r = j / IN, i = j % IN;
          x[r * pitch + i] = v;
          if (source[r] >= 0 && i / chunk == rank) a.x[static_cast<long long>(n0 + r) * IN + i] = v;
        });
  }
  // Every block of the cluster must have started before any writes into its shared memory; the same
  // barrier makes this block's rows visible to its own threads.
  cluster.sync();

  for (int l = 0; l + 1 < a.L; ++l) chain_layer_forward(a, l, n0, rank, cluster, smem, at);
  const bool ten = a.layer[a.L - 1].OUT == 10;  // the `mlp`'s head, compiled for its 10 classes
  if (ten)
    chain_head<10>(a, n0, rank, smem, at);
  else
    chain_head<0>(a, n0, rank, smem, at);
  __syncthreads();
  if (a.L < 2) return;
  if (ten)
    chain_last_hidden_dz<10>(a, n0, rank, smem, at);
  else
    chain_last_hidden_dz<0>(a, n0, rank, smem, at);
  for (int l = a.L - 2; l >= 1; --l) chain_input_gradient(a, l, n0, rank, cluster, smem, at);
#endif
}

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

int dense_chain_smem_bytes(const ChainLayer* layers, int L, int rows) {
  return 4 * chain_smem(layers, L, rows).total;
}

DenseChainArgs plan_dense_chain(int B, const ChainLayer* layers, int L, FusedLoss loss, const float* images,
                                const int* labels, const int* order, const int* step, int batch, float* x,
                                double* loss_sum, unsigned long long* correct, int min_blocks) {
  check_layers(layers, L, "plan_dense_chain");
  if (B < 1 || batch < B)
    throw std::invalid_argument("plan_dense_chain: a batch of " + std::to_string(B) + " in steps of " +
                                std::to_string(batch));
  if (x == nullptr || loss_sum == nullptr || correct == nullptr || step == nullptr)
    throw std::invalid_argument("plan_dense_chain: x, step, loss_sum and correct must not be null");
  DenseChainArgs a{};
  a.B = B;
  a.L = L;
  a.loss = loss;
  std::copy(layers, layers + L, a.layer);
  a.images = images;
  a.labels = labels;
  a.order = order;
  a.step = step;
  a.batch = batch;
  a.x = x;
  a.loss_sum = loss_sum;
  a.correct = correct;
  // Each cluster reads every W once for its rows: the more rows a cluster, the fewer times W is read. But
  // the fewer clusters too: as many rows as leave at least min_blocks blocks (one per multiprocessor) and fit.
  const int spread = min_blocks > 0 ? B * kChainCluster / min_blocks : B;
  a.rows = 0;
  for (int rows = std::max(1, std::min({kChainMaxRows, B, spread})); rows >= 1 && a.rows == 0; --rows)
    if (dense_chain_smem_bytes(layers, L, rows) <= kFusedSharedBudget) a.rows = rows;
  if (a.rows == 0)
    throw std::invalid_argument("plan_dense_chain: one example's activations and gradients need " +
                                std::to_string(dense_chain_smem_bytes(layers, L, 1)) +
                                " bytes of shared memory, more than the " + std::to_string(kFusedSharedBudget) +
                                " a block is given");
  a.clusters = ceil_div(B, a.rows);
  a.blocks = a.clusters * kChainCluster;
  a.smem_bytes = dense_chain_smem_bytes(layers, L, a.rows);
  return a;
}

void dense_chain_gpu(const DenseChainArgs& a, cudaStream_t stream, bool early) {
  launch_fused_kernel(dense_chain_kernel, a.blocks, a.smem_bytes, stream, a, early, kChainCluster);
  CUDA_CHECK_LAUNCH();
}

DenseChainUpdateArgs plan_dense_chain_update(int B, const ChainLayer* layers, int L, const float* x,
                                             const long long* w_offsets, const long long* b_offsets, float* params,
                                             float* velocity, const float* hyper, int* step) {
  check_layers(layers, L, "plan_dense_chain_update");
  if (B < 1 || x == nullptr || params == nullptr || velocity == nullptr || hyper == nullptr)
    throw std::invalid_argument("plan_dense_chain_update: a batch of at least 1 and x, params, velocity, hyper");
  DenseChainUpdateArgs a{};
  a.B = B;
  a.L = L;
  a.params = params;
  a.velocity = velocity;
  a.hyper = hyper;
  a.step = step;
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

}  // namespace course
