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
    // TODO(Task 8.2): plan the weight-gradient part: each input plane padded to an odd pitch; as many input channels per block as fit kFusedSharedBudget (at most kFusedThreads), then as many filters as the threads and the shared memory leave, halved (while the pairs are fewer than the threads) as long as the grid is short of target_blocks and each pair would get at most 32 threads; wg_split threads per (filter, channel) pair, the largest power of 2 (at most 32) the threads allow; examples per slice from target_blocks unless wg_images is given
    // HINT: shared memory: wg_chans * wg_pitch floats of x, then wg_filters Hq Wq floats of g and as many ints of offsets (each array rounded up to 4).
    throw course::NotImplemented("Task 8.2", "08_fused/conv_block_backward.cu", "docs/lessons/08_fused.md");
  }
  if (dx != nullptr) {
    // TODO(Task 8.3): plan the input-gradient part: tiles of dx of at most kConvSlots cells (ig_tile_w at most 16), images to fill the slots (halved while there are fewer than target_blocks blocks), kConvGroup channels per block, and the filters staged in as few passes as kFusedSharedBudget allows
    // HINT: shared memory per staged filter: ig_images (tile_h + K - 1)(tile_w + K - 1) floats of dz plus K * K * kConvGroup weights.
    throw course::NotImplemented("Task 8.3", "08_fused/conv_block_backward.cu", "docs/lessons/08_fused.md");
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
