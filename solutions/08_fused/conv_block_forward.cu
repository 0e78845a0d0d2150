/// @file conv_block_forward.cu
/// @brief Stage 08 (Task 8.1): the fused conv block forward kernel, its tiling, its launch and its traffic.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "08_fused/conv_block_forward.cuh"
#include "08_fused/conv_block_forward.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

namespace {

int ceil_div(int a, int b) { return (a + b - 1) / b; }

void require(const void* p, const char* what, const char* function) {
  if (p == nullptr) throw std::invalid_argument(std::string(function) + ": " + what + " is null");
}

}  // namespace

/// One block of the forward pass per blockIdx.x.
template <int K, int Q>
__global__ void __launch_bounds__(kFusedThreads) conv_block_forward_kernel(ConvForwardArgs a) {
  wait_for_previous_kernel();
  conv_block_forward_tile<K, Q>(a, static_cast<int>(blockIdx.x), fused_shared_memory());
}

ConvForwardArgs plan_conv_block_forward(const ConvBlockShape& s, int B, const float* x, const float* w,
                                        const float* b, float* y, unsigned char* argmax, int target_blocks) {
  if (B < 1) throw std::invalid_argument("plan_conv_block_forward: the batch size must be at least 1, got " + std::to_string(B));
  require(x, "x", "plan_conv_block_forward");
  require(w, "w", "plan_conv_block_forward");
  require(b, "b", "plan_conv_block_forward");
  require(y, "y", "plan_conv_block_forward");
  if (s.Q > 1) require(argmax, "argmax", "plan_conv_block_forward");
  ConvForwardArgs a{.s = s, .B = B, .x = x, .w = w, .b = b, .y = y, .argmax = argmax};
  // BEGIN Task 8.1: cut the output y into blocks: a tile of at most kConvSlots positions per plane (tile_w at most 16 columns), as many images as fill the slots, kConvGroup filters per block, the spare slots splitting the channel sums, and the input channels staged in as few passes as kFusedSharedBudget allows
  // HINT: halve the images per block while there are fewer than target_blocks blocks, so that small layers still spread over the GPU.
  // HINT: shared memory per staged channel: images * (tile_h Q + K - 1) * (tile_w Q + K - 1) input cells plus K * K * kConvGroup weights.
  // HINT: splits = kConvSlots / (images tile_h tile_w), at most C; the parts' sums need 4 Q^2 floats a thread of parts 1 .. splits - 1, in the same shared memory.
  a.tile_w = std::min(s.Wq, 16);
  a.tile_h = std::min(s.Hq, kConvSlots / a.tile_w);
  a.tiles_h = ceil_div(s.Hq, a.tile_h);
  a.tiles_w = ceil_div(s.Wq, a.tile_w);
  a.filter_groups = ceil_div(s.F, kConvGroup);
  a.images = std::min(B, std::max(1, kConvSlots / (a.tile_h * a.tile_w)));
  const int tiles = a.tiles_h * a.tiles_w * a.filter_groups;
  while (a.images > 1 && ceil_div(B, a.images) * tiles < target_blocks) a.images = (a.images + 1) / 2;
  a.image_groups = ceil_div(B, a.images);
  a.blocks = a.image_groups * tiles;
  const int IH = a.tile_h * s.Q + s.K - 1, IW = a.tile_w * s.Q + s.K - 1;
  const int per_channel = a.images * IH * IW + s.K * s.K * kConvGroup;  // floats
  a.chans = std::min(s.C, (kFusedSharedBudget / 4 - 8) / per_channel);
  if (a.chans < 1)
    throw std::invalid_argument(describe(s) + ": one input channel of a tile needs " +
                                std::to_string(per_channel * 4) + " bytes of shared memory, more than " +
                                std::to_string(kFusedSharedBudget));
  // The slots the positions leave split each position's channel sum (no part without a channel); the
  // parts 1 .. splits - 1 then hand 4 Q^2 sums a thread to part 0 through the same shared memory.
  const int positions = a.images * a.tile_h * a.tile_w;
  a.splits = std::min(kConvSlots / positions, s.C);
  const int split_sums = kFusedThreads / kConvSlots * (a.splits - 1) * positions * 4 * s.Q * s.Q;
  a.smem_bytes = 4 * std::max(round_up_to_4(a.images * a.chans * IH * IW) + a.chans * s.K * s.K * kConvGroup, split_sums);
  // END Task 8.1
  return a;
}

void conv_block_forward_gpu(const ConvForwardArgs& a, cudaStream_t stream, bool early) {
  void (*kernel)(ConvForwardArgs) = nullptr;
  switch (a.s.K * 10 + a.s.Q) {
    case 11: kernel = conv_block_forward_kernel<1, 1>; break;
    case 12: kernel = conv_block_forward_kernel<1, 2>; break;
    case 31: kernel = conv_block_forward_kernel<3, 1>; break;
    case 32: kernel = conv_block_forward_kernel<3, 2>; break;
    case 51: kernel = conv_block_forward_kernel<5, 1>; break;
    case 52: kernel = conv_block_forward_kernel<5, 2>; break;
    default: throw std::invalid_argument("conv_block_forward_gpu: no kernel for " + describe(a.s));
  }
  launch_fused_kernel(kernel, a.blocks, a.smem_bytes, stream, a, early);
  CUDA_CHECK_LAUNCH();
}

KernelTraffic phase_traffic(const ConvForwardArgs& a) {
  const ConvBlockShape& s = a.s;
  const long long out = static_cast<long long>(a.B) * s.F * s.Hq * s.Wq;
  KernelTraffic t;
  t.kernel = "conv block forward";
  t.bytes_read = float_bytes(static_cast<long long>(a.B) * s.C * s.H * s.W + s.F * s.C * s.K * s.K + s.F);
  t.bytes_written = float_bytes(out) + (s.Q > 1 ? out : 0);
  return t;
}

}  // namespace course
