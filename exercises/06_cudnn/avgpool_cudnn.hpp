/// @file avgpool_cudnn.hpp
/// @brief Stage 06: average pooling on cuDNN, forward and backward (given code, not a task).
///
/// The same two cuDNN calls as Task 6.6's max-pool: cudnnPoolingForward and
/// cudnnPoolingBackward. What makes them average is the pooling descriptor's
/// mode, and cuDNN has two averages:
///
/// | mode                                        | divides each window's sum by          |
/// |---------------------------------------------|---------------------------------------|
/// | CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING | K*K (padded cells count as zeros)     |
/// | CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING | the number of image cells it holds    |
///
/// Stage 02's average pool (avgpool.hpp, Task 2.8) divides by K*K, so this
/// stage uses _INCLUDE_PADDING; without padding the two agree. Average pooling
/// keeps nothing between the passes and its gradient needs neither x nor y,
/// but cudnnPoolingBackward takes both (every mode has the same signature), so
/// the engine passes the forward pass's.
///
/// Layouts (NCHW): x, dx [B, C, H, W]; y, dy [B, C, Ho, Wo]; device pointers,
/// queued on the handles' stream. The descriptors are Task 6.2's
/// PoolDescriptors, filled by describe_avgpool() (which calls Task 6.2's set_nchw).
#pragma once

#include "02_conv_pool/pool.hpp"
#include "06_cudnn/descriptors.hpp"
#include "06_cudnn/gpu_handles.hpp"

namespace course {

/// Fills `d` for average-pool layer `g` at batch size B (mode _INCLUDE_PADDING),
/// and checks cuDNN's output size against stage 02's, as describe_pool() does.
void describe_avgpool(PoolDescriptors& d, const PoolGeometry& g, int B);

/// y = the mean of each window of x, padded cells counting as zeros (overwritten).
void avgpool_forward_cudnn(const GpuHandles& h, const PoolDescriptors& d, const float* x, float* y);

/// dx (overwritten) from dy; x and y are the forward pass's (cuDNN's signature asks for them).
void avgpool_backward_cudnn(const GpuHandles& h, const PoolDescriptors& d, const float* x, const float* y,
                            const float* dy, float* dx);

}  // namespace course
