/// @file pool.hpp
/// @brief Stage 02: max-pooling of a minibatch, forward (recording the arg-max) and backward.
///
/// Layouts (NCHW): x [B, C, H, W], y [B, C, Ho, Wo], argmax [B, C, Ho, Wo],
/// with Ho = floor((H + 2P - K) / S) + 1 and Wo likewise.
///
/// Output (oh, ow) of every plane (n, c) is the largest x in its window, rows
/// oh*S - P ... oh*S - P + K - 1 and columns ow*S - P ... ow*S - P + K - 1:
///
///     y[n][c][oh][ow] = max over the window of x[n][c][ih][iw]
///     argmax[n][c][oh][ow] = ih * W + iw of that cell (its index in the plane)
///
/// Rules, stated once and kept by every stage:
/// - padded cells never win: the window is cut to the image, as if padding were -infinity;
/// - ties go to the first maximum in row-major window order (top row first, left to right).
///
/// The backward pass routes each output gradient to its arg-max cell. Where
/// windows overlap (stride below the window) one input cell can win several
/// windows; it then receives the sum of their gradients:
///
///     dx[n][c][i] = sum of dy[n][c][oh][ow] over the outputs whose argmax is i
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/core/not_implemented.hpp"

namespace course {

/// The shape of one pooling layer, max (here) or average (avgpool.hpp): input
/// planes [C, H, W], a K x K window, stride S, padding P (P < K, so every window
/// holds at least one image cell: common/model/arch.hpp explains the rule).
struct PoolGeometry {
  int C = 1, H = 1, W = 1;
  int K = 2, S = 2, P = 0;

  /// floor((H + 2P - K) / S) + 1
  int out_h() const { return (H + 2 * P - K) / S + 1; }
  /// floor((W + 2P - K) / S) + 1
  int out_w() const { return (W + 2 * P - K) / S + 1; }
  long in_size() const { return static_cast<long>(C) * H * W; }     ///< values in one input example
  long out_size() const { return static_cast<long>(C) * out_h() * out_w(); }  ///< values in one output example

  /// "max-pool 3x3, stride 2, pad 1 on 16x28x28" (`kind` names the pool: "average-pool" for avgpool.hpp)
  std::string str(const char* kind = "max-pool") const {
    return std::string(kind) + " " + std::to_string(K) + "x" + std::to_string(K) + ", stride " + std::to_string(S) +
           ", pad " + std::to_string(P) + " on " + std::to_string(C) + "x" + std::to_string(H) + "x" + std::to_string(W);
  }

  /// Throws std::invalid_argument naming the problem when the layer cannot run.
  void check(const char* kind = "max-pool") const {
    if (C < 1 || H < 1 || W < 1 || K < 1 || S < 1 || P < 0)
      throw std::invalid_argument(str(kind) + ": every size must be at least 1 and the padding at least 0");
    if (P >= K)
      throw std::invalid_argument(str(kind) + ": the padding must be smaller than the window, or a window could hold "
                                              "only padding (the first one covers rows -P to K-1-P)");
    if (K > H + 2 * P || K > W + 2 * P)
      throw std::invalid_argument(str(kind) + ": the window is larger than the padded input");
  }
};

/// Forward pass: y and argmax for every window (rules above).
template <typename T>
void maxpool_forward(const T* x, T* y, int* argmax, int B, const PoolGeometry& g) {
  g.check();
  // BEGIN Task 2.4: max-pool forward: the largest cell of each window and its index ih*W + iw (first maximum wins, padding never does)
  // HINT: cut each window to the image: rows max(oh*S-P, 0) to min(oh*S-P+K, H), columns likewise; a strict > keeps the first maximum.
  const int Ho = g.out_h(), Wo = g.out_w();
  const long planes = static_cast<long>(B) * g.C;
  for (long p = 0; p < planes; ++p) {
    const T* xp = x + p * g.H * g.W;
    T* yp = y + p * Ho * Wo;
    int* ap = argmax + p * Ho * Wo;
    for (int oh = 0; oh < Ho; ++oh) {
      const int top = oh * g.S - g.P;
      const int h0 = std::max(top, 0), h1 = std::min(top + g.K, g.H);
      for (int ow = 0; ow < Wo; ++ow) {
        const int left = ow * g.S - g.P;
        const int w0 = std::max(left, 0), w1 = std::min(left + g.K, g.W);
        int best = h0 * g.W + w0;
        T best_value = xp[best];
        for (int ih = h0; ih < h1; ++ih)
          for (int iw = w0; iw < w1; ++iw) {
            // Selects, not an if: where the maximum sits depends on the data, and a
            // mispredicted branch costs more than a select.
            const T v = xp[ih * g.W + iw];
            best = v > best_value ? ih * g.W + iw : best;
            best_value = v > best_value ? v : best_value;
          }
        yp[oh * Wo + ow] = best_value;
        ap[oh * Wo + ow] = best;
      }
    }
  }
  // END Task 2.4
}

/// Backward pass: dx [B, C, H, W] (overwritten) from dy [B, C, Ho, Wo] and the
/// argmax of the forward pass.
template <typename T>
void maxpool_backward(const T* dy, const int* argmax, T* dx, int B, const PoolGeometry& g) {
  g.check();
  // BEGIN Task 2.5: max-pool backward: zero dx, then add each dy to the cell its window's argmax names (+=, windows may overlap)
  // HINT: argmax indexes the plane (n, c): the cell is dx[(n*C + c)*H*W + argmax].
  const long outputs = static_cast<long>(g.out_h()) * g.out_w();
  const long planes = static_cast<long>(B) * g.C;
  std::fill(dx, dx + planes * g.H * g.W, T(0));
  for (long p = 0; p < planes; ++p) {
    T* dxp = dx + p * g.H * g.W;
    for (long o = 0; o < outputs; ++o) dxp[argmax[p * outputs + o]] += dy[p * outputs + o];
  }
  // END Task 2.5
}

}  // namespace course
