/// @file avgpool_cudnn.cpp
/// @brief Stage 06: average pooling on cuDNN (given code, not a task; see avgpool_cudnn.hpp).
#include "06_cudnn/avgpool_cudnn.hpp"

#include "common/gpu/cudnn_check.hpp"

namespace course {

void describe_avgpool(PoolDescriptors& d, const PoolGeometry& g, int B) {
  g.check("average-pool");
  set_nchw(d.x, B, g.C, g.H, g.W);
  set_nchw(d.y, B, g.C, g.out_h(), g.out_w());
  // Divide by K*K whatever the padding: stage 02's rule (avgpool.hpp).
  CUDNN_CHECK(cudnnSetPooling2dDescriptor(d.pool, CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, CUDNN_NOT_PROPAGATE_NAN,
                                          /*windowHeight=*/g.K, /*windowWidth=*/g.K, /*verticalPadding=*/g.P,
                                          /*horizontalPadding=*/g.P, /*verticalStride=*/g.S,
                                          /*horizontalStride=*/g.S));
  check_pool_output(d, g, B, "describe_avgpool", g.str("average-pool"));
}

void avgpool_forward_cudnn(const GpuHandles& h, const PoolDescriptors& d, const float* x, float* y) {
  const float one = 1.f, zero = 0.f;
  CUDNN_CHECK(cudnnPoolingForward(h.cudnn, d.pool, &one, d.x, x, &zero, d.y, y));
}

void avgpool_backward_cudnn(const GpuHandles& h, const PoolDescriptors& d, const float* x, const float* y,
                            const float* dy, float* dx) {
  const float one = 1.f, zero = 0.f;
  CUDNN_CHECK(cudnnPoolingBackward(h.cudnn, d.pool, &one, d.y, y, d.y, dy, d.x, x, &zero, d.x, dx));
}

}  // namespace course
