/// @file activation_cudnn.cpp
/// @brief Stage 06 (Task 6.7): cudnnActivationForward and cudnnActivationBackward.
#include "06_cudnn/activation_cudnn.hpp"

#include "common/gpu/cudnn_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

bool cudnn_activation_mode(Activation f, cudnnActivationMode_t* mode) {
  // BEGIN Task 6.7: cuDNN's activation mode of f: CUDNN_ACTIVATION_RELU, _SIGMOID or _TANH; false for leaky ReLU and softplus
  switch (f) {
    case Activation::ReLU: *mode = CUDNN_ACTIVATION_RELU; return true;
    case Activation::Sigmoid: *mode = CUDNN_ACTIVATION_SIGMOID; return true;
    case Activation::Tanh: *mode = CUDNN_ACTIVATION_TANH; return true;
    case Activation::LeakyReLU:
    case Activation::Softplus: return false;
  }
  return false;
  // END Task 6.7
}

void describe_activation(cudnnActivationDescriptor_t desc, cudnnActivationMode_t mode) {
  // BEGIN Task 6.7: set the activation descriptor to `mode` with cudnnSetActivationDescriptor
  // HINT: CUDNN_NOT_PROPAGATE_NAN; the coefficient (the ceiling of a clipped ReLU) is unused here: 0.
  CUDNN_CHECK(cudnnSetActivationDescriptor(desc, mode, CUDNN_NOT_PROPAGATE_NAN, /*coef=*/0.0));
  // END Task 6.7
}

void activation_forward_cudnn(const GpuHandles& h, cudnnActivationDescriptor_t desc, cudnnTensorDescriptor_t t,
                              const float* x, float* y) {
  // BEGIN Task 6.7: y = f(x) with cudnnActivationForward (alpha = 1, beta = 0; x and y both described by t)
  const float one = 1.f, zero = 0.f;
  CUDNN_CHECK(cudnnActivationForward(h.cudnn, desc, &one, t, x, &zero, t, y));
  // END Task 6.7
}

void activation_backward_cudnn(const GpuHandles& h, cudnnActivationDescriptor_t desc, cudnnTensorDescriptor_t t,
                               const float* x, const float* y, const float* dy, float* dx) {
  // BEGIN Task 6.7: dx = dy * f'(x) with cudnnActivationBackward
  // HINT: the arguments come in the order y, dy, x, then dx, each with its descriptor (all t).
  const float one = 1.f, zero = 0.f;
  CUDNN_CHECK(cudnnActivationBackward(h.cudnn, desc, &one, t, y, t, dy, t, x, &zero, t, dx));
  // END Task 6.7
}

}  // namespace course
