/// @file conv_block_backward.cu
/// @brief Stage 08 (Tasks 8.2 and 8.3): the fused conv block backward kernel, its two parts' tiling, its launch and its traffic.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "08_fused/conv_block_backward.cuh"
#include "08_fused/conv_block_backward.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

namespace {

int ceil_div(int a, int b) { return (a + b - 1) / b; }

void require(const void* p, const char* what) {
  if (p == nullptr) throw std::invalid_argument(std::string("plan_conv_block_backward: ") + what + " is null");
}

}  // namespace

/// One block of the backward pass per blockIdx.x: weight-gradient blocks first, then input-gradient blocks.
template <int K, int Q>
__global__ void __launch_bounds__(kFusedThreads) conv_block_backward_kernel(ConvBackwardArgs a) {
  wait_for_previous_kernel();
  conv_block_backward_tile<K, Q>(a, static_cast<int>(blockIdx.x), fused_shared_memory());
}

ConvBackwardArgs plan_conv_block_backward(const ConvBlockShape& s, int B, const float* x, const float* w,
                                          const float* y, const unsigned char* argmax, const float* dy,
                                          float* dw_partials, float* db_partials, float* dx, int target_blocks,
                                          int wg_images) {
  if (B < 1) throw std::invalid_argument("plan_conv_block_backward: the batch size must be at least 1, got " + std::to_string(B));
  require(w, "w");
  require(y, "y");
  require(dy, "dy");
  if (s.Q > 1) require(argmax, "argmax");
  if (dw_partials == nullptr && dx == nullptr)
    throw std::invalid_argument("plan_conv_block_backward: neither dw_partials nor dx is given: nothing to compute");
  ConvBackwardArgs a{.s = s, .B = B, .x = x, .w = w, .y = y, .argmax = argmax, .dy = dy,
                     .dw_partials = dw_partials, .db_partials = db_partials, .dx = dx};
  const int taps = s.K * s.K;
  int weight_smem = 0, input_smem = 0;
  if (dw_partials != nullptr) {
    require(x, "x");
    require(db_partials, "db_partials");
    // BEGIN Task 8.2: plan the weight-gradient part: each input plane padded to an odd pitch; as many input channels per block as fit kFusedSharedBudget (at most kFusedThreads), then as many filters as the threads and the shared memory leave, halved (while the pairs are fewer than the threads) as long as the grid is short of target_blocks and each pair would get at most 32 threads; wg_split threads per (filter, channel) pair, the largest power of 2 (at most 32) the threads allow; examples per slice from target_blocks unless wg_images is given
    // HINT: shared memory: wg_chans * wg_pitch floats of x, then wg_filters Hq Wq floats of g and as many ints of offsets (each array rounded up to 4).
    const int plane = (s.H + 2 * s.P) * (s.W + 2 * s.P), cells = s.Hq * s.Wq;
    a.wg_pitch = plane | 1;
    a.wg_chans = std::min({s.C, kFusedThreads, (kFusedSharedBudget / 4 - 24 - 2 * cells) / a.wg_pitch});
    if (a.wg_chans < 1)
      throw std::invalid_argument(describe(s) + ": one padded input plane and one filter's gradients take " +
                                  std::to_string(4 * (a.wg_pitch + 2 * cells)) + " bytes, more than the " +
                                  std::to_string(kFusedSharedBudget) + " bytes of shared memory a block may use");
    // What the channels leave: at least one filter, by the margin of 24 floats above.
    a.wg_filters = std::min({s.F, kFusedThreads / a.wg_chans,
                             (kFusedSharedBudget / 4 - 16 - round_up_to_4(a.wg_chans * a.wg_pitch)) / (2 * cells)});
    // When the pairs are fewer than the threads (the channels are few), fewer filters a block while even one
    // example a slice leaves the grid short of target_blocks, as long as a pair gets at most 32 threads
    // (conv1: 16 filters of one channel -> 8, 128 blocks instead of 64).
    while (a.wg_filters * a.wg_chans < kFusedThreads && (a.wg_filters / 2) * a.wg_chans * 32 >= kFusedThreads &&
           ceil_div(s.F, a.wg_filters) * ceil_div(s.C, a.wg_chans) * B < target_blocks)
      a.wg_filters /= 2;
    a.wg_split = 1;
    while (a.wg_split < 32 && 2 * a.wg_split * a.wg_filters * a.wg_chans <= kFusedThreads) a.wg_split *= 2;
    a.wg_chan_groups = ceil_div(s.C, a.wg_chans);
    a.wg_filter_groups = ceil_div(s.F, a.wg_filters);
    const int groups = a.wg_chan_groups * a.wg_filter_groups;
    a.wg_images = wg_images > 0 ? wg_images : std::max(1, B / std::max(1, target_blocks / groups));
    a.wg_slices = ceil_div(B, a.wg_images);
    a.weight_blocks = a.wg_slices * groups;
    weight_smem = 4 * (round_up_to_4(a.wg_chans * a.wg_pitch) + 2 * round_up_to_4(a.wg_filters * cells));
    // END Task 8.2
  }
  if (dx != nullptr) {
    // BEGIN Task 8.3: plan the input-gradient part: tiles of dx of at most kConvSlots cells (ig_tile_w at most 16), images to fill the slots (halved while there are fewer than target_blocks blocks), kConvGroup channels per block, and the filters staged in as few passes as kFusedSharedBudget allows
    // HINT: shared memory per staged filter: ig_images (tile_h + K - 1)(tile_w + K - 1) floats of dz plus K * K * kConvGroup weights.
    a.ig_tile_w = std::min(s.W, 16);
    a.ig_tile_h = std::min(s.H, kConvSlots / a.ig_tile_w);
    a.ig_tiles_h = ceil_div(s.H, a.ig_tile_h);
    a.ig_tiles_w = ceil_div(s.W, a.ig_tile_w);
    a.ig_chan_groups = ceil_div(s.C, kConvGroup);
    a.ig_images = std::min(B, std::max(1, kConvSlots / (a.ig_tile_h * a.ig_tile_w)));
    const int tiles = a.ig_tiles_h * a.ig_tiles_w * a.ig_chan_groups;
    while (a.ig_images > 1 && ceil_div(B, a.ig_images) * tiles < target_blocks) a.ig_images = (a.ig_images + 1) / 2;
    a.ig_image_groups = ceil_div(B, a.ig_images);
    a.input_blocks = a.ig_image_groups * tiles;
    const int DH = a.ig_tile_h + s.K - 1, DW = a.ig_tile_w + s.K - 1;
    const int per_filter = a.ig_images * DH * DW + taps * kConvGroup;
    a.ig_filters = std::min(s.F, (kFusedSharedBudget / 4 - 8) / per_filter);
    if (a.ig_filters < 1)
      throw std::invalid_argument(describe(s) + ": one filter of an input-gradient tile needs " +
                                  std::to_string(4 * per_filter) + " bytes of shared memory, more than " +
                                  std::to_string(kFusedSharedBudget));
    input_smem = 4 * (round_up_to_4(a.ig_images * a.ig_filters * DH * DW) + a.ig_filters * taps * kConvGroup);
    // END Task 8.3
  }
  a.smem_bytes = std::max(weight_smem, input_smem);
  return a;
}

