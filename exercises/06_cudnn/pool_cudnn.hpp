/// @file pool_cudnn.hpp
/// @brief Stage 06 (Task 6.6): max-pooling on cuDNN, forward and backward.
///
/// Layouts (NCHW): x, dx [B, C, H, W]; y, dy [B, C, Ho, Wo]. Device pointers,
/// queued on the handles' stream.
///
/// Stage 02 recorded each window's arg-max in the forward pass and routed dy
/// through it. cuDNN keeps no arg-max: cudnnPoolingBackward takes x and y
/// again and finds, in each window, the cell of x that equals y. That costs
/// a re-read of x but no memory between the passes. With the _DETERMINISTIC
/// max (Task 6.2) one cell per window receives the gradient, the same cell on
/// every run; windows that overlap add up, as in stage 02. Task 6.6's tests
/// hold cuDNN to stage 02's padding rule (a padded cell never wins, even
/// over negative values). On ties (equal values in one window) the cell cuDNN
/// picks may differ from stage 02's first maximum, so the tests use distinct
/// values; after a ReLU the usual tie (all zeros) sends its gradient into
/// ReLU's zero slope whichever cell gets it.
#pragma once

#include "06_cudnn/descriptors.hpp"
#include "06_cudnn/gpu_handles.hpp"

namespace course {

/// y = the maximum of each window of x (overwritten).
void maxpool_forward_cudnn(const GpuHandles& h, const PoolDescriptors& d, const float* x, float* y);

/// dx (overwritten) from dy, given the x and y of the forward pass.
void maxpool_backward_cudnn(const GpuHandles& h, const PoolDescriptors& d, const float* x, const float* y,
                            const float* dy, float* dx);

}  // namespace course
