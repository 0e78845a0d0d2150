/// @file dense_fused.cu
/// @brief Stage 08 (Tasks 8.4 and 8.5): the dense forward and backward kernels, their tiling, their launches and their traffic.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "08_fused/dense_fused.cuh"
#include "08_fused/dense_fused.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

namespace {

int ceil_div(int a, int b) { return (a + b - 1) / b; }

void require(const void* p, const char* what, const char* function) {
  if (p == nullptr) throw std::invalid_argument(std::string(function) + ": " + what + " is null");
}

void require_sizes(int B, int IN, int OUT, const char* function) {
  if (B < 1 || IN < 1 || OUT < 1)
    throw std::invalid_argument(std::string(function) + ": every size must be at least 1, got B " + std::to_string(B) +
                                ", IN " + std::to_string(IN) + ", OUT " + std::to_string(OUT));
}

}  // namespace

/// One block of the dense forward pass per blockIdx.x.
__global__ void __launch_bounds__(kFusedThreads) dense_forward_kernel(DenseForwardArgs a) {
  wait_for_previous_kernel();
  dense_forward_tile(a, static_cast<int>(blockIdx.x), fused_shared_memory());
}

/// One block of the dense backward pass per blockIdx.x.
__global__ void __launch_bounds__(kFusedThreads) dense_backward_kernel(DenseBackwardArgs a) {
  wait_for_previous_kernel();
  dense_backward_tile(a, static_cast<int>(blockIdx.x), fused_shared_memory());
}

DenseForwardArgs plan_dense_forward(int B, int IN, int OUT, FusedAct act, const float* x, const float* w,
                                    const float* b, float* y, float* partials, unsigned int* counters,
                                    int target_blocks, int max_k_slices) {
  require_sizes(B, IN, OUT, "plan_dense_forward");
  require(x, "x", "plan_dense_forward");
  require(w, "w", "plan_dense_forward");
  require(b, "b", "plan_dense_forward");
  require(y, "y", "plan_dense_forward");
  DenseForwardArgs a{.B = B, .IN = IN, .OUT = OUT, .act = act, .x = x, .w = w, .b = b, .y = y,
                     .partials = partials, .counters = counters};
  // TODO(Task 8.4): tiles of kDenseTile x kDenseTile outputs; split the sum over IN into as many slices (each at least kDenseMinSlice long, at most max_k_slices of them) as bring the blocks up to target_blocks
  // HINT: k_len = ceil(IN / slices), and then k_slices = ceil(IN / k_len), so that no slice is empty.
  throw course::NotImplemented("Task 8.4", "08_fused/dense_fused.cu", "docs/lessons/08_fused.md");
  if (a.k_slices > 1) {
    require(partials, "partials (the sum over IN is split)", "plan_dense_forward");
    require(counters, "counters (the sum over IN is split)", "plan_dense_forward");
  }
  return a;
}

void dense_forward_gpu(const DenseForwardArgs& a, cudaStream_t stream, bool early) {
  launch_fused_kernel(dense_forward_kernel, a.blocks, a.smem_bytes, stream, a, early);
  CUDA_CHECK_LAUNCH();
}

DenseBackwardArgs plan_dense_backward(int B, int IN, int OUT, FusedAct act, const float* x, const float* w,
                                      const float* y, const float* dy, float* dw_partials, float* db_partials,
                                      float* dx) {
  require_sizes(B, IN, OUT, "plan_dense_backward");
  require(x, "x", "plan_dense_backward");
  require(w, "w", "plan_dense_backward");
  require(y, "y", "plan_dense_backward");
  require(dy, "dy", "plan_dense_backward");
  require(dw_partials, "dw_partials", "plan_dense_backward");
  require(db_partials, "db_partials", "plan_dense_backward");
  DenseBackwardArgs a{.B = B, .IN = IN, .OUT = OUT, .act = act, .x = x, .w = w, .y = y, .dy = dy,
                      .dw_partials = dw_partials, .db_partials = db_partials, .dx = dx};
  // TODO(Task 8.5): one weight-gradient block per (slice of kDenseRowsPerSlice examples, output tile, input tile), then, when dx is wanted, one input-gradient block per (row tile, input tile); shared memory for the larger of the two parts
  throw course::NotImplemented("Task 8.5", "08_fused/dense_fused.cu", "docs/lessons/08_fused.md");
  return a;
}

void dense_backward_gpu(const DenseBackwardArgs& a, cudaStream_t stream, bool early) {
  launch_fused_kernel(dense_backward_kernel, a.weight_blocks + a.input_blocks, a.smem_bytes, stream, a, early);
  CUDA_CHECK_LAUNCH();
}

KernelTraffic phase_traffic(const DenseForwardArgs& a) {
  const long long y = static_cast<long long>(a.B) * a.OUT;
  KernelTraffic t;
  t.kernel = "dense forward";
  t.bytes_read = float_bytes(static_cast<long long>(a.B) * a.IN + static_cast<long long>(a.OUT) * a.IN + a.OUT);
  t.bytes_written = float_bytes(y);
  if (a.k_slices > 1) {  // the partial sums, written by every block and read by the last
    t.bytes_written += float_bytes(a.k_slices * y);
    t.bytes_read += float_bytes(a.k_slices * y);
  }
  return t;
}

KernelTraffic phase_traffic(const DenseBackwardArgs& a) {
  KernelTraffic t;
  t.kernel = "dense backward";
  t.bytes_read = float_bytes(static_cast<long long>(a.B) * a.IN + static_cast<long long>(a.OUT) * a.IN +
                             2LL * a.B * a.OUT);
  t.bytes_written =
      float_bytes(static_cast<long long>(a.slices) * (static_cast<long long>(a.OUT) * a.IN + a.OUT));
  if (a.input_blocks > 0) t.bytes_written += float_bytes(static_cast<long long>(a.B) * a.IN);
  return t;
}

}  // namespace course
