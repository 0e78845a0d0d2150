// Conv and max-pool written from the formulas, with switches that plant the
// classic mistakes. The checker's self-tests (checker_test.cpp) prove the
// gradient checker rejects each backward one; the task tests compare a failing
// answer with each, and when it is exactly one of them, say which mistake it
// is: the message then leads to the bug, not only to the entry where it shows.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/check/gradcheck.hpp"
#include "reference.hpp"
#include "tensor_check.hpp"

namespace course::planted {

// ---- forward passes (Tasks 2.1 and 2.4) -----------------------------------------------------

/// W flipped in both kernel axes: W'[co][ci][kh][kw] = W[co][ci][K-1-kh][K-1-kw].
inline std::vector<double> flipped_kernel(const std::vector<double>& W, const ConvGeometry& g) {
  std::vector<double> f(W.size());
  const int KK = g.K * g.K;
  for (std::size_t plane = 0; plane < W.size() / KK; ++plane)
    for (int k = 0; k < KK; ++k) f[plane * KK + k] = W[plane * KK + KK - 1 - k];
  return f;
}

/// conv forward that reads the input with padding `P` and stride `S` where the geometry says g.P
/// and g.S (the output keeps g's size), and W as if stored [C_in, C_out, K, K] when `W_in_by_out`.
inline std::vector<double> conv_forward_reading(const std::vector<double>& x, const std::vector<double>& W,
                                                const std::vector<double>& b, int B, const ConvGeometry& g, int P, int S,
                                                bool W_in_by_out = false) {
  const int Ho = g.out_h(), Wo = g.out_w(), K = g.K;
  std::vector<double> y(static_cast<std::size_t>(B) * g.out_size());
  for (int n = 0; n < B; ++n)
    for (int co = 0; co < g.C_out; ++co)
      for (int oh = 0; oh < Ho; ++oh)
        for (int ow = 0; ow < Wo; ++ow) {
          double s = b[co];
          for (int ci = 0; ci < g.C_in; ++ci)
            for (int kh = 0; kh < K; ++kh)
              for (int kw = 0; kw < K; ++kw) {
                const int ih = oh * S - P + kh, iw = ow * S - P + kw;
                if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
                const int plane = W_in_by_out ? ci * g.C_out + co : co * g.C_in + ci;
                s += W[(plane * K + kh) * K + kw] * x[((n * g.C_in + ci) * g.H + ih) * g.W + iw];
              }
          y[((n * g.C_out + co) * Ho + oh) * Wo + ow] = s;
        }
  return y;
}

/// What the classic mistakes of conv forward give on (x, W, b): the kernel flipped, W's channel
/// axes swapped, the bias left out, the input index off by one (the padding, or a + 1 of its own:
/// with padding 0 that reads as a padding of -1), the stride left out.
inline std::vector<testkit::KnownSlip> conv_forward_slips(const std::vector<double>& x, const std::vector<double>& W,
                                                          const std::vector<double>& b, int B, const ConvGeometry& g) {
  std::vector<testkit::KnownSlip> slips = {
      {"the kernel flipped (W[co][ci][K-1-kh][K-1-kw]: a convolution, where the layer computes a cross-correlation)",
       reference::conv_forward(x, flipped_kernel(W, g), b, B, g)},
      {"W read as [C_in, C_out, K, K] (W[ci][co] where W[co][ci] belongs)",
       conv_forward_reading(x, W, b, B, g, g.P, g.S, true)},
      {"the bias b[co] left out", reference::conv_forward(x, W, std::vector<double>(b.size(), 0.0), B, g)}};
  for (int shift : {-1, 1}) {
    const int P = g.P + shift;
    slips.push_back({"the input index off by one (ih = oh*S - P + kh " + std::string(shift < 0 ? "+" : "-") +
                         " 1, likewise iw" + (P >= 0 ? ": as if the padding were " + std::to_string(P) + ", not " +
                                                           std::to_string(g.P)
                                                     : std::string()) +
                         ")",
                     conv_forward_reading(x, W, b, B, g, P, g.S)});
  }
  if (g.P >= 2)
    slips.push_back({"the padding left out of the input index (ih = oh*S - P + kh)", conv_forward_reading(x, W, b, B, g, 0, g.S)});
  if (g.S > 1)
    slips.push_back({"the stride left out of the input index (ih = oh*S - P + kh)", conv_forward_reading(x, W, b, B, g, g.P, 1)});
  return slips;
}

// Max-pool forward with switches for the mistakes.
enum class PoolForwardMistake { None, LastMaximum, PaddingCompetes, ArgmaxInWindow, ArgmaxInBatch };

inline std::vector<double> pool_forward(const std::vector<double>& x, int B, const PoolGeometry& g,
                                        PoolForwardMistake mistake, std::vector<int>* argmax) {
  const int Ho = g.out_h(), Wo = g.out_w();
  std::vector<double> y(static_cast<std::size_t>(B) * g.out_size());
  argmax->assign(y.size(), -1);
  for (int p = 0; p < B * g.C; ++p)
    for (int oh = 0; oh < Ho; ++oh)
      for (int ow = 0; ow < Wo; ++ow) {
        bool have = false;
        int best = -1, best_tap = -1;  // best: the winning image cell ih*W + iw; best_tap: kh*K + kw
        double best_value = 0;
        for (int kh = 0; kh < g.K; ++kh)
          for (int kw = 0; kw < g.K; ++kw) {
            const int ih = oh * g.S - g.P + kh, iw = ow * g.S - g.P + kw;
            const bool inside = ih >= 0 && ih < g.H && iw >= 0 && iw < g.W;
            if (!inside && mistake != PoolForwardMistake::PaddingCompetes) continue;
            const double v = inside ? x[p * g.H * g.W + ih * g.W + iw] : 0.0;  // a padded cell reads 0
            if (have && !(v > best_value || (mistake == PoolForwardMistake::LastMaximum && v == best_value))) continue;
            have = true;
            best_value = v;
            best_tap = kh * g.K + kw;
            if (inside) best = ih * g.W + iw;
          }
        const int o = (p * Ho + oh) * Wo + ow;
        y[o] = best_value;
        (*argmax)[o] = mistake == PoolForwardMistake::ArgmaxInWindow  ? best_tap
                       : mistake == PoolForwardMistake::ArgmaxInBatch ? p * g.H * g.W + best
                                                                      : best;
      }
  return y;
}

/// What the classic mistakes of max-pool forward give on x: the output's and the arg-max's.
struct PoolForwardSlips {
  std::vector<testkit::KnownSlip> y, argmax;
};

inline PoolForwardSlips pool_forward_slips(const std::vector<double>& x, int B, const PoolGeometry& g) {
  PoolForwardSlips s;
  const auto add = [&](PoolForwardMistake m, const std::string& what, bool on_y, bool on_argmax) {
    std::vector<int> argmax;
    const std::vector<double> y = pool_forward(x, B, g, m, &argmax);
    if (on_y) s.y.push_back({what, y});
    if (on_argmax) s.argmax.push_back({what, std::vector<double>(argmax.begin(), argmax.end())});
  };
  add(PoolForwardMistake::LastMaximum, "ties going to the last maximum (>= where > keeps the first)", false, true);
  add(PoolForwardMistake::PaddingCompetes, "padded cells competing as 0 (padding never wins)", true, false);
  add(PoolForwardMistake::ArgmaxInWindow, "the arg-max as the tap's index in the window, kh*K + kw (it is ih*W + iw)",
      false, true);
  add(PoolForwardMistake::ArgmaxInBatch,
      "the arg-max as an index of the whole batch, (n*C + c)*H*W + ih*W + iw (it is ih*W + iw, of the plane)", false,
      true);
  return s;
}

// ---- backward passes (Tasks 2.2, 2.3 and 2.5) -----------------------------------------------

// Conv backward, written from the formulas, with switches for the mistakes.
struct ConvMistakes {
  bool flip_kernel = true;  // false: the input gradient uses W[kh][kw] where the full convolution needs W[K-1-kh][K-1-kw]
  int input_pad_shift = 0;  // the input gradient lands with the padding off by this many cells
  int weight_pad_shift = 0; // the weight gradient reads the input with the padding off by this many cells
};

// dx[n][ci][ih][iw] = sum_{co, a, b} W'[co][ci][a][b] * dy[n][co][oh][ow], the full convolution:
// W' is W flipped in both axes, and output (oh, ow) is where oh*S = ih + P + a - (K-1) (likewise ow).
inline std::vector<double> conv_input_gradient(const std::vector<double>& dy, const std::vector<double>& W, int B,
                                        const ConvGeometry& g, const ConvMistakes& m) {
  const int Ho = g.out_h(), Wo = g.out_w(), K = g.K, P = g.P + m.input_pad_shift;
  std::vector<double> dx(static_cast<std::size_t>(B) * g.in_size(), 0.0);
  for (int n = 0; n < B; ++n)
    for (int ci = 0; ci < g.C_in; ++ci)
      for (int ih = 0; ih < g.H; ++ih)
        for (int iw = 0; iw < g.W; ++iw) {
          double s = 0;
          for (int co = 0; co < g.C_out; ++co)
            for (int a = 0; a < K; ++a)
              for (int b = 0; b < K; ++b) {
                const int sh = ih + P + a - (K - 1), sw = iw + P + b - (K - 1);
                if (sh < 0 || sw < 0 || sh % g.S != 0 || sw % g.S != 0) continue;
                const int oh = sh / g.S, ow = sw / g.S;
                if (oh >= Ho || ow >= Wo) continue;
                const int kh = m.flip_kernel ? K - 1 - a : a, kw = m.flip_kernel ? K - 1 - b : b;
                s += W[((co * g.C_in + ci) * K + kh) * K + kw] * dy[((n * g.C_out + co) * Ho + oh) * Wo + ow];
              }
          dx[((n * g.C_in + ci) * g.H + ih) * g.W + iw] = s;
        }
  return dx;
}

// dW[co][ci][kh][kw] = sum_{n, oh, ow} dy[n][co][oh][ow] * x[n][ci][oh*S - P + kh][ow*S - P + kw]
inline std::vector<double> conv_weight_gradient(const std::vector<double>& x, const std::vector<double>& dy, int B,
                                         const ConvGeometry& g, const ConvMistakes& m) {
  const int Ho = g.out_h(), Wo = g.out_w(), K = g.K, P = g.P + m.weight_pad_shift;
  std::vector<double> dW(static_cast<std::size_t>(g.weight_size()), 0.0);
  for (int n = 0; n < B; ++n)
    for (int co = 0; co < g.C_out; ++co)
      for (int ci = 0; ci < g.C_in; ++ci)
        for (int kh = 0; kh < K; ++kh)
          for (int kw = 0; kw < K; ++kw)
            for (int oh = 0; oh < Ho; ++oh)
              for (int ow = 0; ow < Wo; ++ow) {
                const int ih = oh * g.S - P + kh, iw = ow * g.S - P + kw;
                if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
                dW[((co * g.C_in + ci) * K + kh) * K + kw] +=
                    dy[((n * g.C_out + co) * Ho + oh) * Wo + ow] * x[((n * g.C_in + ci) * g.H + ih) * g.W + iw];
              }
  return dW;
}

// Max-pool backward with switches for the mistakes.
enum class PoolMistake { None, TopLeftOfWindow, OverwriteInsteadOfSum, FirstPlaneOnly };

inline std::vector<double> pool_input_gradient(const std::vector<double>& x, const std::vector<double>& dy, int B,
                                        const PoolGeometry& g, PoolMistake mistake) {
  std::vector<int> argmax;
  reference::maxpool_forward(x, B, g, &argmax);
  const int Ho = g.out_h(), Wo = g.out_w();
  std::vector<double> dx(x.size(), 0.0);
  for (int p = 0; p < B * g.C; ++p)
    for (int oh = 0; oh < Ho; ++oh)
      for (int ow = 0; ow < Wo; ++ow) {
        const int o = (p * Ho + oh) * Wo + ow;
        int cell = argmax[o];
        if (mistake == PoolMistake::TopLeftOfWindow)  // the first image cell of the window, whatever its value
          cell = std::max(oh * g.S - g.P, 0) * g.W + std::max(ow * g.S - g.P, 0);
        const std::size_t plane = mistake == PoolMistake::FirstPlaneOnly ? 0 : static_cast<std::size_t>(p) * g.H * g.W;
        double& target = dx[plane + cell];  // FirstPlaneOnly: the arg-max taken as an index of the whole batch
        target = mistake == PoolMistake::OverwriteInsteadOfSum ? dy[o] : target + dy[o];
      }
  return dx;
}

/// True when a and b agree to rounding (relative to the largest of b).
inline bool same_values(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  double scale = 1e-300, diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    scale = std::max(scale, std::fabs(b[i]));
    diff = std::max(diff, std::fabs(a[i] - b[i]));
  }
  return diff <= 1e-9 * scale;
}

