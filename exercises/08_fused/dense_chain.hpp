/// @file dense_chain.hpp
/// @brief Stage 08 (given, not a task): the dense chain's two kernels' arguments, their planners and their launchers (host side).
#pragma once

#include <cuda_runtime.h>

#include "08_fused/fused_common.hpp"
#include "08_fused/sgd_multi_tensor.hpp"
#include "08_fused/softmax_xent.hpp"

namespace course {

/// Most dense layers (the head included) the dense chain runs.
constexpr int kChainMaxLayers = 8;
/// Blocks of one thread block cluster of the dense chain: the largest cluster every GPU with clusters runs.
constexpr int kChainCluster = 8;
/// Most examples one cluster of the dense chain takes: one warp each in the head.
constexpr int kChainMaxRows = kFusedThreads / 32;
/// The update's tiles of a weight gradient: kChainTile outputs by kChainTile inputs, summed over the batch.
constexpr int kChainTile = 32;
/// The update stages the batch kChainStageRows examples at a time.
constexpr int kChainStageRows = 64;

/// One dense layer of the chain: y = act(x W^T + b), W [OUT, IN]. The last layer is the head (act None).
struct ChainLayer {
  int IN, OUT;
  FusedAct act;
  const float* w;  ///< [OUT, IN]
  const float* b;  ///< [OUT]
  float* y;        ///< [B, OUT], the layer's output (not the head's), for the next layer's weight gradient
  float* dz;       ///< [B, OUT], dL/dz, z = x W^T + b: what the layer's weight and bias gradients sum
};

/// The forward pass, the loss and every input gradient of an all-dense model, in one launch
/// of clusters of kChainCluster blocks (dense_chain.cu).
///
/// Cluster c takes examples [c rows, (c + 1) rows): the batch gather, every layer
/// forward, the head's loss and dL/dz, and the gradients back to the first layer's dz.
/// Those need no other example, so nothing leaves the cluster but what the update reads.
/// Inside a cluster, block r of a hidden layer computes outputs [r chunk, (r + 1) chunk)
/// (chunk = ceil(OUT / kChainCluster)) of its rows and writes them into the shared
/// memory of every block of the cluster (distributed shared memory); a cluster barrier
/// later, every block holds the whole layer's output and goes on to the next layer.
/// The head and the last hidden layer's dz are small (K outputs): every block computes
/// them itself. Below them, block r computes columns [r chunk, (r + 1) chunk) of each
/// dz and hands them on the same way.
struct DenseChainArgs {
  int B, L;  ///< examples, layers (the last one the head, K = layer[L - 1].OUT classes)
  FusedLoss loss;
  ChainLayer layer[kChainMaxLayers];
  // the batch gather (the engine's gather_batch_at_device_step): row n is example order[*step * batch + n]
  const float* images;  ///< [N, IN of layer 0]
  const int* labels;    ///< [N]
  const int* order;
  const int* step;
  int batch;
  float* x;  ///< [B, IN of layer 0]: the gathered batch, for the first layer's weight gradient
  double* loss_sum;             ///< += the B per-example losses
  unsigned long long* correct;  ///< += the rows whose first arg-max is the label
  int rows;      ///< examples per cluster, at most kChainMaxRows
  int clusters;  ///< ceil(B / rows)
  int blocks;    ///< clusters * kChainCluster
  int smem_bytes;
};

/// The dense chain of `L` layers for a batch of B: `rows` examples a cluster, as many as
/// fit in kFusedSharedBudget and still give the launch at least `min_blocks` blocks (the
/// GPU's multiprocessors; 0: no such floor), at least 1. Measured on the H100 for the
/// `mlp` at batch 64 (lesson 08): 3 rows (176 blocks) 0.0309 s an epoch, 4 rows (128
/// blocks, a few multiprocessors idle) 0.0323 s, 6 rows (the most that fit) 0.0333 s. Throws std::invalid_argument for more than
/// kChainMaxLayers layers, more than kHeadMaxClasses classes, a null pointer, or
/// layers too wide for one row's activations and gradients to fit in shared memory.
DenseChainArgs plan_dense_chain(int B, const ChainLayer* layers, int L, FusedLoss loss, const float* images,
                                const int* labels, const int* order, const int* step, int batch, float* x,
                                double* loss_sum, unsigned long long* correct, int min_blocks);
/// The shared memory one cluster block of the chain needs for `rows` examples.
int dense_chain_smem_bytes(const ChainLayer* layers, int L, int rows);
/// Throws std::invalid_argument unless `layers` is 1 to kChainMaxLayers layers, each of at least one input
/// and output, with its w, b, dz (and y, below the head), each taking what the one below gives, and a head
/// of at most kHeadMaxClasses classes; `function` names the caller in the message (both planners check).
void check_chain_layers(const ChainLayer* layers, int L, const char* function);
/// Queues the chain of `a` on `stream` (clusters of kChainCluster blocks; needs sm_90).
void dense_chain_gpu(const DenseChainArgs& a, cudaStream_t stream = 0, bool early = false);

/// One layer of the chain's update: its weight gradient dW = dz^T x and bias gradient
/// db = column sums of dz, summed over the whole batch by one block per tile, then SGD
/// with momentum on the layer's W and b where they sit in the flat parameter buffer.
struct ChainUpdateLayer {
  int IN, OUT;
  const float* x;   ///< [B, IN], the layer's input
  const float* dz;  ///< [B, OUT]
  long long w_offset, b_offset;  ///< in params and velocity
  int o_tiles, i_tiles;          ///< tiles of kChainTile x kChainTile
  int first_block;               ///< the layer's first block
};

/// The rest of the step in one launch: every weight and bias gradient, each summed over
/// the batch by one block in a fixed order (no partial sums, no atomics), and the update
/// right where the gradient is finished. Block 0's first thread also copies the running
/// loss into the loss check's slot and advances the step counter, as Task 8.7's kernel does.
struct DenseChainUpdateArgs {
  int B, L;
  ChainUpdateLayer layer[kChainMaxLayers];
  float* params;
  float* velocity;
  const float* hyper;  ///< {lr, momentum}, read when the kernel runs
  int* step;           ///< or null
  LossCheckCopy loss;  ///< set by the engine
  int blocks;
  int smem_bytes;
};

/// The update's tiles for the chain's layers (the same `layers` as plan_dense_chain, with
/// x the chain's gathered batch and each layer's offsets in the flat buffer).
DenseChainUpdateArgs plan_dense_chain_update(int B, const ChainLayer* layers, int L, const float* x,
                                             const long long* w_offsets, const long long* b_offsets, float* params,
                                             float* velocity, const float* hyper, int* step);
/// Queues the chain's update of `a` on `stream`.
void dense_chain_update_gpu(const DenseChainUpdateArgs& a, cudaStream_t stream = 0, bool early = false);

/// What the phase list (fused_phases.hpp) reads of the two kernels: their blocks, their shared memory and
/// their traffic.
inline int phase_blocks(const DenseChainArgs& a) { return a.blocks; }
inline int phase_smem_bytes(const DenseChainArgs& a) { return a.smem_bytes; }
KernelTraffic phase_traffic(const DenseChainArgs& a);
inline int phase_blocks(const DenseChainUpdateArgs& a) { return a.blocks; }
inline int phase_smem_bytes(const DenseChainUpdateArgs& a) { return a.smem_bytes; }
KernelTraffic phase_traffic(const DenseChainUpdateArgs& a);

}  // namespace course
