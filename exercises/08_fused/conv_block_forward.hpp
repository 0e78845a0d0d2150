/// @file conv_block_forward.hpp
/// @brief Stage 08 (Task 8.1): the fused conv block forward kernel's arguments, its planner and its launcher (host side).
#pragma once

#include <cuda_runtime.h>

#include "08_fused/conv_block_shape.hpp"
#include "08_fused/fused_common.hpp"

namespace course {

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

/// What the phase list (fused_phases.hpp) reads of the kernel: its blocks, its shared memory and its traffic.
__host__ __device__ inline int phase_blocks(const ConvForwardArgs& a) { return a.blocks; }
inline int phase_smem_bytes(const ConvForwardArgs& a) { return a.smem_bytes; }
KernelTraffic phase_traffic(const ConvForwardArgs& a);

}  // namespace course
