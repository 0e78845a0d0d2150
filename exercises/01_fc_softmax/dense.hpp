/// @file dense.hpp
/// @brief Stage 01: the dense (fully-connected) layer of a whole minibatch.
///
/// Layouts, all row-major:
///
///     x   [B, IN]     one example per row
///     W   [OUT, IN]   one row of weights per output unit
///     b   [OUT]
///     y   [B, OUT]    y[n][o] = b[o] + sum_i W[o][i] * x[n][i]     (Y = X W^T + b)
#pragma once

#include <algorithm>

#include "common/core/not_implemented.hpp"

namespace course {

/// Forward pass: y = x W^T + b for every example of the batch.
template <typename T>
void dense_forward(const T* x, const T* W, const T* b, T* y, int B, int IN, int OUT) {
  // TODO(Task 1.1): dense forward, y[n][o] = b[o] + sum_i W[o][i] * x[n][i]
  // HINT: three loops (example n, output o, input i); row o of W and row n of x are both contiguous.
  // HINT: sum into a local acc, with `#pragma omp simd reduction(+ : acc)` above the i loop ("Task 1.1: speed").
  throw course::NotImplemented("Task 1.1", "01_fc_softmax/dense.hpp", "docs/lessons/01_fc_softmax.md");
}

/// Backward pass. Given dy = dL/dy [B, OUT]:
///
///     dW = dy^T x          [OUT, IN]   (summed over the batch)
///     db = sum_n dy[n]     [OUT]
///     dx = dy W            [B, IN]     (skipped when dx is null: the first layer needs none)
///
/// dW and db are overwritten, not accumulated.
template <typename T>
void dense_backward(const T* x, const T* W, const T* dy, T* dW, T* db, T* dx, int B, int IN, int OUT) {
  // TODO(Task 1.4): dense backward, dW = dy^T x, db = column sums of dy, dx = dy W
  // HINT: zero dW and db first; for each (n, o) add dy[n][o] * x[n][:] to row o of dW.
  // HINT: likewise dx: for each (n, o) add dy[n][o] * W[o][:] to row n of dx; i innermost keeps every row contiguous.
  throw course::NotImplemented("Task 1.4", "01_fc_softmax/dense.hpp", "docs/lessons/01_fc_softmax.md");
}

}  // namespace course
