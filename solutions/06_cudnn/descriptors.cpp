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
  // BEGIN Task 6.2: describe a packed NCHW tensor of floats [n, c, h, w]
  // HINT: cudnnSetTensor4dDescriptor with CUDNN_TENSOR_NCHW and CUDNN_DATA_FLOAT computes the packed strides itself.
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w));
  // END Task 6.2
}

void describe_conv(ConvDescriptors& d, const ConvGeometry& g, int B) {
  g.check();
  // BEGIN Task 6.2: the conv layer's descriptors: x [B, C_in, H, W], y [B, C_out, Ho, Wo], bias [1, C_out, 1, 1], filter [C_out, C_in, K, K], and the convolution (pad P, stride S, dilation 1, cross-correlation, FP32 compute, FMA math)
  // HINT: set_nchw for the three tensors; cudnnSetFilter4dDescriptor(d.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, C_out, C_in, K, K).
  // HINT: cudnnSetConvolution2dDescriptor(d.conv, P, P, S, S, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT), then cudnnSetConvolutionMathType(d.conv, CUDNN_FMA_MATH).
  set_nchw(d.x, B, g.C_in, g.H, g.W);
  set_nchw(d.y, B, g.C_out, g.out_h(), g.out_w());
  set_nchw(d.bias, 1, g.C_out, 1, 1);
  CUDNN_CHECK(cudnnSetFilter4dDescriptor(d.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, g.C_out, g.C_in, g.K, g.K));
  CUDNN_CHECK(cudnnSetConvolution2dDescriptor(d.conv, /*pad_h=*/g.P, /*pad_w=*/g.P, /*u=*/g.S, /*v=*/g.S,
                                              /*dilation_h=*/1, /*dilation_w=*/1, CUDNN_CROSS_CORRELATION,
                                              /*computeType=*/CUDNN_DATA_FLOAT));
  // On Ampere and later, CUDNN_DEFAULT_MATH lets FP32 convolutions run on the tensor
  // cores in TF32 (10-bit mantissas, errors near 1e-3). FMA math keeps them in FP32,
  // so cuDNN computes what stages 02 to 05 compute, to rounding; algorithm choice
  // (Task 6.3) then only measures algorithms of this math type.
  CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv, CUDNN_FMA_MATH));
  // END Task 6.2

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
  // BEGIN Task 6.2: the max-pool layer's descriptors: x [B, C, H, W], y [B, C, Ho, Wo], and a K x K deterministic max-pool window with padding P and stride S
  // HINT: cudnnSetPooling2dDescriptor(d.pool, CUDNN_POOLING_MAX_DETERMINISTIC, CUDNN_NOT_PROPAGATE_NAN, K, K, P, P, S, S).
  set_nchw(d.x, B, g.C, g.H, g.W);
  set_nchw(d.y, B, g.C, g.out_h(), g.out_w());
  // The _DETERMINISTIC max routes each output's gradient to one input cell, the
  // same cell on every run, as stage 02's arg-max does.
  CUDNN_CHECK(cudnnSetPooling2dDescriptor(d.pool, CUDNN_POOLING_MAX_DETERMINISTIC, CUDNN_NOT_PROPAGATE_NAN,
                                          /*windowHeight=*/g.K, /*windowWidth=*/g.K, /*verticalPadding=*/g.P,
                                          /*horizontalPadding=*/g.P, /*verticalStride=*/g.S,
                                          /*horizontalStride=*/g.S));
  // END Task 6.2

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