/// The classic mistake a conv input gradient `dx` is, exactly, or "" (dy is the output gradient fed in;
/// `stale` what dx held before the call, when the test filled it).
inline std::string conv_input_mistake(const std::vector<double>& dx, const std::vector<double>& dy,
                                      const std::vector<double>& W, int B, const ConvGeometry& g, double stale = NAN) {
  if (std::isfinite(stale)) {
    std::vector<double> kept = conv_input_gradient(dy, W, B, g, {});
    for (double& v : kept) v += stale;
    if (same_values(dx, kept))
      return "dx was not zeroed first: every cell still holds the " + testkit::detail::number(stale) +
             " it held before the call, plus its gradient";
  }
  if (g.K > 1) {
    ConvMistakes m;
    m.flip_kernel = false;
    if (same_values(dx, conv_input_gradient(dy, W, B, g, m)))
      return "dx is the full convolution with the kernel NOT flipped: where it reads W[co][ci][kh][kw] it must read "
             "W[co][ci][K-1-kh][K-1-kw] (lesson 02, 'Why the input gradient is a full convolution with the flipped "
             "kernel')";
  }
  for (int shift : {-1, 1}) {
    ConvMistakes m;
    m.input_pad_shift = shift;
    if (same_values(dx, conv_input_gradient(dy, W, B, g, m)))
      return "dx lands as if the padding were " + std::to_string(g.P + shift) + ", not " + std::to_string(g.P) +
             ": input cell ih meets output oh where oh*S = ih + P - kh (lesson 02, 'How padding changes which cells "
             "receive gradient')";
  }
  return "";
}

