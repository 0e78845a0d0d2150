// The slips catalog of stage 02: every slip of tests/slips.def for this stage, planted in a
// learner's wrong copy of the task's code (written below in the plainest correct form the lesson's
// hints give, with one line mutated per slip; never computed from the tests' known-slip lists),
// run through the very checks its task tests run (conv_checks.hpp, maxpool_checks.hpp, ...), and
// its message held against the row's words.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <string>

#include "avgpool_layer_checks.hpp"
#include "conv_checks.hpp"
#include "flatten_checks.hpp"
#include "maxpool_checks.hpp"
#include "slip_catalog.hpp"

using namespace course;
using namespace course::s02test;

namespace {

// ---- Task 2.1: seven loops, taps outside the image skipped ------------------------------------

enum class ForwardSlip { KernelFlipped, IndexPlusOne, NoStride, ChannelsSwapped, NoBias };

template <ForwardSlip slip, typename T>
void conv_forward_with(const T* x, const T* W, const T* b, T* y, int B, const ConvGeometry& g) {
  const int Ho = g.out_h(), Wo = g.out_w(), K = g.K;
  for (int n = 0; n < B; ++n)
    for (int co = 0; co < g.C_out; ++co)
      for (int oh = 0; oh < Ho; ++oh)
        for (int ow = 0; ow < Wo; ++ow) {
          T s = slip == ForwardSlip::NoBias ? T(0) : b[co];
          for (int ci = 0; ci < g.C_in; ++ci)
            for (int kh = 0; kh < K; ++kh)
              for (int kw = 0; kw < K; ++kw) {
                const int S = slip == ForwardSlip::NoStride ? 1 : g.S;
                const int step = slip == ForwardSlip::IndexPlusOne ? 1 : 0;
                const int ih = oh * S - g.P + kh + step, iw = ow * S - g.P + kw + step;
                if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
                const int plane = slip == ForwardSlip::ChannelsSwapped ? ci * g.C_out + co : co * g.C_in + ci;
                const int tap = slip == ForwardSlip::KernelFlipped ? (K - 1 - kh) * K + (K - 1 - kw) : kh * K + kw;
                s += W[plane * K * K + tap] * x[((n * g.C_in + ci) * g.H + ih) * g.W + iw];
              }
          y[((n * g.C_out + co) * Ho + oh) * Wo + ow] = s;
        }
}

template <ForwardSlip slip>
void plant_conv_forward() {
  check_conv_forward([](const auto* x, const auto* W, const auto* b, auto* y, int B, const ConvGeometry& g) {
    conv_forward_with<slip>(x, W, b, y, B, g);
  });
}

// ---- Task 2.2: dW and db summed over (n, oh, ow) ----------------------------------------------

enum class WeightSlip { NotZeroed, ZeroedPerExample, KernelFlipped, IndexPlusOne };

template <WeightSlip slip>
void conv_weight_with(const double* x, const double* dy, double* dW, double* db, int B, const ConvGeometry& g) {
  const int Ho = g.out_h(), Wo = g.out_w(), K = g.K;
  if (slip != WeightSlip::NotZeroed) std::fill(dW, dW + g.weight_size(), 0.0), std::fill(db, db + g.C_out, 0.0);
  for (int n = 0; n < B; ++n) {
    if (slip == WeightSlip::ZeroedPerExample) std::fill(dW, dW + g.weight_size(), 0.0), std::fill(db, db + g.C_out, 0.0);
    for (int co = 0; co < g.C_out; ++co)
      for (int oh = 0; oh < Ho; ++oh)
        for (int ow = 0; ow < Wo; ++ow) {
          const double d = dy[((n * g.C_out + co) * Ho + oh) * Wo + ow];
          db[co] += d;
          for (int ci = 0; ci < g.C_in; ++ci)
            for (int kh = 0; kh < K; ++kh)
              for (int kw = 0; kw < K; ++kw) {
                const int step = slip == WeightSlip::IndexPlusOne ? 1 : 0;
                const int ih = oh * g.S - g.P + kh + step, iw = ow * g.S - g.P + kw + step;
                if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
                const int tap = slip == WeightSlip::KernelFlipped ? (K - 1 - kh) * K + (K - 1 - kw) : kh * K + kw;
                dW[(co * g.C_in + ci) * K * K + tap] += d * x[((n * g.C_in + ci) * g.H + ih) * g.W + iw];
              }
        }
  }
}

// ---- Task 2.3: the full convolution with the flipped kernel (a gather), or the scatter form ----

enum class InputSlip { KernelNotFlipped, PaddingPlusOne };

template <InputSlip slip>
void conv_input_with(const double* dy, const double* W, double* dx, int B, const ConvGeometry& g) {
  const int Ho = g.out_h(), Wo = g.out_w(), K = g.K;
  const int P = slip == InputSlip::PaddingPlusOne ? g.P + 1 : g.P;
  for (int n = 0; n < B; ++n)
    for (int ci = 0; ci < g.C_in; ++ci)
      for (int ih = 0; ih < g.H; ++ih)
        for (int iw = 0; iw < g.W; ++iw) {
          double s = 0;
          for (int co = 0; co < g.C_out; ++co)
            for (int a = 0; a < K; ++a)
              for (int c = 0; c < K; ++c) {
                const int sh = ih + P + a - (K - 1), sw = iw + P + c - (K - 1);  // oh*S, ow*S
                if (sh < 0 || sw < 0 || sh % g.S != 0 || sw % g.S != 0 || sh / g.S >= Ho || sw / g.S >= Wo) continue;
                const int tap = slip == InputSlip::KernelNotFlipped ? a * K + c : (K - 1 - a) * K + (K - 1 - c);
                s += W[(co * g.C_in + ci) * K * K + tap] * dy[((n * g.C_out + co) * Ho + sh / g.S) * Wo + sw / g.S];
              }
          dx[((n * g.C_in + ci) * g.H + ih) * g.W + iw] = s;
        }
}

// The hint's plainest form: each dy times the kernel added onto its window, dx never zeroed.
void conv_input_scattered_unzeroed(const double* dy, const double* W, double* dx, int B, const ConvGeometry& g) {
  const int Ho = g.out_h(), Wo = g.out_w(), K = g.K;
  for (int n = 0; n < B; ++n)  // slip: std::fill(dx, dx + B * g.in_size(), 0.0) first
    for (int co = 0; co < g.C_out; ++co)
      for (int oh = 0; oh < Ho; ++oh)
        for (int ow = 0; ow < Wo; ++ow)
          for (int ci = 0; ci < g.C_in; ++ci)
            for (int kh = 0; kh < K; ++kh)
              for (int kw = 0; kw < K; ++kw) {
                const int ih = oh * g.S - g.P + kh, iw = ow * g.S - g.P + kw;
                if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
                dx[((n * g.C_in + ci) * g.H + ih) * g.W + iw] +=
                    W[((co * g.C_in + ci) * K + kh) * K + kw] * dy[((n * g.C_out + co) * Ho + oh) * Wo + ow];
              }
}

// ---- Task 2.4: each window cut to the image, a strict > keeping the first maximum -------------

enum class PoolSlip { LastMaximum, PaddingCompetes, ArgmaxInWindow, ArgmaxInBatch };

template <PoolSlip slip, typename T>
void maxpool_forward_with(const T* x, T* y, int* argmax, int B, const PoolGeometry& g) {
  const int Ho = g.out_h(), Wo = g.out_w();
  for (int p = 0; p < B * g.C; ++p)
    for (int oh = 0; oh < Ho; ++oh)
      for (int ow = 0; ow < Wo; ++ow) {
        int best = -1, best_tap = -1;
        T best_value = 0;
        for (int kh = 0; kh < g.K; ++kh)
          for (int kw = 0; kw < g.K; ++kw) {
            const int ih = oh * g.S - g.P + kh, iw = ow * g.S - g.P + kw;
            const bool inside = ih >= 0 && ih < g.H && iw >= 0 && iw < g.W;
            if (!inside && slip != PoolSlip::PaddingCompetes) continue;
            const T v = inside ? x[p * g.H * g.W + ih * g.W + iw] : T(0);  // PaddingCompetes: a padded cell is 0
            const bool wins = best_tap < 0 || v > best_value || (slip == PoolSlip::LastMaximum && v == best_value);
            if (!wins) continue;
            best_value = v, best_tap = kh * g.K + kw;
            if (inside) best = ih * g.W + iw;
          }
        y[(p * Ho + oh) * Wo + ow] = best_value;
        argmax[(p * Ho + oh) * Wo + ow] = slip == PoolSlip::ArgmaxInWindow  ? best_tap
                                          : slip == PoolSlip::ArgmaxInBatch ? p * g.H * g.W + best
                                                                        : best;
      }
}

template <PoolSlip slip>
void plant_maxpool_forward() {
  check_maxpool_forward([](const auto* x, auto* y, int* argmax, int B, const PoolGeometry& g) {
    maxpool_forward_with<slip>(x, y, argmax, B, g);
  });
}

// ---- Task 2.5: dx zeroed, each dy added to its plane's arg-max cell ---------------------------

enum class RouteSlip { Overwrite, NotZeroed, NoPlaneOffset };

template <RouteSlip slip>
void maxpool_backward_with(const double* dy, const int* argmax, double* dx, int B, const PoolGeometry& g) {
  const int outputs = g.out_h() * g.out_w(), cells = g.H * g.W;
  if (slip != RouteSlip::NotZeroed) std::fill(dx, dx + B * g.C * cells, 0.0);
  for (int p = 0; p < B * g.C; ++p)
    for (int o = 0; o < outputs; ++o) {
      double& cell = dx[(slip == RouteSlip::NoPlaneOffset ? 0 : p * cells) + argmax[p * outputs + o]];
      cell = slip == RouteSlip::Overwrite ? dy[p * outputs + o] : cell + dy[p * outputs + o];
    }
}

// ---- Task 2.6: flatten, a copy -----------------------------------------------------------------

void flatten_one_past_the_end(const float* x, float* y, long count) {
  for (long i = 0; i <= count; ++i) y[i] = i < count ? x[i] : 0.f;  // slip: i < count
}

// ---- Task 2.8: average-pool, the window cut to the image, divided by K*K ----------------------

template <typename T>
void avgpool_forward_by_image_cells(const T* x, T* y, int B, const PoolGeometry& g) {
  const int Ho = g.out_h(), Wo = g.out_w();
  for (int p = 0; p < B * g.C; ++p)
    for (int oh = 0; oh < Ho; ++oh)
      for (int ow = 0; ow < Wo; ++ow) {
        const int h0 = std::max(oh * g.S - g.P, 0), h1 = std::min(oh * g.S - g.P + g.K, g.H);
        const int w0 = std::max(ow * g.S - g.P, 0), w1 = std::min(ow * g.S - g.P + g.K, g.W);
        T sum = 0;
        for (int ih = h0; ih < h1; ++ih)
          for (int iw = w0; iw < w1; ++iw) sum += x[p * g.H * g.W + ih * g.W + iw];
        y[(p * Ho + oh) * Wo + ow] = sum / T((h1 - h0) * (w1 - w0));  // slip: / (K*K)
      }
}

template <typename T>
void avgpool_forward_right(const T* x, T* y, int B, const PoolGeometry& g) {
  const int Ho = g.out_h(), Wo = g.out_w();
  for (int p = 0; p < B * g.C; ++p)
    for (int oh = 0; oh < Ho; ++oh)
      for (int ow = 0; ow < Wo; ++ow) {
        const int h0 = std::max(oh * g.S - g.P, 0), h1 = std::min(oh * g.S - g.P + g.K, g.H);
        const int w0 = std::max(ow * g.S - g.P, 0), w1 = std::min(ow * g.S - g.P + g.K, g.W);
        T sum = 0;
        for (int ih = h0; ih < h1; ++ih)
          for (int iw = w0; iw < w1; ++iw) sum += x[p * g.H * g.W + ih * g.W + iw];
        y[(p * Ho + oh) * Wo + ow] = sum / T(g.K * g.K);
      }
}

enum class ShareSlip { ByImageCells, Overwrite, NotZeroed, Whole, Right };

template <ShareSlip slip>
void avgpool_backward_with(const double* dy, double* dx, int B, const PoolGeometry& g) {
  const int Ho = g.out_h(), Wo = g.out_w();
  if (slip != ShareSlip::NotZeroed) std::fill(dx, dx + B * g.in_size(), 0.0);
  for (int p = 0; p < B * g.C; ++p)
    for (int oh = 0; oh < Ho; ++oh)
      for (int ow = 0; ow < Wo; ++ow) {
        const int h0 = std::max(oh * g.S - g.P, 0), h1 = std::min(oh * g.S - g.P + g.K, g.H);
        const int w0 = std::max(ow * g.S - g.P, 0), w1 = std::min(ow * g.S - g.P + g.K, g.W);
        const double divisor = slip == ShareSlip::ByImageCells ? (h1 - h0) * (w1 - w0) : slip == ShareSlip::Whole ? 1 : g.K * g.K;
        const double share = dy[(p * Ho + oh) * Wo + ow] / divisor;
        for (int ih = h0; ih < h1; ++ih)
          for (int iw = w0; iw < w1; ++iw) {
            double& cell = dx[p * g.H * g.W + ih * g.W + iw];
            cell = slip == ShareSlip::Overwrite ? share : cell + share;
          }
      }
}

template <ShareSlip slip>
void plant_avgpool_backward() {
  check_avgpool([](const auto* x, auto* y, int B, const PoolGeometry& g) { avgpool_forward_right(x, y, B, g); },
                avgpool_backward_with<slip>);
}

}  // namespace

