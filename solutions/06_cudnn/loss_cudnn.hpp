/// @file loss_cudnn.hpp
/// @brief Stage 06 (Task 6.8): softmax cross-entropy with cudnnSoftmaxForward and one small kernel.
///
/// Layouts: logits, log_probs, dlogits [B, K] (K class scores per example,
/// row-major); labels [B] in [0, K). To cuDNN the rows are a [B, K, 1, 1]
/// tensor, and CUDNN_SOFTMAX_MODE_INSTANCE normalises over C*H*W = K values
/// per example n: one softmax per row.
///
/// cuDNN is asked for the *log* of the softmax (CUDNN_SOFTMAX_LOG), computed
/// stably as z_k - max z - log sum_j e^{z_j - max z}. Then
///
///     loss of row n = -log p_y                      (read straight from log_probs)
///     dL/dz_k       = (p_k - [k == y]) / B          with p_k = e^{log p_k}
///
/// which is stage 01's loss.hpp: the same formulas, the same mean over the
/// batch. A loss read from log p never takes the log of an underflowed 0,
/// so a confident wrong prediction costs a large finite number, not Inf.
///
/// As in stage 04, the per-example losses and the correct predictions are
/// added up on the device (a double and an integer, with atomics), so the
/// host reads them once per epoch, not once per batch.
#pragma once

#include <cudnn.h>
#include <cuda_runtime.h>

#include "06_cudnn/gpu_handles.hpp"

namespace course {

/// log_probs = log softmax of each row of logits; `rows` describes both as [B, K, 1, 1].
void log_softmax_cudnn(const GpuHandles& h, cudnnTensorDescriptor_t rows, const float* logits, float* log_probs);

/// From the log-probabilities of B rows of K classes, on `stream`:
/// - adds sum_n -log p[n][label_n] to *loss_sum (a device double),
/// - adds the number of rows whose arg-max (first maximum) is the label to *correct,
/// - writes each row's arg-max to predictions[n] when predictions is not null,
/// - writes dlogits = (p - onehot(label)) / B when dlogits is not null.
void nll_from_log_softmax_gpu(const float* log_probs, const int* labels, int B, int K, float* dlogits,
                              double* loss_sum, unsigned long long* correct, int* predictions, cudaStream_t stream);

}  // namespace course
