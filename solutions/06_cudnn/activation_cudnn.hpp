/// @file activation_cudnn.hpp
/// @brief Stage 06 (Task 6.7): element-wise activations on cuDNN, forward and backward.
///
/// cuDNN's legacy activations are ReLU, sigmoid, tanh (and clipped ReLU, ELU,
/// swish, identity, which the course does not use). The course's leaky ReLU
/// and softplus have no cuDNN mode: the engine runs stage 04's kernels for
/// those (04_cuda_matmul/activations_gpu.cu), which compute the same formulas.
///
/// cudnnActivationBackward takes y, dy and x: ReLU's derivative is read from
/// the sign (y > 0 exactly when x > 0), sigmoid's y (1 - y) and tanh's 1 - y^2
/// from y, as stage 01 does.
#pragma once

#include <cudnn.h>

#include "06_cudnn/gpu_handles.hpp"
#include "common/model/arch.hpp"

namespace course {

/// cuDNN's mode for activation f: true and *mode set for ReLU, sigmoid and
/// tanh; false for leaky ReLU and softplus, which cuDNN does not have.
bool cudnn_activation_mode(Activation f, cudnnActivationMode_t* mode);

/// Sets `desc` to `mode` (NaNs are not propagated; no coefficient is used).
void describe_activation(cudnnActivationDescriptor_t desc, cudnnActivationMode_t mode);

/// y = f(x) for the tensor `t` describes (x and y have its shape); f as set in `desc`.
void activation_forward_cudnn(const GpuHandles& h, cudnnActivationDescriptor_t desc, cudnnTensorDescriptor_t t,
                              const float* x, float* y);

/// dx = dy * f'(x) (overwritten), given the x and y = f(x) of the forward pass.
void activation_backward_cudnn(const GpuHandles& h, cudnnActivationDescriptor_t desc, cudnnTensorDescriptor_t t,
                               const float* x, const float* y, const float* dy, float* dx);

}  // namespace course
