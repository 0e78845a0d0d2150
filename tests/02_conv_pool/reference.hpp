// Plain reference versions of conv and max-pool, written straight from the
// formulas with bounds tests instead of padded buffers, in double precision.
// The stage 02 tests build their losses from these, so a task's gradient test
// needs only that task's code (Task 2.2 does not wait for Task 2.1), and the
// checker self-tests plant their mistakes in copies of them.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "02_conv_pool/conv.hpp"
#include "02_conv_pool/pool.hpp"
#include "common/core/rng.hpp"

namespace course::reference {

/// y[n][co][oh][ow] = b[co] + sum W[co][ci][kh][kw] x[n][ci][oh*S-P+kh][ow*S-P+kw], x = 0 off the image.
inline std::vector<double> conv_forward(const std::vector<double>& x, const std::vector<double>& W,
                                        const std::vector<double>& b, int B, const ConvGeometry& g) {
  const int Ho = g.out_h(), Wo = g.out_w();
  std::vector<double> y(static_cast<std::size_t>(B) * g.out_size());
  for (int n = 0; n < B; ++n)
    for (int co = 0; co < g.C_out; ++co)
      for (int oh = 0; oh < Ho; ++oh)
        for (int ow = 0; ow < Wo; ++ow) {
          double s = b[co];
          for (int ci = 0; ci < g.C_in; ++ci)
            for (int kh = 0; kh < g.K; ++kh)
              for (int kw = 0; kw < g.K; ++kw) {
                const int ih = oh * g.S - g.P + kh, iw = ow * g.S - g.P + kw;
                if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
                s += W[((co * g.C_in + ci) * g.K + kh) * g.K + kw] * x[((n * g.C_in + ci) * g.H + ih) * g.W + iw];
              }
          y[((n * g.C_out + co) * Ho + oh) * Wo + ow] = s;
        }
  return y;
}

/// Max-pool with the stated rules (padding never wins, the first maximum in
/// row-major window order wins ties); argmax holds ih*W + iw per output.
inline std::vector<double> maxpool_forward(const std::vector<double>& x, int B, const PoolGeometry& g,
                                           std::vector<int>* argmax = nullptr) {
  const int Ho = g.out_h(), Wo = g.out_w();
  std::vector<double> y(static_cast<std::size_t>(B) * g.out_size());
  if (argmax) argmax->assign(y.size(), -1);
  for (int p = 0; p < B * g.C; ++p)
    for (int oh = 0; oh < Ho; ++oh)
      for (int ow = 0; ow < Wo; ++ow) {
        int best = -1;
        for (int kh = 0; kh < g.K; ++kh)
          for (int kw = 0; kw < g.K; ++kw) {
            const int ih = oh * g.S - g.P + kh, iw = ow * g.S - g.P + kw;
            if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
            const int i = ih * g.W + iw;
            if (best < 0 || x[p * g.H * g.W + i] > x[p * g.H * g.W + best]) best = i;
          }
        const int o = (p * Ho + oh) * Wo + ow;
        y[o] = x[p * g.H * g.W + best];
        if (argmax) (*argmax)[o] = best;
      }
  return y;
}

}  // namespace course::reference

namespace course::reference {

/// n distinct values in [-1, 1), at least 2/n apart, in a seeded random order:
/// max-pool inputs without ties, so a finite-difference step never changes a
/// window's arg-max.
inline std::vector<double> distinct_values(std::size_t n, std::uint64_t seed) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(n);
  Rng rng(seed, 9);
  for (std::size_t i = n; i-- > 1;) std::swap(v[i], v[rng.below(i + 1)]);
  return v;
}

}  // namespace course::reference
