// The gradient checker must reject wrong backward passes. Each test plants one
// classic mistake in an otherwise correct reference written here (so these
// tests do not depend on the learner's code) and expects a rejection; the
// correct reference must pass.
#include <gtest/gtest.h>

#include <cmath>

#include "course_test.hpp"

using namespace course;

namespace {
const int B = 3, IN = 4, OUT = 5, K = 5;

// Reference dense forward, y = x W^T + b.
std::vector<double> dense(const std::vector<double>& x, const std::vector<double>& W, const std::vector<double>& b) {
  std::vector<double> y(B * OUT);
  for (int n = 0; n < B; ++n)
    for (int o = 0; o < OUT; ++o) {
      double s = b[o];
      for (int i = 0; i < IN; ++i) s += W[o * IN + i] * x[n * IN + i];
      y[n * OUT + o] = s;
    }
  return y;
}

double softmax_ce(const std::vector<double>& z, const std::vector<int>& labels, std::vector<double>* probs) {
  double total = 0;
  probs->assign(z.size(), 0);
  for (int n = 0; n < B; ++n) {
    double m = z[n * K];
    for (int k = 1; k < K; ++k) m = std::max(m, z[n * K + k]);
    double sum = 0;
    for (int k = 0; k < K; ++k) sum += std::exp(z[n * K + k] - m);
    for (int k = 0; k < K; ++k) (*probs)[n * K + k] = std::exp(z[n * K + k] - m) / sum;
    total += std::log(sum) - (z[n * K + labels[n]] - m);
  }
  return total / B;
}

struct DenseFixture {
  std::vector<double> x = testkit::random_vector(B * IN, 1), W = testkit::random_vector(OUT * IN, 2),
                      b = testkit::random_vector(OUT, 3), r = testkit::random_vector(B * OUT, 4);
  double loss() { return testkit::weighted_sum(dense(x, W, b), r); }
  // Correct gradients of loss().
  std::vector<double> dW() {
    std::vector<double> g(OUT * IN, 0);
    for (int n = 0; n < B; ++n)
      for (int o = 0; o < OUT; ++o)
        for (int i = 0; i < IN; ++i) g[o * IN + i] += r[n * OUT + o] * x[n * IN + i];
    return g;
  }
  std::vector<double> db() {
    std::vector<double> g(OUT, 0);
    for (int n = 0; n < B; ++n)
      for (int o = 0; o < OUT; ++o) g[o] += r[n * OUT + o];
    return g;
  }
};
}  // namespace

TEST(Stage01_Checker, AcceptsCorrectDenseGradients) {
  DenseFixture f;
  auto dW = f.dW(), db = f.db();
  EXPECT_GRADIENT_OK(check_gradient("dW", f.W.data(), {OUT, IN}, dW.data(), [&] { return f.loss(); }));
  EXPECT_GRADIENT_OK(check_gradient("db", f.b.data(), {OUT}, db.data(), [&] { return f.loss(); }));
}

TEST(Stage01_Checker, RejectsTransposedWeightGradient) {
  DenseFixture f;
  const auto good = f.dW();
  std::vector<double> bad(OUT * IN);  // dW laid out as [IN, OUT] in an [OUT, IN] buffer
  for (int o = 0; o < OUT; ++o)
    for (int i = 0; i < IN; ++i) bad[i * OUT + o] = good[o * IN + i];
  EXPECT_GRADIENT_REJECTED(check_gradient("dW (transposed)", f.W.data(), {OUT, IN}, bad.data(), [&] { return f.loss(); }));
}

TEST(Stage01_Checker, RejectsBiasGradientNotSummedOverTheBatch) {
  DenseFixture f;
  std::vector<double> bad(OUT);  // only the first example's dy
  for (int o = 0; o < OUT; ++o) bad[o] = f.r[o];
  EXPECT_GRADIENT_REJECTED(check_gradient("db (one example)", f.b.data(), {OUT}, bad.data(), [&] { return f.loss(); }));
}

TEST(Stage01_Checker, RejectsSoftmaxGradientWithoutTheLabelTerm) {
  auto z = testkit::random_vector(B * K, 5, -2, 2);
  const auto labels = testkit::random_labels(B, K, 6);
  std::vector<double> probs;
  softmax_ce(z, labels, &probs);
  std::vector<double> good(B * K), bad(B * K);
  for (int i = 0; i < B * K; ++i) good[i] = bad[i] = probs[i] / B;  // bad: p / B, the "- y" forgotten
  for (int n = 0; n < B; ++n) good[n * K + labels[n]] -= 1.0 / B;
  auto loss = [&] {
    std::vector<double> p;
    return softmax_ce(z, labels, &p);
  };
  EXPECT_GRADIENT_OK(check_gradient("dlogits", z.data(), {B, K}, good.data(), loss));
  EXPECT_GRADIENT_REJECTED(check_gradient("dlogits (no label term)", z.data(), {B, K}, bad.data(), loss));
}

TEST(Stage01_Checker, RejectsMissingReluMask) {
  auto x = testkit::random_away_from_zero(40, 7);
  const auto r = testkit::random_vector(40, 8);
  auto loss = [&] {
    double s = 0;
    for (int i = 0; i < 40; ++i) s += std::max(x[i], 0.0) * r[i];
    return s;
  };
  std::vector<double> good(40), bad(r);  // bad: dy passed through everywhere
  for (int i = 0; i < 40; ++i) good[i] = x[i] > 0 ? r[i] : 0;
  EXPECT_GRADIENT_OK(check_gradient("dx of relu", x.data(), {40}, good.data(), loss));
  EXPECT_GRADIENT_REJECTED(check_gradient("dx of relu (no mask)", x.data(), {40}, bad.data(), loss));
}

// The checker's own arithmetic: relative error, sampling and the printed index.
TEST(Stage01_Checker, RelativeErrorSamplingAndIndices) {
  EXPECT_DOUBLE_EQ(relative_error(1.0, 1.0, 1e-7), 0.0);
  EXPECT_DOUBLE_EQ(relative_error(1.0, 3.0, 1e-7), 0.5);
  EXPECT_DOUBLE_EQ(relative_error(0.0, 1e-9, 1e-7), 1e-2);  // tiny floors the denominator
  EXPECT_TRUE(std::isinf(relative_error(NAN, 1.0, 1e-7)));  // NaN never passes
  const auto all = sample_indices(10, 64, 1);
  EXPECT_EQ(all.size(), 10u);
  const auto some = sample_indices(10000, 64, 1);
  EXPECT_EQ(some.size(), 64u);
  EXPECT_EQ(some.front(), 0u);
  EXPECT_EQ(some.back(), 9999u);
  EXPECT_EQ(index_to_string(7, {2, 3, 4}), "[0, 1, 3]");
}
