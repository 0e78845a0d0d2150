/// @file sgd_multi_tensor.cu
/// @brief Stage 08 (Task 8.7): the multi-tensor SGD kernel, its blocks, its launch and its traffic.
#include <stdexcept>
#include <string>

#include "08_fused/sgd_multi_tensor.cuh"
#include "08_fused/sgd_multi_tensor.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

/// One block of the update per blockIdx.x.
__global__ void __launch_bounds__(kFusedThreads) sgd_multi_tensor_kernel(SgdArgs a) {
  wait_for_previous_kernel();
  copy_running_loss_to_slot(a, static_cast<int>(blockIdx.x));
  sgd_multi_tensor_block(a, static_cast<int>(blockIdx.x));
}

SgdArgs plan_sgd_multi_tensor(float* params, float* velocity, const SgdTensor* tensors, int tensor_count,
                              long long total, const float* hyper, int* step) {
  if (total < 1 || tensor_count < 1)
    throw std::invalid_argument("plan_sgd_multi_tensor: nothing to update (" + std::to_string(tensor_count) +
                                " tensors, " + std::to_string(total) + " parameters)");
  if (params == nullptr || velocity == nullptr || tensors == nullptr || hyper == nullptr)
    throw std::invalid_argument("plan_sgd_multi_tensor: params, velocity, tensors and hyper must not be null");
  SgdArgs a{.params = params, .velocity = velocity, .tensors = tensors, .tensor_count = tensor_count,
            .total = total, .hyper = hyper, .step = step};
  // BEGIN Task 8.7: one thread per parameter
  a.blocks = static_cast<int>((total + kFusedThreads - 1) / kFusedThreads);
  // END Task 8.7
  return a;
}

void sgd_multi_tensor_gpu(const SgdArgs& a, cudaStream_t stream, bool early) {
  launch_fused_kernel(sgd_multi_tensor_kernel, a.blocks, 0, stream, a, early);
  CUDA_CHECK_LAUNCH();
}

KernelTraffic phase_traffic(const SgdArgs& a) {
  KernelTraffic t;
  t.kernel = "sgd update (multi-tensor)";
  // The partial sums are read too: their count is in the table, which lives on the
  // device; the engine adds them (FusedEngine's step table).
  t.bytes_read = float_bytes(2 * a.total);
  t.bytes_written = float_bytes(2 * a.total);
  return t;
}

}  // namespace course
