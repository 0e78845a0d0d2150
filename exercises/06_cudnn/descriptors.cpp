/// @file descriptors.cpp
/// @brief Stage 06 (Task 6.2): filling in the tensor, filter, convolution and pooling descriptors.
#include "06_cudnn/descriptors.hpp"

#include <stdexcept>
#include <string>

#include "common/gpu/cudnn_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

namespace {

std::string dims(int n, int c, int h, int w) {
  return "[" + std::to_string(n) + ", " + std::to_string(c) + ", " + std::to_string(h) + ", " + std::to_string(w) + "]";
}

}  // namespace

void set_nchw(cudnnTensorDescriptor_t desc, int n, int c, int h, int w) {
  // TODO(Task 6.2): describe a packed NCHW tensor of floats [n, c, h, w]
  // HINT: cudnnSetTensor4dDescriptor with CUDNN_TENSOR_NCHW and CUDNN_DATA_FLOAT computes the packed strides itself.
  throw course::NotImplemented("Task 6.2", "06_cudnn/descriptors.cpp", "docs/lessons/06_cudnn.md");
}

void describe_conv(ConvDescriptors& d, const ConvGeometry& g, int B) {
  g.check();
  // TODO(Task 6.2): the conv layer's descriptors: x [B, C_in, H, W], y [B, C_out, Ho, Wo], bias [1, C_out, 1, 1], filter [C_out, C_in, K, K], and the convolution (pad P, stride S, dilation 1, cross-correlation, FP32 compute, FMA math)
  // HINT: set_nchw for the three tensors; cudnnSetFilter4dDescriptor(d.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, C_out, C_in, K, K).
  // HINT: cudnnSetConvolution2dDescriptor(d.conv, P, P, S, S, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT), then cudnnSetConvolutionMathType(d.conv, CUDNN_FMA_MATH).
  throw course::NotImplemented("Task 6.2", "06_cudnn/descriptors.cpp", "docs/lessons/06_cudnn.md");

  // cuDNN computes the output size from x, the filter and the convolution; it must be the y we described.
  int n = 0, c = 0, h = 0, w = 0;
  CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(d.conv, d.x, d.w, &n, &c, &h, &w));
  if (n != B || c != g.C_out || h != g.out_h() || w != g.out_w())
    throw std::logic_error("describe_conv(" + g.str() + ", batch " + std::to_string(B) + "): cuDNN computes output " +
                           dims(n, c, h, w) + " from these descriptors, but stage 02's output is " +
                           dims(B, g.C_out, g.out_h(), g.out_w()) + ": check the padding, stride and filter");
}

void describe_pool(PoolDescriptors& d, const PoolGeometry& g, int B) {
  g.check();
  // TODO(Task 6.2): the max-pool layer's descriptors: x [B, C, H, W], y [B, C, Ho, Wo], and a K x K deterministic max-pool window with padding P and stride S
  // HINT: cudnnSetPooling2dDescriptor(d.pool, CUDNN_POOLING_MAX_DETERMINISTIC, CUDNN_NOT_PROPAGATE_NAN, K, K, P, P, S, S).
  throw course::NotImplemented("Task 6.2", "06_cudnn/descriptors.cpp", "docs/lessons/06_cudnn.md");

  check_pool_output(d, g, B, "describe_pool", g.str());
}

void check_pool_output(const PoolDescriptors& d, const PoolGeometry& g, int B, const std::string& call,
                       const std::string& layer) {
  int n = 0, c = 0, h = 0, w = 0;
  CUDNN_CHECK(cudnnGetPooling2dForwardOutputDim(d.pool, d.x, &n, &c, &h, &w));
  if (n != B || c != g.C || h != g.out_h() || w != g.out_w())
    throw std::logic_error(call + "(" + layer + ", batch " + std::to_string(B) + "): cuDNN computes output " +
                           dims(n, c, h, w) + " from these descriptors, but stage 02's output is " +
                           dims(B, g.C, g.out_h(), g.out_w()) + ": check the window, padding and stride");
}

}  // namespace course
