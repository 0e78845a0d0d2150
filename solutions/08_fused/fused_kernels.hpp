/// @file fused_kernels.hpp
/// @brief Stage 08: the fused kernels' arguments, their planners and their launchers (host side).
///
/// A stage 08 training step runs a handful of kernels, each doing the work of
/// several layers of stages 05 and 06:
///
/// | kernel (launcher)              | does the work of                                                  | task     |
/// |--------------------------------|-------------------------------------------------------------------|----------|
/// | conv_block_forward_gpu         | conv (stride 1) + bias + activation + max-pool Q x Q, stride Q     | 8.1      |
/// | conv_block_backward_gpu        | pool backward + activation slope + bias and weight gradients; the input gradient | 8.2, 8.3 |
/// | dense_forward_gpu              | dense + bias + activation (split-K, finished by the last block)    | 8.4      |
/// | dense_backward_gpu             | activation slope + weight, bias and input gradients                | 8.5      |
/// | softmax_head_gpu               | the last dense layer + softmax cross-entropy, both ways            | 8.6      |
/// | sgd_multi_tensor_gpu           | the end of every weight-gradient sum + SGD with momentum, all tensors | 8.7   |
/// | persistent_step_gpu            | all of the above in one launch, phases apart by grid.sync()        | 8.8      |
/// | dense_chain_gpu                | an all-dense model's forward, loss and input gradients, in clusters | given   |
/// | dense_chain_update_gpu         | its weight gradients, each summed whole, and SGD                   | given    |
///
/// Every kernel runs blocks of kFusedThreads threads, and every kernel's work
/// is a __device__ function of (its arguments, a block index, its shared
/// memory). A `__global__` wrapper passes blockIdx.x; the persistent kernel
/// passes virtual block indices, one phase after another. The arguments are
/// plain structs, made on the host by a planner that cuts the work into
/// blocks (how many images, filters and channels each block takes, how much
/// shared memory it needs) and read by the device function: the planner and
/// the device function of a task are written together.
///
/// Layouts are stage 02's (NCHW, weights [F, C, K, K]) and stage 01's (dense
/// weights [OUT, IN], activations [B, D]). Everything is device memory.
///
/// **Partial sums.** A weight gradient sums over the whole batch. The backward
/// kernels leave that sum in `slices` partial sums per weight, one per group of
/// examples, each added up in a fixed order by one thread: `dw_partials` holds
/// [slices][F][C][K][K] (conv) or [slices][OUT][IN] (dense), `db_partials`
/// [slices][F]. The update kernel (Task 8.7) adds the slices, in order, as it
/// applies SGD. No float is ever added with an atomic: the same inputs give the
/// same bits every run.
#pragma once

#include <cstddef>
#include <string>

#include <cuda_runtime.h>

#include "common/arch.hpp"