/// The classic mistake a conv weight gradient `dW` is, exactly, or "".
inline std::string conv_weight_mistake(const std::vector<double>& dW, const std::vector<double>& x,
                                       const std::vector<double>& dy, int B, const ConvGeometry& g) {
  if (g.K > 1 && same_values(dW, flipped_kernel(conv_weight_gradient(x, dy, B, g, {}), g)))
    return "dW is flipped in both kernel axes: the gradient of W[co][ci][kh][kw] is the input correlated with dy at "
           "offset (kh, kw), ih = oh*S - P + kh, with no flip (the flip belongs to the input gradient)";
  for (int shift : {-1, 1}) {
    ConvMistakes m;
    m.weight_pad_shift = shift;
    if (same_values(dW, conv_weight_gradient(x, dy, B, g, m)))
      return "dW reads the input as if the padding were " + std::to_string(g.P + shift) + ", not " +
             std::to_string(g.P) + ": the input cell under kernel tap kh of output oh is ih = oh*S - P + kh";
  }
  return "";
}

/// The classic mistake a max-pool input gradient `dx` is, exactly, or "" (x the pool's input, dy its output
/// gradient; `stale` what dx held before the call, when the test filled it).
inline std::string pool_mistake(const std::vector<double>& dx, const std::vector<double>& x,
                                const std::vector<double>& dy, int B, const PoolGeometry& g, double stale = NAN) {
  if (std::isfinite(stale)) {
    std::vector<double> kept = pool_input_gradient(x, dy, B, g, PoolMistake::None);
    for (double& v : kept) v += stale;
    if (same_values(dx, kept))
      return "dx was not zeroed first: every cell still holds the " + testkit::detail::number(stale) +
             " it held before the call, plus its gradient";
  }
  if (same_values(dx, pool_input_gradient(x, dy, B, g, PoolMistake::FirstPlaneOnly)))
    return "every dy lands in the first plane (example 0, channel 0): the arg-max is a cell of its own plane "
           "(n, c), which starts at (n*C + c)*H*W in dx";
  if (same_values(dx, pool_input_gradient(x, dy, B, g, PoolMistake::TopLeftOfWindow)))
    return "each dy goes to the first cell of its window, not to the window's maximum: send it to the cell the "
           "forward pass's arg-max names";
  if (same_values(dx, pool_input_gradient(x, dy, B, g, PoolMistake::OverwriteInsteadOfSum)))
    return "where windows overlap, one dy overwrites another: a cell that wins several windows gets the sum (+=)";
  return "";
}

/// Names the mistake in a failed check's message ("...; it is this mistake: ..."), in place of the
/// pattern the checker found: next to the exact mistake, a pattern of some entries (a flipped
/// kernel is right at its centre tap, wrong "on the border") can only mislead.
inline void name_mistake(GradCheckResult& r, const std::string& mistake) {
  if (r.passed || mistake.empty()) return;
  r.pattern = "it is this mistake: " + mistake;
}

}  // namespace course::planted
