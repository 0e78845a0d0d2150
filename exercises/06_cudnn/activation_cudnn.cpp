/// @file activation_cudnn.cpp
/// @brief Stage 06 (Task 6.7): cudnnActivationForward and cudnnActivationBackward.
#include "06_cudnn/activation_cudnn.hpp"

#include "common/gpu/cudnn_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

bool cudnn_activation_mode(Activation f, cudnnActivationMode_t* mode) {
  // TODO(Task 6.7): cuDNN's activation mode of f: CUDNN_ACTIVATION_RELU, _SIGMOID or _TANH; false for leaky ReLU and softplus
  throw course::NotImplemented("Task 6.7", "06_cudnn/activation_cudnn.cpp", "docs/lessons/06_cudnn.md");
}

void describe_activation(cudnnActivationDescriptor_t desc, cudnnActivationMode_t mode) {
  // TODO(Task 6.7): set the activation descriptor to `mode` with cudnnSetActivationDescriptor
  // HINT: CUDNN_NOT_PROPAGATE_NAN; the coefficient (the ceiling of a clipped ReLU) is unused here: 0.
  throw course::NotImplemented("Task 6.7", "06_cudnn/activation_cudnn.cpp", "docs/lessons/06_cudnn.md");
}

void activation_forward_cudnn(const GpuHandles& h, cudnnActivationDescriptor_t desc, cudnnTensorDescriptor_t t,
                              const float* x, float* y) {
  // TODO(Task 6.7): y = f(x) with cudnnActivationForward (alpha = 1, beta = 0; x and y both described by t)
  throw course::NotImplemented("Task 6.7", "06_cudnn/activation_cudnn.cpp", "docs/lessons/06_cudnn.md");
}

void activation_backward_cudnn(const GpuHandles& h, cudnnActivationDescriptor_t desc, cudnnTensorDescriptor_t t,
                               const float* x, const float* y, const float* dy, float* dx) {
  // TODO(Task 6.7): dx = dy * f'(x) with cudnnActivationBackward
  // HINT: the arguments come in the order y, dy, x, then dx, each with its descriptor (all t).
  throw course::NotImplemented("Task 6.7", "06_cudnn/activation_cudnn.cpp", "docs/lessons/06_cudnn.md");
}

}  // namespace course