namespace course {

/// Threads per block of every stage 08 kernel.
constexpr int kFusedThreads = 256;
/// The most shared memory a planner gives one block, in bytes: under the 48 KiB a
/// kernel may use without opting in, with room for the persistent kernel's own.
constexpr int kFusedSharedBudget = 46 * 1024;
/// Output positions a conv block tile gives its threads (kFusedThreads / kConvSlots
/// thread groups of 4 filters or channels each).
constexpr int kConvSlots = 64;
/// Filters (forward) or input channels (input gradient) one conv block takes: 4 per thread group.
constexpr int kConvGroup = kFusedThreads / kConvSlots * 4;
/// Dense kernels: output tiles of kDenseTile x kDenseTile, the sum over IN staged kDenseChunk at a time.
constexpr int kDenseTile = 32;
constexpr int kDenseChunk = 128;
/// Dense forward: the shortest slice of a split sum over IN. Short slices give a
/// short layer more blocks (fc2 of `cnn-deep`, 128 inputs: 4 slices and 16 blocks
/// instead of 1 slice and 4); measured on the H100 against a floor of 128 (one
/// chunk), 32 took the `mlp` from 0.051 to 0.047 s an epoch and `cnn-deep` from
/// 0.140 to 0.135 s, and the `cnn` from 0.0970 to 0.0982 s, which
/// kDenseLoadsInFlight then more than won back (lesson 08).
constexpr int kDenseMinSlice = 32;
/// Dense backward: examples per partial sum of the weight gradient.
constexpr int kDenseRowsPerSlice = 64;
/// Softmax head: examples per block (one warp each).
constexpr int kHeadRows = kFusedThreads / 32;
/// The most classes the head takes: each lane keeps a row's logits in registers (Task 8.6).
constexpr int kHeadMaxClasses = 32;

/// The activation a fused kernel applies in its epilogue (None: the identity).
enum class FusedAct : int { None = 0, ReLU, LeakyReLU, Sigmoid, Tanh, Softplus };
/// The FusedAct of a spec's activation.
FusedAct fused_act(Activation a);
/// "relu", ..., "none".
const char* fused_act_name(FusedAct a);

/// The loss of the softmax head.
enum class FusedLoss : int { CrossEntropy = 0, Mse };

// ---- Task 8.1 ---------------------------------------------------------------------------

/// A fused conv block: conv (F filters of K x K, padding P, stride 1) + bias +
/// activation + max-pool with a Q x Q window and stride Q, no padding (Q = 1: no
/// pool). Make one with make_conv_block_shape(), which fills the derived sizes.
///
///     x [B, C, H, W]  ->  z [B, F, Ho, Wo] = conv(x) + b  ->  a = act(z)  ->  y [B, F, Hq, Wq] = maxpool(a)
///     Ho = H + 2P - K + 1, Wo = W + 2P - K + 1, Hq = floor(Ho / Q), Wq = floor(Wo / Q)
///
/// Only y and the window offset of each maximum, argmax [B, F, Hq, Wq] (dh * Q + dw,
/// one byte), are written: z and a never reach memory.
struct ConvBlockShape {
  int C, H, W;   ///< input example [C, H, W]
  int F, K, P;   ///< filters, kernel size, padding
  int Q;         ///< pool window and stride (1: no pool)
  FusedAct act;  ///< activation between the conv and the pool
  int Ho, Wo;    ///< conv output
  int Hq, Wq;    ///< block output, after the pool
};

/// The shape of a fused conv block, checked: K in {1, 3, 5} and Q in {1, 2}
/// (the instantiated kernels), every size at least 1, an output of at least
/// 1 x 1 after the pool. Throws std::invalid_argument naming what does not fit.
ConvBlockShape make_conv_block_shape(int C, int H, int W, int F, int K, int P, int Q, FusedAct act);
/// "conv 16 -> 32, 3x3, pad 1 + relu + max-pool 2 on 16x14x14"
std::string describe(const ConvBlockShape& s);

/// The forward kernel's arguments and its tiling (plan_conv_block_forward).
///
/// Block b covers `images` examples, kConvGroup filters and a tile of
/// tile_h x tile_w outputs of y; its index is
/// `b = (image_group * filter_groups + filter_group) * tiles_h * tiles_w + tile`.
/// The block's `images * tile_h * tile_w` positions take the first slots of
/// kConvSlots (image-major, then row, then column); when they leave slots over
/// (a small plane: conv3 of `cnn-deep` has 3 x 3 outputs, 9 of the 64 slots),
/// `splits` copies of them share each position's sum over the input channels.
/// Thread t takes slot t % kConvSlots, that is position (t % kConvSlots) %
/// positions and part (t % kConvSlots) / positions, and filters 4 (t / kConvSlots)
/// to 4 (t / kConvSlots) + 3 of the block's; part p sums the staged channels p,
/// p + splits, p + 2 splits, ... The input tile with its halo,
/// (tile_h Q + K - 1) x (tile_w Q + K - 1) per image and channel, is staged
/// `chans` channels at a time.
struct ConvForwardArgs {
  ConvBlockShape s;
  int B;
  const float* x;          ///< [B, C, H, W]
  const float* w;          ///< [F, C, K, K]
  const float* b;          ///< [F]
  float* y;                ///< [B, F, Hq, Wq]
  unsigned char* argmax;   ///< [B, F, Hq, Wq], window offsets (unused when Q = 1)
  int tile_h, tile_w;      ///< outputs of y per tile
  int tiles_h, tiles_w;    ///< tiles per plane
  int images;              ///< examples per block (images * tile_h * tile_w <= kConvSlots)
  int image_groups;        ///< ceil(B / images)
  int filter_groups;       ///< ceil(F / kConvGroup)
  int chans;               ///< input channels per shared-memory stage
  int splits;              ///< threads sharing a position's channel sum (kConvSlots / positions, at most C)
  int blocks;
  int smem_bytes;          ///< dynamic shared memory per block
};

/// The forward tiling for a batch of B on `target_blocks` (about two blocks per
/// multiprocessor) (Task 8.1). Throws std::invalid_argument for B < 1 or a null pointer
/// (argmax may be null when s.Q = 1).
ConvForwardArgs plan_conv_block_forward(const ConvBlockShape& s, int B, const float* x, const float* w,
                                        const float* b, float* y, unsigned char* argmax, int target_blocks);
/// Queues the forward kernel of `a` on `stream`.
void conv_block_forward_gpu(const ConvForwardArgs& a, cudaStream_t stream = 0, bool early = false);

// ---- Tasks 8.2 and 8.3 -----------------------------------------------------------------------

/// The backward kernel's arguments: two independent parts in one launch.
///
/// Blocks [0, weight_blocks) sum the weight and bias gradients (Task 8.2): block
/// `b = (slice * wg_filter_groups + filter_group) * wg_chan_groups + chan_group`
/// takes wg_images examples, wg_filters filters and wg_chans input channels (their
/// padded planes wg_pitch floats apart in shared memory), gives each (filter,
/// channel) pair wg_split threads, and writes its partial sums to slice `slice` of
/// dw_partials (and, for chan_group 0, of db_partials). Blocks [weight_blocks, weight_blocks + input_blocks) compute the
/// input gradient (Task 8.3): block
/// `b = (image_group * ig_chan_groups + chan_group) * ig_tiles_h * ig_tiles_w + tile`
/// takes ig_images examples, kConvGroup input channels and a tile of
/// ig_tile_h x ig_tile_w cells of dx, staging ig_filters filters of the output
/// gradient at a time.
///
/// The gradient of the conv output, dz = dL/dz, is never stored: both parts
/// rebuild it where they need it from dy = dL/dy, y and argmax,
///
///     dz[n][f][oh][ow] = dy[n][f][oh / Q][ow / Q] * act'(y[n][f][oh / Q][ow / Q])
///                        if (oh % Q) * Q + ow % Q is the window's argmax, else 0,
///
/// since the pool routes each output's gradient to its window's maximum, and the
/// activation's slope at that cell can be read from y alone (fused_common.cuh).
struct ConvBackwardArgs {
  ConvBlockShape s;
  int B;
  const float* x;               ///< [B, C, H, W], the block's input
  const float* w;               ///< [F, C, K, K]
  const float* y;               ///< [B, F, Hq, Wq], the block's output
  const unsigned char* argmax;  ///< [B, F, Hq, Wq] (unused when Q = 1)
  const float* dy;              ///< [B, F, Hq, Wq], dL/dy
  float* dw_partials;           ///< [wg_slices, F, C, K, K]; null: no weight-gradient part
  float* db_partials;           ///< [wg_slices, F]
  float* dx;                    ///< [B, C, H, W], overwritten; null: no input-gradient part
  // the weight-gradient part (Task 8.2)
  int wg_images, wg_slices;
  int wg_filters, wg_filter_groups;
  int wg_chans, wg_chan_groups;
  int wg_pitch, wg_split;
  int weight_blocks;
  // the input-gradient part (Task 8.3)
  int ig_tile_h, ig_tile_w, ig_tiles_h, ig_tiles_w;
  int ig_images, ig_image_groups, ig_chan_groups;
  int ig_filters;
  int input_blocks;
  int smem_bytes;  ///< the larger need of the two parts
};

/// The backward tiling (Task 8.2 plans the weight-gradient part when dw_partials is
/// not null, Task 8.3 the input-gradient part when dx is not null). `wg_images`
/// examples per slice when positive; 0 chooses from target_blocks (an engine plans
/// its full batch first and passes that choice for a smaller last batch, so that
/// the partial buffers sized for the full batch are never exceeded).
ConvBackwardArgs plan_conv_block_backward(const ConvBlockShape& s, int B, const float* x, const float* w,
                                          const float* y, const unsigned char* argmax, const float* dy,
                                          float* dw_partials, float* db_partials, float* dx, int target_blocks,
                                          int wg_images = 0);
/// Queues the backward kernel of `a` on `stream`.
void conv_block_backward_gpu(const ConvBackwardArgs& a, cudaStream_t stream = 0, bool early = false);

// ---- Task 8.4 ---------------------------------------------------------------------------------

/// y = act(x W^T + b) for x [B, IN], W [OUT, IN], b [OUT], y [B, OUT].
///
/// Block b takes the output tile (row_tile, col_tile) of kDenseTile x kDenseTile and
/// the slice k_slice of the sum over IN, [k_slice * k_len, (k_slice + 1) * k_len):
/// `b = k_slice * row_tiles * col_tiles + row_tile * col_tiles + col_tile`. With one
/// slice the block finishes its outputs itself; with more, each block writes its
/// partial sums to `partials` [k_slices, B, OUT], and the last block of a tile to
/// arrive (counted in counters[tile], which it puts back to 0) adds the slices in
/// order 0, 1, ..., then applies the bias and the activation.
struct DenseForwardArgs {
  int B, IN, OUT;
  FusedAct act;
  const float* x;
  const float* w;
  const float* b;
  float* y;
  float* partials;          ///< [k_slices, B, OUT] (k_slices > 1)
  unsigned int* counters;   ///< [row_tiles * col_tiles], all 0 between launches (k_slices > 1)
  int row_tiles, col_tiles;
  int k_slices, k_len;
  int blocks;
  int smem_bytes;
};

/// The dense forward tiling (Task 8.4): at most `max_k_slices` slices of the sum
/// over IN (partials and counters must hold that many), chosen from target_blocks.
DenseForwardArgs plan_dense_forward(int B, int IN, int OUT, FusedAct act, const float* x, const float* w,
                                    const float* b, float* y, float* partials, unsigned int* counters,
                                    int target_blocks, int max_k_slices);
/// Queues the dense forward kernel of `a` on `stream`.
void dense_forward_gpu(const DenseForwardArgs& a, cudaStream_t stream = 0, bool early = false);

// ---- Task 8.5 ---------------------------------------------------------------------------------

/// Backward of y = act(x W^T + b), given dy = dL/dy and y itself:
///
///     dz = dy * act'(y)    dW = dz^T x (in slices of kDenseRowsPerSlice examples)    db = column sums of dz    dx = dz W
///
/// Blocks [0, weight_blocks): `b = (slice * o_tiles + o_tile) * i_tiles + i_tile`, a
/// kDenseTile x kDenseTile tile of dW (and, for i_tile 0, of db) summed over the
/// examples of the slice. Blocks [weight_blocks, weight_blocks + input_blocks):
/// `b = n_tile * i_tiles + i_tile`, a tile of dx summed over every output.
struct DenseBackwardArgs {
  int B, IN, OUT;
  FusedAct act;
  const float* x;    ///< [B, IN]
  const float* w;    ///< [OUT, IN]
  const float* y;    ///< [B, OUT], the layer's output
  const float* dy;   ///< [B, OUT]
  float* dw_partials;  ///< [slices, OUT, IN]
  float* db_partials;  ///< [slices, OUT]
  float* dx;           ///< [B, IN]; null: no input gradient (the first layer)
  int slices;
  int o_tiles, i_tiles, n_tiles;
  int weight_blocks, input_blocks;
  int smem_bytes;
};

/// The dense backward tiling (Task 8.5).
DenseBackwardArgs plan_dense_backward(int B, int IN, int OUT, FusedAct act, const float* x, const float* w,
                                      const float* y, const float* dy, float* dw_partials, float* db_partials,
                                      float* dx);
/// Queues the dense backward kernel of `a` on `stream`.
void dense_backward_gpu(const DenseBackwardArgs& a, cudaStream_t stream = 0, bool early = false);

// ---- Task 8.6 ---------------------------------------------------------------------------------

/// The last dense layer (no activation) and the loss, forward and backward, in one kernel.
///
/// Block b takes examples [b kHeadRows, (b + 1) kHeadRows), one warp each (K at most kHeadMaxClasses): the
/// logits z = x W^T + b of its row, the loss (added to *loss_sum), whether the
/// arg-max is the label (added to *correct), the prediction, and when training
/// dL/dz (cross-entropy: (softmax(z) - onehot) / B; mse: 2 (z - onehot) / (B K)),
/// from which the block writes dx = dz W for its rows and slice b of dW and db
/// (its rows' sum). So dW has `blocks` slices.
struct HeadArgs {
  int B, IN, K;
  FusedLoss loss;
  const float* x;       ///< [B, IN]
  const float* w;       ///< [K, IN]
  const float* b;       ///< [K]
  const int* labels;    ///< [B]
  double* loss_sum;     ///< += the B per-example losses
  unsigned long long* correct;  ///< += the rows whose first arg-max is the label
  int* predictions;     ///< [B], or null
  bool train;           ///< false: forward only (dw_partials, db_partials and dx unused)
  float* dw_partials;   ///< [blocks, K, IN]
  float* db_partials;   ///< [blocks, K]
  float* dx;            ///< [B, IN], or null (the head is the first layer)
  int blocks;
  int smem_bytes;
};

/// The head's blocks (Task 8.6).
HeadArgs plan_softmax_head(int B, int IN, int K, FusedLoss loss, const float* x, const float* w, const float* b,
                           const int* labels, double* loss_sum, unsigned long long* correct, int* predictions,
                           bool train, float* dw_partials, float* db_partials, float* dx);
/// Queues the head kernel of `a` on `stream`.
void softmax_head_gpu(const HeadArgs& a, cudaStream_t stream = 0, bool early = false);

// ---- Task 8.7 ---------------------------------------------------------------------------------

/// One parameter tensor of the update: `count` values at `offset` in the flat
/// parameter (and velocity) buffer, whose gradient is the sum of `slices` partial
/// sums, slice s at partials[s * count, (s + 1) * count).
struct SgdTensor {
  long long offset;
  long long count;
  const float* partials;
  int slices;
};

/// The copy a step's last kernel makes for the loss check (common/loss_check.hpp, stage 04's
/// DeviceLossSlots): the running loss sum after the step into slots[*step % count], by the
/// thread that then advances the step counter (sgd_multi_tensor.cuh).
struct LossCheckCopy {  // no member initialisers: it sits in FusedPhase's union (value-initialise it)
  const double* sum;  ///< the running loss sum the head adds to
  double* slots;      ///< pinned host memory mapped into the device, or null: no copy
  int count;
};

/// Every parameter updated at once:
///
///     g = sum over s of partials[s][j]  (s = 0, 1, ...)      v = momentum * v + g      w = w - lr * v
///
/// with lr = hyper[0] and momentum = hyper[1] read from device memory when the
/// kernel runs (a captured step replays them as they are then), and *step += 1
/// when step is not null: the last thing a training step does. When loss.slots is
/// not null, the same kernel first makes the loss check's copy (LossCheckCopy), so
/// that the check needs no kernel of its own.
struct SgdArgs {
  float* params;
  float* velocity;
  const SgdTensor* tensors;  ///< device array, ordered by offset, covering [0, total)
  int tensor_count;
  long long total;
  const float* hyper;  ///< {lr, momentum}
  int* step;           ///< the step counter of the epoch, or null
  int blocks;
  LossCheckCopy loss;  ///< none from plan_sgd_multi_tensor: the engine sets it
};

/// The update's blocks (Task 8.7). `tensors` is a device array of tensor_count entries.
SgdArgs plan_sgd_multi_tensor(float* params, float* velocity, const SgdTensor* tensors, int tensor_count,
                              long long total, const float* hyper, int* step);
/// Queues the update of `a` on `stream`.
void sgd_multi_tensor_gpu(const SgdArgs& a, cudaStream_t stream = 0, bool early = false);

// ---- given, not a task: the dense chain (an all-dense model's step in two kernels) -------------

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
  // the batch gather (stage 06's gather_batch_at_step_gpu): row n is example order[*step * batch + n]
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

// ---- Task 8.8 ---------------------------------------------------------------------------------

/// The batch gather as a phase of the persistent kernel: x[r] = images[e] (D floats)
/// and y[r] = labels[e] for r < B, with e = order[*step * batch + r] (stage 06's
/// gather_batch_at_step_gpu, which the CUDA graph runs).
struct GatherArgs {
  const float* images;
  const int* labels;
  const int* order;
  const int* step;
  int batch, B;
  long long D;
  float* x;
  int* y;
  int blocks;
};

/// What a phase of a training step is.
enum class PhaseKind : int { Gather, ConvForward, ConvBackward, DenseForward, DenseBackward, Head, Sgd, DenseChain, DenseChainUpdate };

/// One kernel's worth of a training step: the kernel and its arguments.
struct FusedPhase {
  PhaseKind kind;
  union {
    GatherArgs gather;
    ConvForwardArgs conv_forward;
    ConvBackwardArgs conv_backward;
    DenseForwardArgs dense_forward;
    DenseBackwardArgs dense_backward;
    HeadArgs head;
    SgdArgs sgd;
    // The dense chain's two kernels are never phases of the persistent kernel, and their
    // arguments (about 500 bytes) would make every phase of its table that large: they
    // stay on the host, owned by the engine's plan, and launch_phase() reads them there.
    const DenseChainArgs* dense_chain;
    const DenseChainUpdateArgs* dense_chain_update;
  };
};

/// Blocks and dynamic shared memory of a phase.
int phase_blocks(const FusedPhase& p);
int phase_smem_bytes(const FusedPhase& p);
/// Queues one phase as its own kernel on `stream` (the gather as stage 06's kernel).
void launch_phase(const FusedPhase& p, cudaStream_t stream = 0, bool early = false);

/// Blocks of kFusedThreads the persistent kernel keeps resident on this GPU with
/// `smem_bytes` of dynamic shared memory each (every multiprocessor filled as far as
/// its registers and shared memory allow), or 0 when the GPU cannot launch
/// cooperative kernels.
int persistent_grid_blocks(int smem_bytes);
/// Queues the whole step, `count` phases from the device array `phases`, as one
/// cooperative launch of `grid` blocks with `smem_bytes` of dynamic shared memory
/// (Task 8.8): every block runs the virtual blocks b = blockIdx.x, blockIdx.x +
/// grid, ... of a phase, then waits at grid.sync() for the others.
void persistent_step_gpu(const FusedPhase* phases, int count, int grid, int smem_bytes, cudaStream_t stream = 0);

}  // namespace course
