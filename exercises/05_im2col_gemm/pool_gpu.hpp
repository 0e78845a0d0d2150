/// @file pool_gpu.hpp
/// @brief Stage 05: max-pooling on the GPU, forward (recording the arg-max) and backward; average pooling (given).
///
/// Layouts and rules are stage 02's (pool.hpp), all device memory:
///
///     x, dx [B, C, H, W]    y, dy, argmax [B, C, Ho, Wo]
///
///     y[n][c][oh][ow]      = the largest x[n][c][ih][iw] of the window at (oh*S - P, ow*S - P)
///     argmax[n][c][oh][ow] = ih * W + iw of that cell (its index in the plane)
///
/// Padded cells never win (the window is cut to the image) and ties go to the
/// first maximum in row-major window order, exactly as on the CPU, so the GPU
/// records the same arg-max bit for bit.
///
/// Backward routes each output's gradient to its arg-max. Where windows overlap
/// (stride < window) one input cell can win several windows and gets the sum.
/// This stage *gathers*: one thread per input cell visits the few windows that
/// contain it and adds the dy of those whose arg-max is this cell. Every dx
/// cell is written by exactly one thread (no zero-fill pass, no atomics) and
/// the sum runs in a fixed order: the same bits as stage 02's loop. (Scattering,
/// one thread per output adding dy into dx[argmax], needs a zeroed dx and
/// atomicAdd as soon as windows overlap.)
#pragma once

#include <cuda_runtime.h>

#include "02_conv_pool/pool.hpp"

namespace course {

/// Forward: y and argmax for every window (rules above). Asynchronous on `stream`.
/// Throws std::invalid_argument for a bad geometry, B < 1 or a null pointer.
void maxpool_forward_gpu(const float* x, float* y, int* argmax, int B, const PoolGeometry& g, cudaStream_t stream = 0);

/// Backward: dx [B, C, H, W] (overwritten, every element) from dy and the argmax of the forward pass.
void maxpool_backward_gpu(const float* dy, const int* argmax, float* dx, int B, const PoolGeometry& g,
                          cudaStream_t stream = 0);

// ---- average pooling (given code, not a task) -------------------------------------------
//
// Stage 02's rule (avgpool.hpp, Task 2.8): the sum of the window's image cells
// divided by K*K, padded cells counting as zeros. The kernels are max-pool's
// with the comparison replaced by a sum:
//
// - forward, one thread per output: add the window cut to the image, divide by K*K;
// - backward, one thread per input cell: gather dy / (K*K) from the windows that
//   hold it (the same window range as maxpool_backward_kernel, without the arg-max
//   test). No atomics and no zero-fill; the terms are added in stage 02's order
//   (outputs row-major), so the result matches stage 02's float loop to rounding.

/// Forward: y [B, C, Ho, Wo] = the mean of every window (padded cells count as zeros).
/// Asynchronous on `stream`. Throws std::invalid_argument for a bad geometry, B < 1 or a null pointer.
void avgpool_forward_gpu(const float* x, float* y, int B, const PoolGeometry& g, cudaStream_t stream = 0);

/// Backward: dx [B, C, H, W] (overwritten, every element) from dy alone.
void avgpool_backward_gpu(const float* dy, float* dx, int B, const PoolGeometry& g, cudaStream_t stream = 0);

}  // namespace course
