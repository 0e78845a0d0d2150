/// @file sgd.hpp
/// @brief Stage 01: the minibatch SGD update with momentum.
///
///     v <- momentum * v + g
///     w <- w - lr * v
///
/// With momentum 0 this is plain SGD, w <- w - lr * g. The velocity v starts at zero.
#pragma once

#include "common/core/not_implemented.hpp"

namespace course {

/// Updates n parameters w in place from their gradients g and velocities v.
template <typename T>
void sgd_update(T* w, const T* g, T* v, long n, T lr, T momentum) {
  // TODO(Task 1.6): SGD with momentum, v = momentum * v + g, then w -= lr * v
  // HINT: one loop over the n entries; update v before w.
  throw course::NotImplemented("Task 1.6", "01_fc_softmax/sgd.hpp", "docs/lessons/01_fc_softmax.md");
}

}  // namespace course
