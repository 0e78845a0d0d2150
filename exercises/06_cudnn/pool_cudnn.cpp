/// @file pool_cudnn.cpp
/// @brief Stage 06 (Task 6.6): cudnnPoolingForward and cudnnPoolingBackward.
#include "06_cudnn/pool_cudnn.hpp"

#include "common/gpu/cudnn_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

void maxpool_forward_cudnn(const GpuHandles& h, const PoolDescriptors& d, const float* x, float* y) {
  // TODO(Task 6.6): max-pool forward with cudnnPoolingForward (alpha = 1, beta = 0)
  throw course::NotImplemented("Task 6.6", "06_cudnn/pool_cudnn.cpp", "docs/lessons/06_cudnn.md");
}

void maxpool_backward_cudnn(const GpuHandles& h, const PoolDescriptors& d, const float* x, const float* y,
                            const float* dy, float* dx) {
  // TODO(Task 6.6): max-pool backward with cudnnPoolingBackward: it reads y and dy (described by d.y) and x (d.x), and writes dx (d.x)
  // HINT: the argument order is y, dy, x, then dx: cudnnPoolingBackward(h.cudnn, d.pool, &one, d.y, y, d.y, dy, d.x, x, &zero, d.x, dx).
  throw course::NotImplemented("Task 6.6", "06_cudnn/pool_cudnn.cpp", "docs/lessons/06_cudnn.md");
}

}  // namespace course
