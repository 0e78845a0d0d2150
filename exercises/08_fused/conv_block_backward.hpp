/// @file conv_block_backward.hpp
/// @brief Stage 08 (Tasks 8.2 and 8.3): the fused conv block backward kernel's arguments, its planner and its launcher (host side).
#pragma once

#include <cuda_runtime.h>

#include "08_fused/conv_block_shape.hpp"
#include "08_fused/fused_common.hpp"

namespace course {

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

/// What the phase list (fused_phases.hpp) reads of the kernel: its blocks (both parts), its shared memory and
/// its traffic.
__host__ __device__ inline int phase_blocks(const ConvBackwardArgs& a) { return a.weight_blocks + a.input_blocks; }
inline int phase_smem_bytes(const ConvBackwardArgs& a) { return a.smem_bytes; }
KernelTraffic phase_traffic(const ConvBackwardArgs& a);

}  // namespace course
