// Task 1.3: softmax cross-entropy and mean squared error.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "01_fc_softmax/loss.hpp"
#include "course_test.hpp"

using namespace course;

TEST(Task1_3_SoftmaxCrossEntropy, EqualLogitsGiveLogK) {
  const double logits[2 * 4] = {0, 0, 0, 0, 5, 5, 5, 5};
  const int labels[2] = {1, 3};
  double probs[8];
  const double loss = softmax_cross_entropy_forward(logits, labels, probs, 2, 4);
  EXPECT_NEAR(loss, std::log(4.0), 1e-14);
  for (double p : probs) EXPECT_NEAR(p, 0.25, 1e-15);
}

TEST(Task1_3_SoftmaxCrossEntropy, GradientIsPMinusYOverB) {
  const int B = 5, K = 7;
  auto z = testkit::random_vector(B * K, 21, -3, 3);
  auto labels = testkit::random_labels(B, K, 22);
  std::vector<double> probs(B * K), dz(B * K);
  softmax_cross_entropy_forward(z.data(), labels.data(), probs.data(), B, K);
  softmax_cross_entropy_backward(probs.data(), labels.data(), dz.data(), B, K);
  auto loss = [&] {
    std::vector<double> p(B * K);
    return softmax_cross_entropy_forward(z.data(), labels.data(), p.data(), B, K);
  };
  GradCheckOptions opt;
  opt.tolerance = 1e-7;
  // The name carries the labels: a gradient wrong only at [n, labels[n]] shows the label term.
  std::string name = "dlogits of softmax cross-entropy (B=" + std::to_string(B) + ", K=" + std::to_string(K) + "; labels";
  for (int y : labels) name += " " + std::to_string(y);
  EXPECT_GRADIENT_OK(check_gradient(name + ")", z.data(), {B, K}, dz.data(), loss, opt));
}

// Logits of +-1000 overflow e^z in any precision unless the row maximum is subtracted.
TEST(Task1_3_SoftmaxCrossEntropy, StableForHugeLogits) {
  const float logits[2 * 3] = {1000.f, -1000.f, 0.f, -1000.f, -1000.f, 1000.f};
  const int labels[2] = {1, 2};
  float probs[6], dz[6];
  const float loss = softmax_cross_entropy_forward(logits, labels, probs, 2, 3);
  softmax_cross_entropy_backward(probs, labels, dz, 2, 3);
  ASSERT_TRUE(std::isfinite(loss)) << "loss = " << loss;
  EXPECT_NEAR(loss, 1000.0f, 1e-2f);  // example 0 pays 2000 nats, example 1 none: mean 1000
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(std::isfinite(dz[i])) << "dlogits[" << i << "] = " << dz[i];
  EXPECT_NEAR(dz[0], 0.5f, 1e-6f);   // p = 1 at a wrong class, divided by B = 2
  EXPECT_NEAR(dz[1], -0.5f, 1e-6f);  // p = 0 at the label
}

TEST(Task1_3_MeanSquaredError, ValueAndGradient) {
  const int B = 4, K = 3;
  auto z = testkit::random_vector(B * K, 31);
  auto labels = testkit::random_labels(B, K, 32);
  std::vector<double> dz(B * K), scratch(B * K);
  const double value = mse_forward_backward(z.data(), labels.data(), dz.data(), B, K);
  double ref = 0;
  for (int n = 0; n < B; ++n)
    for (int k = 0; k < K; ++k) ref += std::pow(z[n * K + k] - (k == labels[n]), 2);
  EXPECT_NEAR(value, ref / (B * K), 1e-14);
  auto loss = [&] { return mse_forward_backward(z.data(), labels.data(), scratch.data(), B, K); };
  GradCheckOptions opt;
  opt.tolerance = 1e-7;
  EXPECT_GRADIENT_OK(check_gradient("dlogits of mse", z.data(), {B, K}, dz.data(), loss, opt));
}
