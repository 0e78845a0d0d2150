// Plain CPU versions of im2col and col2im, written straight from the formulas
// of im2col.hpp with bounds tests, for the Task 5.1 and 5.2 tests, and the
// grid of shapes they run: every padding 0, 1, 2 with every stride 1, 2 and
// every kernel 1, 3, 5, on a non-square two-channel batch of two.
#pragma once

#include <vector>

#include "02_conv_pool/conv.hpp"

namespace course::s05test {

/// Calls f(u, i) for every entry U[u] of the unrolled matrix U [B*Ho*Wo, C_in*K*K] that
/// im2col copies from an input value x[i] (x [B, C_in, H, W]): U[(n*Ho + oh)*Wo + ow][(ci*K + kh)*K + kw]
/// holds x[n][ci][oh*S-P+kh][ow*S-P+kw]; the entries off the image (padding) are skipped.
template <typename F>
void for_each_patch_entry(int B, const ConvGeometry& g, F f) {
  const int Ho = g.out_h(), Wo = g.out_w(), K = g.K, R = g.C_in * K * K;
  for (int n = 0; n < B; ++n)
    for (int oh = 0; oh < Ho; ++oh)
      for (int ow = 0; ow < Wo; ++ow)
        for (int ci = 0; ci < g.C_in; ++ci)
          for (int kh = 0; kh < K; ++kh)
            for (int kw = 0; kw < K; ++kw) {
              const int ih = oh * g.S - g.P + kh, iw = ow * g.S - g.P + kw;
              if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
              const long row = (static_cast<long>(n) * Ho + oh) * Wo + ow;
              f(row * R + (ci * K + kh) * K + kw, ((static_cast<long>(n) * g.C_in + ci) * g.H + ih) * g.W + iw);
            }
}

/// U [B*Ho*Wo, C_in*K*K]: U[(n*Ho + oh)*Wo + ow][(ci*K + kh)*K + kw] = x[n][ci][oh*S-P+kh][ow*S-P+kw], 0 off the image.
template <typename T>
std::vector<T> im2col_reference(const std::vector<T>& x, int B, const ConvGeometry& g) {
  std::vector<T> U(static_cast<std::size_t>(B) * g.out_h() * g.out_w() * g.C_in * g.K * g.K, T(0));
  for_each_patch_entry(B, g, [&](long u, long i) { U[u] = x[i]; });
  return U;
}

/// dx [B, C_in, H, W]: every entry of dU added to the input value im2col copied into it.
inline std::vector<double> col2im_reference(const std::vector<double>& dU, int B, const ConvGeometry& g) {
  std::vector<double> dx(static_cast<std::size_t>(B) * g.in_size(), 0.0);
  for_each_patch_entry(B, g, [&](long u, long i) { dx[i] += dU[u]; });
  return dx;
}

/// The shapes of the im2col and col2im tests: C_in 2, 7 x 6 images, batch 2 (C_out is unused).
struct UnrollCase {
  int B;
  ConvGeometry g;
};

inline std::vector<UnrollCase> unroll_cases() {
  std::vector<UnrollCase> cases;
  for (int P : {0, 1, 2})
    for (int S : {1, 2})
      for (int K : {1, 3, 5}) cases.push_back({2, ConvGeometry{2, 7, 6, 1, K, P, S}});
  return cases;
}

}  // namespace course::s05test
