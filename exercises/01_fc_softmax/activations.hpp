/// @file activations.hpp
/// @brief Stage 01: element-wise activations and their derivatives.
///
/// Every function works on n contiguous values, whatever their shape.
///
///     relu(x)     = max(x, 0)                  relu'     = 1 if x > 0 else 0     (so relu'(0) = 0)
///     leaky(x)    = x if x > 0 else a x        leaky'    = 1 if x > 0 else a     (a = slope; leaky'(0) = a)
///     sigmoid(x)  = 1 / (1 + e^-x)             sigmoid'  = y (1 - y)
///     tanh(x)                                  tanh'     = 1 - y^2
///     softplus(x) = log(1 + e^x)               softplus' = sigmoid(x)
///
/// The derivatives are written with y = f(x) where that is cheaper. The slope a
/// of leaky ReLU is a parameter, kLeakySlope (0.01) unless the spec says otherwise
/// (`leaky0.1`, `--leaky-slope 0.1`); the other activations ignore it.
///
/// At the kink x = 0 ReLU and leaky ReLU have no derivative; the course takes
/// PyTorch's convention: relu'(0) = 0 and leaky'(0) = a, i.e. the gradient
/// passes unchanged only where x > 0 (PyTorch's ReLU backward zeroes it where
/// the output is <= 0, its leaky ReLU backward takes the negative slope wherever
/// x <= 0). -0.0 is not > 0, so it is treated like 0. Task1_2_DerivativeAtZero
/// checks both, forward and backward, at 0 and -0.0.
#pragma once

#include <algorithm>
#include <cmath>

#include "common/model/arch.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

/// Slope of leaky ReLU for negative inputs, when no other is given.
constexpr double kLeakySlope = kDefaultLeakySlope;

/// y = f(x) for n values; `slope` is leaky ReLU's a.
template <typename T>
void activation_forward(Activation f, const T* x, T* y, long n, double slope = kLeakySlope) {
  // TODO(Task 1.2): activation forward for relu, leaky, sigmoid, tanh and softplus
  // HINT: softplus overflows e^x for large x: use max(x, 0) + log1p(e^-|x|).
  // HINT: leaky multiplies x <= 0 by the argument `slope` (kLeakySlope unless --leaky-slope says otherwise).
  throw course::NotImplemented("Task 1.2", "01_fc_softmax/activations.hpp", "docs/lessons/01_fc_softmax.md");
}

/// dx = dy * f'(x) for n values; y = f(x) is passed in so it need not be recomputed.
template <typename T>
void activation_backward(Activation f, const T* x, const T* y, const T* dy, T* dx, long n,
                         double slope = kLeakySlope) {
  // TODO(Task 1.2): activation backward, dx = dy * f'(x)
  // HINT: sigmoid' and tanh' are cheapest from y; relu' and leaky' from the sign of x.
  // HINT: at x = 0 (and -0.0) relu' is 0 and leaky' the slope, as in PyTorch: test x > 0, not x >= 0.
  throw course::NotImplemented("Task 1.2", "01_fc_softmax/activations.hpp", "docs/lessons/01_fc_softmax.md");
}

}  // namespace course
