/// @file dense_chain.cu
/// @brief Stage 08 (given, not a task): an all-dense model's training step in two kernels; the first, in thread block clusters, its planner and its launch.
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
///
/// The chain's device functions sit in dense_chain_forward.cuh (its shared
/// memory, the layers forward, the head) and dense_chain_backward.cuh (the
/// input gradients); the update in dense_chain_update.cu.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "08_fused/dense_chain.hpp"
#include "08_fused/dense_chain_backward.cuh"
#include "08_fused/dense_chain_forward.cuh"
#include "08_fused/fused_common.cuh"
#include "common/gpu/cuda_check.hpp"

namespace course {

namespace {

int ceil_div(int a, int b) { return (a + b - 1) / b; }

}  // namespace

void check_chain_layers(const ChainLayer* layers, int L, const char* function) {
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

int dense_chain_smem_bytes(const ChainLayer* layers, int L, int rows) {
  return 4 * chain_smem(layers, L, rows).total;
}

DenseChainArgs plan_dense_chain(int B, const ChainLayer* layers, int L, FusedLoss loss, const float* images,
                                const int* labels, const int* order, const int* step, int batch, float* x,
                                double* loss_sum, unsigned long long* correct, int min_blocks) {
  check_chain_layers(layers, L, "plan_dense_chain");
  if (B < 1 || batch < B)
    throw std::invalid_argument("plan_dense_chain: a batch of " + std::to_string(B) + " in steps of " +
                                std::to_string(batch));
  if (x == nullptr || loss_sum == nullptr || correct == nullptr || step == nullptr)
    throw std::invalid_argument("plan_dense_chain: x, step, loss_sum and correct must not be null");
  DenseChainArgs a{.B = B, .L = L, .loss = loss, .images = images, .labels = labels, .order = order, .step = step,
                   .batch = batch, .x = x, .loss_sum = loss_sum, .correct = correct};
  std::copy(layers, layers + L, a.layer);
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
KernelTraffic phase_traffic(const DenseChainArgs& a) {
  const long long B = a.B;
  KernelTraffic t;
  t.kernel = "dense chain (clusters)";
  // the images and labels of the batch, every W and b (once per cluster: they come from the L2 cache)
  t.bytes_read = float_bytes(B * a.layer[0].IN) + 4LL * 2 * B;
  t.bytes_written = float_bytes(B * a.layer[0].IN);  // the gathered batch
  for (int l = 0; l < a.L; ++l) {
    const ChainLayer& ly = a.layer[l];
    t.bytes_read += float_bytes(static_cast<long long>(ly.OUT) * ly.IN + ly.OUT);
    t.bytes_written += float_bytes(B * ly.OUT * (l + 1 < a.L ? 2 : 1));  // y (not the head's) and dz
  }
  return t;
}

}  // namespace course
