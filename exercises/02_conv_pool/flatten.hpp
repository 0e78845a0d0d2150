/// @file flatten.hpp
/// @brief Stage 02: flatten, the hand-over from images to dense layers.
///
/// Flatten turns each example [C, H, W] into a vector [C*H*W] with
///
///     y[n][(c * H + h) * W + w] = x[n][c][h][w]
///
/// In NCHW that is the order the values already have in memory, so forward and
/// backward are copies: the layer changes how the next layer reads the numbers,
/// not the numbers. (A channels-last layout, NHWC, would flatten to a different
/// order, and a dense layer trained on one could not read the other.)
#pragma once

#include <algorithm>

#include "common/core/not_implemented.hpp"

namespace course {

/// x [B, C, H, W] -> y [B, C*H*W]; `count` = B*C*H*W.
template <typename T>
void flatten_forward(const T* x, T* y, long count) {
  // TODO(Task 2.6): flatten forward: y[n][(c*H + h)*W + w] = x[n][c][h][w]
  // HINT: write the index out for one example and compare it with where x[n][c][h][w] lies in memory.
  throw course::NotImplemented("Task 2.6", "02_conv_pool/flatten.hpp", "docs/lessons/02_conv_pool.md");
}

/// dy [B, C*H*W] -> dx [B, C, H, W]; `count` = B*C*H*W.
template <typename T>
void flatten_backward(const T* dy, T* dx, long count) {
  // TODO(Task 2.6): flatten backward: dx[n][c][h][w] = dy[n][(c*H + h)*W + w]
  // HINT: each input feeds exactly one output, with weight 1.
  throw course::NotImplemented("Task 2.6", "02_conv_pool/flatten.hpp", "docs/lessons/02_conv_pool.md");
}

}  // namespace course
