/// @file avgpool.hpp
/// @brief Stage 02 (Task 2.8): average-pooling of a minibatch, forward and backward.
///
/// Layouts (NCHW) and windows are max-pool's (pool.hpp, course::PoolGeometry):
/// x, dx [B, C, H, W]; y, dy [B, C, Ho, Wo], Ho = floor((H + 2P - K) / S) + 1;
/// output (oh, ow) of plane (n, c) reads rows oh*S - P ... oh*S - P + K - 1 and
/// columns ow*S - P ... ow*S - P + K - 1.
///
/// Each output is the mean of its window, **padded cells counted as zeros**: the
/// sum of the image cells in the window divided by K*K, however many of them
/// there are (PyTorch's count_include_pad=True, its default; cuDNN's
/// CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING):
///
///     y[n][c][oh][ow] = (1 / (K*K)) * sum over the window's image cells of x[n][c][ih][iw]
///
/// So every output is the same linear map of its window (a depthwise convolution
/// with a constant K x K kernel of 1/(K*K), zero padding), and nothing is
/// recorded for the backward pass: each image cell of a window receives that
/// output's dy / (K*K). Where windows overlap (stride below the window) a cell
/// lies in several windows and receives the sum:
///
///     dx[n][c][ih][iw] = sum over the windows (oh, ow) holding (ih, iw) of dy[n][c][oh][ow] / (K*K)
///
/// The padding rule is max-pool's, P < K (every window holds an image cell;
/// lesson 02, "Pool padding"). Near the border a padded window averages fewer
/// image cells but still divides by K*K: with K = 2, P = 1 the corner output is
/// x[0][0] / 4, not x[0][0].
#pragma once

#include <algorithm>

#include "02_conv_pool/pool.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

/// Forward pass: y [B, C, Ho, Wo] (overwritten), the mean of every window (rule above).
template <typename T>
void avgpool_forward(const T* x, T* y, int B, const PoolGeometry& g) {
  g.check("average-pool");
  // TODO(Task 2.8): average-pool forward: y = (sum of the window's image cells) / (K*K), padded cells counting as zeros
  // HINT: cut each window to the image as in Task 2.4 (rows max(oh*S-P, 0) to min(oh*S-P+K, H), columns likewise), add those cells, then divide by K*K, not by how many cells you added.
  throw course::NotImplemented("Task 2.8", "02_conv_pool/avgpool.hpp", "docs/lessons/02_conv_pool.md");
}

/// Backward pass: dx [B, C, H, W] (overwritten) from dy [B, C, Ho, Wo]. Average
/// pooling is linear, so it needs neither x nor anything recorded by forward.
template <typename T>
void avgpool_backward(const T* dy, T* dx, int B, const PoolGeometry& g) {
  g.check("average-pool");
  // TODO(Task 2.8): average-pool backward: zero dx, then add dy / (K*K) of every output to each image cell of its window (+=, windows may overlap)
  // HINT: the same window, cut to the image, as in the forward pass; padded cells receive nothing (they are not in dx), and the share is still dy / (K*K).
  throw course::NotImplemented("Task 2.8", "02_conv_pool/avgpool.hpp", "docs/lessons/02_conv_pool.md");
}

}  // namespace course