TEST(Stage02_Slips, EveryListedSlipIsNamed) {
  testkit::expect_every_slip_named(
      "02",
      {
          {"conv_kernel_flipped", plant_conv_forward<ForwardSlip::KernelFlipped>},
          {"conv_index_plus_one", plant_conv_forward<ForwardSlip::IndexPlusOne>},
          {"conv_stride_left_out", plant_conv_forward<ForwardSlip::NoStride>},
          {"conv_channels_swapped", plant_conv_forward<ForwardSlip::ChannelsSwapped>},
          {"conv_bias_left_out", plant_conv_forward<ForwardSlip::NoBias>},
          {"conv_dW_not_zeroed", [] { check_conv_backward_weight(conv_weight_with<WeightSlip::NotZeroed>); }},
          {"conv_dW_per_example", [] { check_conv_backward_weight(conv_weight_with<WeightSlip::ZeroedPerExample>); }},
          {"conv_dW_flipped", [] { check_conv_backward_weight(conv_weight_with<WeightSlip::KernelFlipped>); }},
          {"conv_dW_index_plus_one", [] { check_conv_backward_weight(conv_weight_with<WeightSlip::IndexPlusOne>); }},
          {"conv_dx_not_flipped", [] { check_conv_backward_input(conv_input_with<InputSlip::KernelNotFlipped>); }},
          {"conv_dx_padding_off", [] { check_conv_backward_input(conv_input_with<InputSlip::PaddingPlusOne>); }},
          {"conv_dx_not_zeroed", [] { check_conv_backward_input(conv_input_scattered_unzeroed); }},
          {"maxpool_last_maximum", plant_maxpool_forward<PoolSlip::LastMaximum>},
          {"maxpool_padding_competes", plant_maxpool_forward<PoolSlip::PaddingCompetes>},
          {"maxpool_argmax_in_window", plant_maxpool_forward<PoolSlip::ArgmaxInWindow>},
          {"maxpool_argmax_in_batch", plant_maxpool_forward<PoolSlip::ArgmaxInBatch>},
          {"maxpool_grad_overwrites", [] { check_maxpool_backward(maxpool_backward_with<RouteSlip::Overwrite>); }},
          {"maxpool_dx_not_zeroed", [] { check_maxpool_backward(maxpool_backward_with<RouteSlip::NotZeroed>); }},
          {"maxpool_grad_plane_0", [] { check_maxpool_backward(maxpool_backward_with<RouteSlip::NoPlaneOffset>); }},
          {"flatten_past_the_end", [] { check_flatten_forward(flatten_one_past_the_end); }},
          {"avgpool_by_image_cells",
           [] {
             check_avgpool([](const auto* x, auto* y, int B, const PoolGeometry& g) {
               avgpool_forward_by_image_cells(x, y, B, g);
             }, avgpool_backward_with<ShareSlip::Right>);
           }},
          {"avgpool_grad_by_image_cells", plant_avgpool_backward<ShareSlip::ByImageCells>},
          {"avgpool_grad_overwrites", plant_avgpool_backward<ShareSlip::Overwrite>},
          {"avgpool_dx_not_zeroed", plant_avgpool_backward<ShareSlip::NotZeroed>},
          {"avgpool_grad_whole_dy", plant_avgpool_backward<ShareSlip::Whole>},
      });
}
