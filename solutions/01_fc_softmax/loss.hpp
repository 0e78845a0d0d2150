/// @file loss.hpp
/// @brief Stage 01: softmax cross-entropy (the training loss) and mean squared error (the contrast).
///
/// Layouts: logits [B, K] (one row of K class scores per example), labels [B]
/// with values in [0, K), probs and dlogits [B, K].
///
/// Softmax cross-entropy of one example with label y:
///
///     p_k = e^{z_k} / sum_j e^{z_j}            L = -log p_y
///     dL/dz_k = p_k - [k == y]
///
/// The batch loss is the mean over the B examples, so every gradient is divided by B.
#pragma once

#include <cmath>
#include <stdexcept>
#include <string>

#include "common/core/not_implemented.hpp"

namespace course {

/// Writes the softmax of every row into probs; returns the mean cross-entropy.
///
/// Numerically stable: e^{z - max z} never overflows, and the loss is computed
/// as log-sum-exp minus z_y rather than as log(p_y), which underflows to log(0).
template <typename T>
T softmax_cross_entropy_forward(const T* logits, const int* labels, T* probs, int B, int K) {
  // BEGIN Task 1.3: softmax (subtract the row maximum first) and the mean cross-entropy
  // HINT: loss of row n = log(sum_k e^{z_k - m}) - (z_y - m), with m the row maximum.
  T total = 0;
  for (int n = 0; n < B; ++n) {
    const T* z = logits + static_cast<long>(n) * K;
    T* p = probs + static_cast<long>(n) * K;
    T m = z[0];
    for (int k = 1; k < K; ++k) m = z[k] > m ? z[k] : m;
    T sum = 0;
    for (int k = 0; k < K; ++k) {
      p[k] = std::exp(z[k] - m);
      sum += p[k];
    }
    for (int k = 0; k < K; ++k) p[k] /= sum;
    total += std::log(sum) - (z[labels[n]] - m);
  }
  return total / T(B);
  // END Task 1.3
}

/// dlogits = (probs - onehot(labels)) / B
template <typename T>
void softmax_cross_entropy_backward(const T* probs, const int* labels, T* dlogits, int B, int K) {
  // BEGIN Task 1.3: the gradient p - y of the mean loss
  // HINT: copy p, subtract 1 at the label, divide everything by B.
  for (int n = 0; n < B; ++n) {
    const T* p = probs + static_cast<long>(n) * K;
    T* d = dlogits + static_cast<long>(n) * K;
    for (int k = 0; k < K; ++k) d[k] = p[k] / T(B);
    d[labels[n]] -= T(1) / T(B);
  }
  // END Task 1.3
}

/// Mean squared error against one-hot targets, the contrasting loss:
///
///     L = 1/(B K) sum_n sum_k (z_nk - [k == y_n])^2        dL/dz_nk = 2 (z_nk - [k == y_n]) / (B K)
///
/// Returns L and writes dL/dz into dlogits. `outputs` are whatever the network's
/// last layer gives: the logits z, or a = sigmoid(z) with an output activation
/// (`--output sigmoid`, a spec ending in `fc<K>,sigmoid`). Then this is dL/da, and
/// the sigmoid layer's backward turns it into dL/dz = dL/da * a (1 - a).

template <typename T>
T mse_forward_backward(const T* outputs, const int* labels, T* dlogits, int B, int K) {
  // BEGIN Task 1.3: mean squared error against one-hot targets, and its gradient
  // HINT: the target of row n is 1 at column labels[n] and 0 elsewhere.
  T total = 0;
  const T scale = T(1) / (T(B) * T(K));
  for (int n = 0; n < B; ++n) {
    for (int k = 0; k < K; ++k) {
      const long i = static_cast<long>(n) * K + k;
      const T diff = outputs[i] - (k == labels[n] ? T(1) : T(0));
      total += diff * diff;
      dlogits[i] = T(2) * diff * scale;
    }
  }
  return total * scale;
  // END Task 1.3
}

/// The mean absolute error's numerator of a batch (a metric, not a loss: given code):
/// sum_n mean_k |a_nk - [k == y_n]|, the sum over the B rows of each row's mean
/// absolute difference between its K outputs and its one-hot target. The MAE of
/// the rows is this divided by B.
template <typename T>
double absolute_error_sum(const T* outputs, const int* labels, int B, int K) {
  double total = 0;
  for (int n = 0; n < B; ++n) {
    double row = 0;
    for (int k = 0; k < K; ++k) {
      const double a = static_cast<double>(outputs[static_cast<long>(n) * K + k]);
      row += std::fabs(a - (k == labels[n] ? 1.0 : 0.0));
    }
    total += row / K;
  }
  return total;
}

/// The loss a trainer uses, by name: "cross-entropy" or "mse". Returns the mean
/// loss of the batch and writes dL/dlogits; `scratch` holds [B, K] probabilities.
/// With "mse" and a non-null `abs_error_sum`, also adds absolute_error_sum() of
/// the batch to *abs_error_sum (the MAE the trainer shows: EpochStats::abs_error_sum).
template <typename T>
T loss_forward_backward(const std::string& loss, const T* logits, const int* labels, T* scratch, T* dlogits,
                        int B, int K, double* abs_error_sum = nullptr) {
  if (loss == "mse") {
    if (abs_error_sum != nullptr) *abs_error_sum += absolute_error_sum(logits, labels, B, K);
    return mse_forward_backward(logits, labels, dlogits, B, K);
  }
  if (loss != "cross-entropy") throw std::invalid_argument("unknown loss '" + loss + "'");
  const T value = softmax_cross_entropy_forward(logits, labels, scratch, B, K);
  softmax_cross_entropy_backward(scratch, labels, dlogits, B, K);
  return value;
}

}  // namespace course