void conv_block_backward_gpu(const ConvBackwardArgs& a, cudaStream_t stream, bool early) {
  void (*kernel)(ConvBackwardArgs) = nullptr;
  switch (a.s.K * 10 + a.s.Q) {
    case 11: kernel = conv_block_backward_kernel<1, 1>; break;
    case 12: kernel = conv_block_backward_kernel<1, 2>; break;
    case 31: kernel = conv_block_backward_kernel<3, 1>; break;
    case 32: kernel = conv_block_backward_kernel<3, 2>; break;
    case 51: kernel = conv_block_backward_kernel<5, 1>; break;
    case 52: kernel = conv_block_backward_kernel<5, 2>; break;
    default: throw std::invalid_argument("conv_block_backward_gpu: no kernel for " + describe(a.s));
  }
  launch_fused_kernel(kernel, a.weight_blocks + a.input_blocks, a.smem_bytes, stream, a, early);
  CUDA_CHECK_LAUNCH();
}

KernelTraffic phase_traffic(const ConvBackwardArgs& a) {
  const ConvBlockShape& s = a.s;
  const long long out = static_cast<long long>(a.B) * s.F * s.Hq * s.Wq;
  const long long x = static_cast<long long>(a.B) * s.C * s.H * s.W;
  KernelTraffic t;
  t.kernel = "conv block backward";
  t.bytes_read = float_bytes(2 * out) + (s.Q > 1 ? out : 0);  // dy, y, argmax
  if (a.weight_blocks > 0) {
    t.bytes_read += float_bytes(x);
    t.bytes_written += float_bytes(static_cast<long long>(a.wg_slices) * (s.F * s.C * s.K * s.K + s.F));
  }
  if (a.input_blocks > 0) {
    t.bytes_read += float_bytes(static_cast<long long>(s.F) * s.C * s.K * s.K);
    t.bytes_written += float_bytes(x);
  }
  return t;
}

}  // namespace course
