/// @file softmax_xent.cu
/// @brief Stage 08 (Task 8.6): the softmax head kernel, its blocks, its launch and its traffic.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "08_fused/softmax_xent.cuh"
#include "08_fused/softmax_xent.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

namespace {

void require(const void* p, const char* what) {
  if (p == nullptr) throw std::invalid_argument(std::string("plan_softmax_head: ") + what + " is null");
}

}  // namespace

/// One block of the head per blockIdx.x.
__global__ void __launch_bounds__(kFusedThreads) softmax_head_kernel(HeadArgs a) {
  wait_for_previous_kernel();
  softmax_head_rows(a, static_cast<int>(blockIdx.x), fused_shared_memory());
}

HeadArgs plan_softmax_head(int B, int IN, int K, FusedLoss loss, const float* x, const float* w, const float* b,
                           const int* labels, double* loss_sum, unsigned long long* correct, int* predictions,
                           bool train, float* dw_partials, float* db_partials, float* dx) {
  if (B < 1 || IN < 1 || K < 1)
    throw std::invalid_argument("plan_softmax_head: every size must be at least 1, got B " + std::to_string(B) +
                                ", IN " + std::to_string(IN) + ", K " + std::to_string(K));
  if (K > kHeadMaxClasses)
    throw std::invalid_argument("plan_softmax_head: " + std::to_string(K) + " classes: stage 08's head keeps a row's " +
                                "logits in registers, at most " + std::to_string(kHeadMaxClasses));
  require(x, "x");
  require(w, "w");
  require(b, "b");
  require(labels, "labels");
  require(loss_sum, "loss_sum");
  require(correct, "correct");
  if (train) {
    require(dw_partials, "dw_partials");
    require(db_partials, "db_partials");
  }
  HeadArgs a{.B = B, .IN = IN, .K = K, .loss = loss, .x = x, .w = w, .b = b, .labels = labels,
             .loss_sum = loss_sum, .correct = correct, .predictions = predictions, .train = train,
             .dw_partials = dw_partials, .db_partials = db_partials, .dx = dx};
  // TODO(Task 8.6): one block per kHeadRows examples (so dW has as many slices), with room in shared memory for dL/dz of its rows
  throw course::NotImplemented("Task 8.6", "08_fused/softmax_xent.cu", "docs/lessons/08_fused.md");
  if (a.smem_bytes > kFusedSharedBudget)
    throw std::invalid_argument("plan_softmax_head: " + std::to_string(K) + " classes need " +
                                std::to_string(a.smem_bytes) + " bytes of shared memory, more than " +
                                std::to_string(kFusedSharedBudget));
  return a;
}

void softmax_head_gpu(const HeadArgs& a, cudaStream_t stream, bool early) {
  launch_fused_kernel(softmax_head_kernel, a.blocks, a.smem_bytes, stream, a, early);
  CUDA_CHECK_LAUNCH();
}

KernelTraffic phase_traffic(const HeadArgs& a) {
  KernelTraffic t;
  t.kernel = a.train ? "softmax head (forward and backward)" : "softmax head (forward)";
  t.bytes_read =
      float_bytes(static_cast<long long>(a.B) * a.IN + static_cast<long long>(a.K) * a.IN + a.K) + 4LL * a.B;
  if (a.train) {
    t.bytes_written = float_bytes(static_cast<long long>(a.blocks) * (static_cast<long long>(a.K) * a.IN + a.K));
    if (a.dx != nullptr) t.bytes_written += float_bytes(static_cast<long long>(a.B) * a.IN);
  }
  if (a.predictions != nullptr) t.bytes_written += 4LL * a.B;
  return t;
}

}  // namespace course
