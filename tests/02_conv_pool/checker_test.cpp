// The gradient checker must catch the classic conv and max-pool mistakes. Each
// test plants one mistake in a backward pass written here (so these tests do
// not depend on the learner's code) and expects a rejection; the correct
// version, from the same code with the mistake switched off, must pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "course_test.hpp"
#include "reference.hpp"

using namespace course;

namespace {

// Conv backward, written from the formulas, with switches for the mistakes.
struct ConvMistakes {
  bool flip_kernel = true;  // false: the input gradient uses W[kh][kw] where the full convolution needs W[K-1-kh][K-1-kw]
  int input_pad_shift = 0;  // the input gradient lands with the padding off by this many cells
  int weight_pad_shift = 0; // the weight gradient reads the input with the padding off by this many cells
};

// dx[n][ci][ih][iw] = sum_{co, a, b} W'[co][ci][a][b] * dy[n][co][oh][ow], the full convolution:
// W' is W flipped in both axes, and output (oh, ow) is where oh*S = ih + P + a - (K-1) (likewise ow).
std::vector<double> conv_input_gradient(const std::vector<double>& dy, const std::vector<double>& W, int B,
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
std::vector<double> conv_weight_gradient(const std::vector<double>& x, const std::vector<double>& dy, int B,
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

struct ConvFixture {
  int B = 2;
  ConvGeometry g{2, 6, 5, 3, 3, 1, 1};  // 2 -> 3 channels, 3x3, pad 1, on 6x5
  std::vector<double> x, W, b, r;
  explicit ConvFixture(int stride = 1) {
    g.S = stride;
    x = testkit::random_vector(B * g.in_size(), 71);
    W = testkit::random_vector(g.weight_size(), 72);
    b = testkit::random_vector(g.C_out, 73);
    r = testkit::random_vector(B * g.out_size(), 74);
  }
  double loss() const { return testkit::weighted_sum(reference::conv_forward(x, W, b, B, g), r); }
  GradCheckResult check_dx(const ConvMistakes& m) {
    const auto dx = conv_input_gradient(r, W, B, g, m);
    return check_gradient("dx of conv", x.data(), {B, g.C_in, g.H, g.W}, dx.data(), [&] { return loss(); });
  }
  GradCheckResult check_dW(const ConvMistakes& m) {
    const auto dW = conv_weight_gradient(x, r, B, g, m);
    return check_gradient("dW of conv", W.data(), {g.C_out, g.C_in, g.K, g.K}, dW.data(), [&] { return loss(); });
  }
};

// Max-pool backward with switches for the mistakes.
enum class PoolMistake { None, TopLeftOfWindow, OverwriteInsteadOfSum };

std::vector<double> pool_input_gradient(const std::vector<double>& x, const std::vector<double>& dy, int B,
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
        double& target = dx[static_cast<std::size_t>(p) * g.H * g.W + cell];
        target = mistake == PoolMistake::OverwriteInsteadOfSum ? dy[o] : target + dy[o];
      }
  return dx;
}

GradCheckResult check_pool(int B, const PoolGeometry& g, std::vector<double> x, PoolMistake mistake) {
  const auto r = testkit::random_vector(B * g.out_size(), 81);
  const auto dx = pool_input_gradient(x, r, B, g, mistake);
  return check_gradient("dx of max-pool", x.data(), {B, g.C, g.H, g.W}, dx.data(),
                        [&] { return testkit::weighted_sum(reference::maxpool_forward(x, B, g), r); });
}

}  // namespace

TEST(Stage02_Checker, AcceptsCorrectConvGradients) {
  for (int stride : {1, 2}) {
    ConvFixture f(stride);
    EXPECT_GRADIENT_OK(f.check_dx({}));
    EXPECT_GRADIENT_OK(f.check_dW({}));
  }
}

TEST(Stage02_Checker, RejectsKernelNotFlippedInInputGradient) {
  for (int stride : {1, 2}) {
    ConvFixture f(stride);
    ConvMistakes m;
    m.flip_kernel = false;
    SCOPED_TRACE("stride " + std::to_string(stride));
    EXPECT_GRADIENT_REJECTED(f.check_dx(m));
  }
}

TEST(Stage02_Checker, RejectsPaddingOffByOneInInputGradient) {
  for (int shift : {-1, 1}) {
    ConvFixture f;
    ConvMistakes m;
    m.input_pad_shift = shift;
    SCOPED_TRACE("padding shifted by " + std::to_string(shift));
    EXPECT_GRADIENT_REJECTED(f.check_dx(m));
  }
}

TEST(Stage02_Checker, RejectsPaddingOffByOneInWeightGradient) {
  for (int shift : {-1, 1}) {
    ConvFixture f;
    ConvMistakes m;
    m.weight_pad_shift = shift;
    SCOPED_TRACE("padding shifted by " + std::to_string(shift));
    EXPECT_GRADIENT_REJECTED(f.check_dW(m));
  }
}

TEST(Stage02_Checker, AcceptsCorrectMaxPoolGradients) {
  const PoolGeometry overlapping{2, 7, 6, 3, 2, 1};
  EXPECT_GRADIENT_OK(check_pool(2, overlapping, reference::distinct_values(2 * overlapping.in_size(), 82), PoolMistake::None));
}

TEST(Stage02_Checker, RejectsMaxPoolGradientSentToTheWrongCell) {
  const PoolGeometry g{2, 6, 6, 2, 2, 0};
  EXPECT_GRADIENT_REJECTED(check_pool(2, g, reference::distinct_values(2 * g.in_size(), 83), PoolMistake::TopLeftOfWindow));
}

// 3x3 windows at stride 2 on a 5x5 plane share row 2 and column 2; the largest
// value sits at (2, 2), so it wins all four windows and must receive the sum
// of four gradients, not the last one written.
TEST(Stage02_Checker, RejectsOverlappingWindowGradientsOverwrittenInsteadOfSummed) {
  const PoolGeometry g{1, 5, 5, 3, 2, 0};
  auto x = reference::distinct_values(25, 84);
  std::swap(*std::max_element(x.begin(), x.end()), x[2 * 5 + 2]);
  EXPECT_GRADIENT_OK(check_pool(1, g, x, PoolMistake::None));
  EXPECT_GRADIENT_REJECTED(check_pool(1, g, x, PoolMistake::OverwriteInsteadOfSum));
}
