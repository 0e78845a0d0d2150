/// @file batch_gather.cpp
/// @brief Stage 08: the batch gather as a phase launched on its own, and its traffic (glue, not a task).
#include "08_fused/batch_gather.hpp"

#include "common/gpu/device_epoch.hpp"

namespace course {

void batch_gather_gpu(const GatherArgs& a, cudaStream_t stream, bool /*early*/) {
  gather_batch_at_device_step(a.images, a.labels, a.order, a.step, a.batch, a.B, static_cast<long>(a.D), a.x, a.y,
                              stream);
}

KernelTraffic phase_traffic(const GatherArgs& a) {
  KernelTraffic t;
  t.kernel = "batch gather";
  t.bytes_read = float_bytes(a.B * a.D) + 4LL * 2 * a.B;  // images, labels, order
  t.bytes_written = float_bytes(a.B * a.D) + 4LL * a.B;
  return t;
}

}  // namespace course
