/// @file dense_cublas.hpp
/// @brief Stage 06 (Task 6.9): the dense layer on cuBLAS (and its bias on cuDNN).
///
/// Layouts are stage 01's, row-major: x, dx [B, IN]; W, dW [OUT, IN]; b, db [OUT]; y, dy [B, OUT].
///
///     forward   Y  = X W^T + b     [B, OUT]
///     backward  dW = dY^T X        [OUT, IN]
///               db = sum_n dY[n]   [OUT]
///               dX = dY W          [B, IN]    (skipped when dx is null)
///
/// The three products are cublasSgemm calls on our handle (so they run on our
/// stream and inside our CUDA graph, with the workspace of Task 6.1).
/// cuBLAS reads matrices column-major; dense_cublas.cpp says how a row-major
/// product is asked of it without moving a byte.
///
/// The bias is done as in the conv layer: a dense layer is a 1x1 convolution on
/// a 1x1 image, so y [B, OUT] is the tensor [B, OUT, 1, 1] and b is
/// [1, OUT, 1, 1], and the conv layer's two bias calls serve unchanged:
/// cudnnAddTensor adds b to every row, bias_gradient_gpu sums dY over the rows.
#pragma once

#include "06_cudnn/descriptors.hpp"
#include "06_cudnn/gpu_handles.hpp"

namespace course {

/// The two cuDNN tensors a dense layer's bias needs at batch size B.
struct DenseDescriptors {
  TensorDescriptor y;     ///< y or dy [B, OUT, 1, 1]
  TensorDescriptor bias;  ///< b or db [1, OUT, 1, 1]
};

/// y = x W^T + b. Device pointers, queued on the handles' stream.
void dense_forward_cublas(const GpuHandles& h, const DenseDescriptors& d, const float* x, const float* W,
                          const float* b, float* y, int B, int IN, int OUT);

/// dW = dy^T x, db = column sums of dy, dx = dy W (when dx is not null); all overwritten.
void dense_backward_cublas(const GpuHandles& h, const DenseDescriptors& d, const float* x, const float* W,
                           const float* dy, float* dW, float* db, float* dx, int B, int IN, int OUT);

}  // namespace course
