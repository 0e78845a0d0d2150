/// @file conv_cudnn.hpp
/// @brief Stage 06 (Tasks 6.4, 6.5): the conv layer on cuDNN, forward and backward.
///
/// Every pointer is device memory and every call only queues work on the
/// handles' stream. Layouts are stage 02's (NCHW, packed):
///
///     x, dx  [B, C_in, H, W]     W, dW  [C_out, C_in, K, K]     b, db  [C_out]     y, dy  [B, C_out, Ho, Wo]
///
/// Each stage 02 formula is one cuDNN call:
///
/// | stage 02 (conv.hpp)                                             | cuDNN                          |
/// |-----------------------------------------------------------------|--------------------------------|
/// | y = sum_{ci,kh,kw} W x(shifted)          (conv2d_forward)        | cudnnConvolutionForward        |
/// | y += b[co], every (n, oh, ow)            (conv2d_forward)        | cudnnAddTensor                 |
/// | dx = full conv of dy with the flipped W  (conv2d_backward_input) | cudnnConvolutionBackwardData   |
/// | dW = x correlated with dy                (conv2d_backward_weight)| cudnnConvolutionBackwardFilter |
/// | db[co] = sum_{n,oh,ow} dy                (conv2d_backward_weight)| bias_gradient_gpu (stage 05's reduction) |
///
/// The cuDNN calls compute out = alpha * result + beta * out: alpha = 1, beta = 0
/// overwrites the output (as stage 02 does), beta = 1 adds to it (the bias).
/// The activation after the convolution is its own layer (Task 6.7).
#pragma once

#include <cstddef>

#include "06_cudnn/conv_algorithms.hpp"
#include "06_cudnn/descriptors.hpp"
#include "06_cudnn/gpu_handles.hpp"

namespace course {

/// Scratch memory for the convolution algorithms: `bytes` of device memory at `ptr`.
struct Workspace {
  void* ptr = nullptr;
  std::size_t bytes = 0;
};

/// y = conv(x, W) + b with algorithm a.forward. Throws std::invalid_argument when
/// `ws` is smaller than a.forward_bytes, course::GpuError when a call fails.
void conv_forward_cudnn(const GpuHandles& h, const ConvDescriptors& d, const ConvAlgorithms& a, Workspace ws,
                        const float* x, const float* W, const float* b, float* y);

/// Given dy: dW and db (overwritten, summed over the batch) and, when dx is not
/// null, dx (overwritten), with a.backward_filter and a.backward_data. Throws
/// std::invalid_argument when `ws` is smaller than those algorithms need.
void conv_backward_cudnn(const GpuHandles& h, const ConvDescriptors& d, const ConvAlgorithms& a, Workspace ws,
                         const float* x, const float* W, const float* dy, float* dW, float* db, float* dx);

}  // namespace course
