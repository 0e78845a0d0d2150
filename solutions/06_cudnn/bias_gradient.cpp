/// @file bias_gradient.cpp
/// @brief Stage 06: db = per-channel sums of dy, read off dy's descriptor and summed by stage 05's kernel.
#include "06_cudnn/bias_gradient.hpp"

#include "05_im2col_gemm/conv_gpu.hpp"
#include "common/gpu/cudnn_check.hpp"

namespace course {

void bias_gradient_gpu(const GpuHandles& h, cudnnTensorDescriptor_t dy_desc, const float* dy, float* db) {
  cudnnDataType_t type{};
  int B = 0, C = 0, H = 0, W = 0, n_stride = 0, c_stride = 0, h_stride = 0, w_stride = 0;
  CUDNN_CHECK(cudnnGetTensor4dDescriptor(dy_desc, &type, &B, &C, &H, &W, &n_stride, &c_stride, &h_stride, &w_stride));
  // Stage 05's conv_backward_bias_gpu sums channel c of a [B, C_out, Ho, Wo]
  // gradient; it reads only C_out and the output size from the geometry. A
  // 1x1 convolution with C outputs on an H x W input (no padding, stride 1)
  // has exactly dy's shape.
  const ConvGeometry dy_shape{/*C_in=*/C, /*H=*/H, /*W=*/W, /*C_out=*/C, /*K=*/1, /*P=*/0, /*S=*/1};
  conv_backward_bias_gpu(dy, db, B, dy_shape, h.stream);
}

}  // namespace course
