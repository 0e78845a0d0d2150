/// @file bias_gradient.hpp
/// @brief Stage 06: the bias gradient of a conv or dense layer, as stage 05's channel-sum reduction.
///
/// db[c] = the sum of dy[n][c][h][w] over n, h and w (stage 02's db). cuDNN has
/// a call for it, cudnnConvolutionBackwardBias(h.cudnn, &one, d.y, dy, &zero,
/// d.bias, db), and it computes the same sums; but for the `cnn` on the H100
/// its four calls a step cost more than the whole rest of the backward pass of
/// some layers (an epoch with the graph: 0.27 s with them, 0.21 s with this
/// reduction, measured side by side; the lesson has the table). The reduction is
/// stage 05's (Task 5.6): one block per channel, each thread a strided share of
/// the channel's B*H*W values, then a fixed tree in shared memory, so the same
/// bits every run.
#pragma once

#include <cudnn.h>

#include "06_cudnn/gpu_handles.hpp"

namespace course {

/// db [C] (overwritten) = dy summed over n, h and w, on the handles' stream.
/// `dy_desc` describes dy as a packed NCHW float tensor [B, C, H, W]; a dense
/// layer's [B, OUT] is [B, OUT, 1, 1]. Throws course::GpuError when the
/// descriptor cannot be read.
void bias_gradient_gpu(const GpuHandles& h, cudnnTensorDescriptor_t dy_desc, const float* dy, float* db);

}  // namespace course
