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
  // BEGIN Task 1.1: dense forward, y[n][o] = b[o] + sum_i W[o][i] * x[n][i]
  // HINT: three loops (example n, output o, input i); row o of W and row n of x are both contiguous.
  // HINT: sum into a local acc, with `#pragma omp simd reduction(+ : acc)` above the i loop ("Task 1.1: speed").
  for (int n = 0; n < B; ++n) {
    const T* xn = x + static_cast<long>(n) * IN;
    T* yn = y + static_cast<long>(n) * OUT;
    for (int o = 0; o < OUT; ++o) {
      const T* wo = W + static_cast<long>(o) * IN;
      T acc = 0;
      // A dot product is a reduction; this pragma lets the compiler reorder the
      // sum into SIMD lanes (it may not do so on its own: float + is not associative,
      // so another order rounds differently). Without it this loop adds its products
      // one at a time, in order, and stage 01 trains about 4x slower: the lesson's
      // "Task 1.1: speed" has the figures.
#pragma omp simd reduction(+ : acc)
      for (int i = 0; i < IN; ++i) acc += wo[i] * xn[i];
      yn[o] = acc + b[o];
    }
  }
  // END Task 1.1
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
  // BEGIN Task 1.4: dense backward, dW = dy^T x, db = column sums of dy, dx = dy W
  // HINT: zero dW and db first; for each (n, o) add dy[n][o] * x[n][:] to row o of dW.
  // HINT: likewise dx: for each (n, o) add dy[n][o] * W[o][:] to row n of dx; i innermost keeps every row contiguous.
  // The loop order is for speed: i innermost walks rows of x, W, dW and dx, which are
  // contiguous, and every dW[o][i] (dx[n][i]) is its own sum, so the i loop vectorises
  // with no pragma and in the order written. The formulas' own order (dW[o][i] = sum
  // over n, dx[n][i] = sum over o) puts a strided sum innermost: stage 01 then trains
  // over 5x slower (the lesson: "Task 1.4: speed").
  std::fill(dW, dW + static_cast<long>(OUT) * IN, T(0));
  std::fill(db, db + OUT, T(0));
  for (int n = 0; n < B; ++n) {
    const T* xn = x + static_cast<long>(n) * IN;
    const T* dyn = dy + static_cast<long>(n) * OUT;
    for (int o = 0; o < OUT; ++o) {
      const T g = dyn[o];
      T* dWo = dW + static_cast<long>(o) * IN;
      db[o] += g;
      for (int i = 0; i < IN; ++i) dWo[i] += g * xn[i];
    }
  }
  if (dx != nullptr) {
    for (int n = 0; n < B; ++n) {
      const T* dyn = dy + static_cast<long>(n) * OUT;
      T* dxn = dx + static_cast<long>(n) * IN;
      std::fill(dxn, dxn + IN, T(0));
      for (int o = 0; o < OUT; ++o) {
        const T g = dyn[o];
        const T* wo = W + static_cast<long>(o) * IN;
        for (int i = 0; i < IN; ++i) dxn[i] += g * wo[i];
      }
    }
  }
  // END Task 1.4
}

}  // namespace course
