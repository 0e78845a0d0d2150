// The gradient checker must catch the classic conv and max-pool mistakes. Each
// test plants one mistake in a backward pass of planted_mistakes.hpp (so these
// tests do not depend on the learner's code) and expects a rejection; the
// correct version, from the same code with the mistake switched off, must pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "course_test.hpp"
#include "planted_mistakes.hpp"
#include "reference.hpp"

using namespace course;

namespace {

using namespace course::planted;

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

GradCheckResult check_pool(int B, const PoolGeometry& g, std::vector<double> x, PoolMistake mistake) {
  const auto r = testkit::random_vector(B * g.out_size(), 81);
  const auto dx = pool_input_gradient(x, r, B, g, mistake);
  return check_gradient("dx of max-pool", x.data(), {B, g.C, g.H, g.W}, dx.data(),
                        [&] { return testkit::weighted_sum(reference::maxpool_forward(x, B, g), r); });
}

// Which of conv's gradients a test plants its mistake in.
enum class Gradient { Input, Weight };

// The padding off by one cell, either way, in conv's input or weight gradient: the checker must reject both.
void expect_padding_shifts_rejected(Gradient gradient) {
  for (int shift : {-1, 1}) {
    ConvFixture f;
    ConvMistakes m;
    if (gradient == Gradient::Input)
      m.input_pad_shift = shift;
    else
      m.weight_pad_shift = shift;
    SCOPED_TRACE("padding shifted by " + std::to_string(shift));
    EXPECT_GRADIENT_REJECTED(gradient == Gradient::Input ? f.check_dx(m) : f.check_dW(m));
  }
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

TEST(Stage02_Checker, RejectsPaddingOffByOneInInputGradient) { expect_padding_shifts_rejected(Gradient::Input); }

TEST(Stage02_Checker, RejectsPaddingOffByOneInWeightGradient) { expect_padding_shifts_rejected(Gradient::Weight); }

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

// The arg-max read as an index of the whole batch: every plane's gradient lands in plane 0.
TEST(Stage02_Checker, RejectsMaxPoolGradientsAllSentToTheFirstPlane) {
  const PoolGeometry g{2, 6, 6, 2, 2, 0};
  EXPECT_GRADIENT_REJECTED(check_pool(2, g, reference::distinct_values(2 * g.in_size(), 85), PoolMistake::FirstPlaneOnly));
}

// The task tests of 2.2, 2.3 and 2.5 name a mistake when a failing answer is exactly one of these: each planted
// mistake is named, and neither the correct answer nor an unrelated wrong one is.
TEST(Stage02_Checker, NamesEachPlantedMistakeAndNothingElse) {
  const auto has = [](const std::string& text, const char* part) { return text.find(part) != std::string::npos; };
  ConvFixture f;
  ConvMistakes unflipped, shifted, weight_shifted;
  unflipped.flip_kernel = false;
  shifted.input_pad_shift = 1;
  weight_shifted.weight_pad_shift = -1;
  const auto dx = [&](const ConvMistakes& m) { return conv_input_gradient(f.r, f.W, f.B, f.g, m); };
  EXPECT_TRUE(has(conv_input_mistake(dx(unflipped), f.r, f.W, f.B, f.g), "kernel NOT flipped"));
  EXPECT_TRUE(has(conv_input_mistake(dx(shifted), f.r, f.W, f.B, f.g), "as if the padding were 2, not 1"));
  EXPECT_EQ(conv_input_mistake(dx({}), f.r, f.W, f.B, f.g), "");
  auto scaled = dx({});
  for (double& v : scaled) v *= 2;
  EXPECT_EQ(conv_input_mistake(scaled, f.r, f.W, f.B, f.g), "");
  const auto dW = conv_weight_gradient(f.x, f.r, f.B, f.g, weight_shifted);
  EXPECT_TRUE(has(conv_weight_mistake(dW, f.x, f.r, f.B, f.g), "as if the padding were 0, not 1"));
  EXPECT_EQ(conv_weight_mistake(conv_weight_gradient(f.x, f.r, f.B, f.g, {}), f.x, f.r, f.B, f.g), "");
  const auto dW_flipped = flipped_kernel(conv_weight_gradient(f.x, f.r, f.B, f.g, {}), f.g);
  EXPECT_TRUE(has(conv_weight_mistake(dW_flipped, f.x, f.r, f.B, f.g), "flipped in both kernel axes"));

  const PoolGeometry g{2, 5, 5, 3, 2, 0};  // overlapping windows, two planes per example
  const auto x = reference::distinct_values(2 * g.in_size(), 86), r = testkit::random_vector(2 * g.out_size(), 87);
  const auto pool = [&](PoolMistake m) { return pool_input_gradient(x, r, 2, g, m); };
  EXPECT_TRUE(has(pool_mistake(pool(PoolMistake::FirstPlaneOnly), x, r, 2, g), "the first plane"));
  EXPECT_TRUE(has(pool_mistake(pool(PoolMistake::TopLeftOfWindow), x, r, 2, g), "first cell of its window"));
  EXPECT_TRUE(has(pool_mistake(pool(PoolMistake::OverwriteInsteadOfSum), x, r, 2, g), "overwrites"));
  EXPECT_EQ(pool_mistake(pool(PoolMistake::None), x, r, 2, g), "");
  auto stale = pool(PoolMistake::None);
  for (double& v : stale) v += 999;
  EXPECT_TRUE(has(pool_mistake(stale, x, r, 2, g, 999.0), "not zeroed first"));
  EXPECT_EQ(pool_mistake(pool(PoolMistake::None), x, r, 2, g, 999.0), "");

  GradCheckResult failed;
  failed.passed = false;
  failed.pattern = "analytic = 2 x numeric";
  name_mistake(failed, "dx is wrong this way");
  EXPECT_EQ(failed.pattern, "it is this mistake: dx is wrong this way");
}
