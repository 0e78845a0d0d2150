// Average pooling written straight from the formulas (avgpool.hpp), in double:
// the forward pass the Task 2.8 tests build their losses from (so the backward
// tests need only the backward hole), and a backward pass with switches that
// plant the classic mistakes, for the checker's self-tests and for naming a
// failing answer that is exactly one of them.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "02_conv_pool/pool.hpp"
#include "planted_mistakes.hpp"

namespace course::reference {

/// y[n][c][oh][ow] = sum of x over the window's image cells / (K*K): padded cells count as zeros. With
/// `divide_by_image_cells`, the slip of dividing by the image cells the window holds instead.
inline std::vector<double> avgpool_forward(const std::vector<double>& x, int B, const PoolGeometry& g,
                                           bool divide_by_image_cells = false) {
  const int Ho = g.out_h(), Wo = g.out_w();
  std::vector<double> y(static_cast<std::size_t>(B) * g.out_size());
  for (int p = 0; p < B * g.C; ++p)
    for (int oh = 0; oh < Ho; ++oh)
      for (int ow = 0; ow < Wo; ++ow) {
        double s = 0;
        int cells = 0;
        for (int kh = 0; kh < g.K; ++kh)
          for (int kw = 0; kw < g.K; ++kw) {
            const int ih = oh * g.S - g.P + kh, iw = ow * g.S - g.P + kw;
            if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;  // a padded cell: 0
            s += x[static_cast<std::size_t>(p) * g.H * g.W + ih * g.W + iw];
            ++cells;
          }
        y[(static_cast<std::size_t>(p) * Ho + oh) * Wo + ow] = s / (divide_by_image_cells ? cells : g.K * g.K);
      }
  return y;
}

}  // namespace course::reference

namespace course::planted {

// Average-pool backward with switches for the mistakes.
enum class AvgPoolMistake {
  None,
  DivideByImageCells,     // dy / (image cells in the window), the count_include_pad=False rule, not the forward's K*K
  NoDivision,             // dy itself to every cell of the window
  OverwriteInsteadOfSum,  // dx[cell] = share: where windows overlap, the last window wins
};

inline std::vector<double> avgpool_input_gradient(const std::vector<double>& dy, int B, const PoolGeometry& g,
                                                  AvgPoolMistake mistake) {
  const int Ho = g.out_h(), Wo = g.out_w();
  std::vector<double> dx(static_cast<std::size_t>(B) * g.in_size(), 0.0);
  for (int p = 0; p < B * g.C; ++p)
    for (int oh = 0; oh < Ho; ++oh)
      for (int ow = 0; ow < Wo; ++ow) {
        const int h0 = std::max(oh * g.S - g.P, 0), h1 = std::min(oh * g.S - g.P + g.K, g.H);
        const int w0 = std::max(ow * g.S - g.P, 0), w1 = std::min(ow * g.S - g.P + g.K, g.W);
        double divisor = g.K * g.K;
        if (mistake == AvgPoolMistake::DivideByImageCells) divisor = (h1 - h0) * (w1 - w0);
        if (mistake == AvgPoolMistake::NoDivision) divisor = 1;
        const double share = dy[(static_cast<std::size_t>(p) * Ho + oh) * Wo + ow] / divisor;
        for (int ih = h0; ih < h1; ++ih)
          for (int iw = w0; iw < w1; ++iw) {
            double& target = dx[static_cast<std::size_t>(p) * g.H * g.W + ih * g.W + iw];
            target = mistake == AvgPoolMistake::OverwriteInsteadOfSum ? share : target + share;
          }
      }
  return dx;
}

/// The classic mistake an average-pool input gradient `dx` is, exactly, or "" (dy the output gradient fed in;
/// `stale` what dx held before the call, when the test filled it).
inline std::string avgpool_mistake(const std::vector<double>& dx, const std::vector<double>& dy, int B,
                                   const PoolGeometry& g, double stale = NAN) {
  const std::vector<double> right = avgpool_input_gradient(dy, B, g, AvgPoolMistake::None);
  if (std::isfinite(stale)) {
    std::vector<double> kept = right;
    for (double& v : kept) v += stale;
    if (same_values(dx, kept))
      return "dx was not zeroed first: every cell still holds the " + testkit::detail::number(stale) +
             " it held before the call, plus its gradient";
  }
  const auto is = [&](AvgPoolMistake m) {
    const std::vector<double> wrong = avgpool_input_gradient(dy, B, g, m);
    return !same_values(wrong, right) && same_values(dx, wrong);  // only a mistake where it changes something
  };
  if (is(AvgPoolMistake::DivideByImageCells))
    return "a padded window's share is dy divided by the image cells it holds, but the forward pass divides by K*K "
           "whatever the padding (padded cells count as zeros): the share is dy / (K*K) everywhere (lesson 02, "
           "'Average pooling')";
  if (is(AvgPoolMistake::NoDivision))
    return "each cell of a window receives the whole dy: the output is the window's sum divided by K*K, so each "
           "cell's share is dy / (K*K)";
  if (is(AvgPoolMistake::OverwriteInsteadOfSum))
    return "where windows overlap, one window's share overwrites another's: a cell in several windows gets the sum "
           "(+=)";
  return "";
}

}  // namespace course::planted
