// The checks of Task 1.3 (softmax cross-entropy and mean squared error), taking the code under
// test as an argument: the task tests pass the lesson's functions, the slips catalog
// (slips_test.cpp) a learner's wrong copy, so both meet the very same messages. `loss` has
//
//   loss.forward(logits, labels, probs, B, K) -> the mean cross-entropy
//   loss.backward(probs, labels, dlogits, B, K)
//   loss.mse(outputs, labels, dlogits, B, K)  -> the mean squared error
//
// for float and double, as softmax_cross_entropy_forward, ..._backward and mse_forward_backward.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "01_fc_softmax/loss.hpp"
#include "course_test.hpp"
#include "tensor_check.hpp"

namespace course::s01test {

/// The lesson's loss functions, as the checks take them.
struct LessonLoss {
  template <typename T>
  T forward(const T* logits, const int* labels, T* probs, int B, int K) const {
    return softmax_cross_entropy_forward(logits, labels, probs, B, K);
  }
  template <typename T>
  void backward(const T* probs, const int* labels, T* dlogits, int B, int K) const {
    softmax_cross_entropy_backward(probs, labels, dlogits, B, K);
  }
  template <typename T>
  T mse(const T* outputs, const int* labels, T* dlogits, int B, int K) const {
    return mse_forward_backward(outputs, labels, dlogits, B, K);
  }
};

template <typename Loss>
void check_equal_logits_give_log_k(const Loss& xent) {
  const double logits[2 * 4] = {0, 0, 0, 0, 5, 5, 5, 5};
  const int labels[2] = {1, 3};
  double probs[8];
  const double loss = xent.forward(logits, labels, probs, 2, 4);
  EXPECT_TRUE(testkit::scalar_matches("mean cross-entropy of 2 rows of 4 equal logits (log 4)", loss, std::log(4.0),
                                      testkit::Tolerance{1e-14, 0},
                                      {{"the sum over the rows, not the mean", {2 * std::log(4.0)}}}));
  const std::vector<double> quarter(8, 0.25);
  EXPECT_TRUE(testkit::tensor_matches("softmax of 2 rows of 4 equal logits (0 in row 0, 5 in row 1)", {{"n", 2}, {"k", 4}},
                                      probs, quarter.data(), testkit::Tolerance{1e-15, 0},
                                      {{"e^z not divided by the row's sum", {1, 1, 1, 1, 1, 1, 1, 1}},
                                       {"e^z without the row maximum subtracted, not divided by the row's sum",
                                        {1, 1, 1, 1, std::exp(5.0), std::exp(5.0), std::exp(5.0), std::exp(5.0)}}}));
}

template <typename Loss>
void check_cross_entropy_gradient(const Loss& xent) {
  const int B = 5, K = 7;
  auto z = testkit::random_vector(B * K, 21, -3, 3);
  auto labels = testkit::random_labels(B, K, 22);
  std::vector<double> probs(B * K), dz(B * K);
  xent.forward(z.data(), labels.data(), probs.data(), B, K);
  xent.backward(probs.data(), labels.data(), dz.data(), B, K);
  auto loss = [&] {
    std::vector<double> p(B * K);
    return xent.forward(z.data(), labels.data(), p.data(), B, K);
  };
  GradCheckOptions opt;
  opt.tolerance = 1e-7;
  // The name carries the labels: a gradient wrong only at [n, labels[n]] shows the label term.
  std::string name = "dlogits of softmax cross-entropy (B=" + std::to_string(B) + ", K=" + std::to_string(K) + "; labels";
  for (int y : labels) name += " " + std::to_string(y);
  EXPECT_GRADIENT_OK(check_gradient(name + ")", z.data(), {{"n", B}, {"k", K}}, dz.data(), loss, opt));
}

// Logits of +-1000 overflow e^z in any precision unless the row maximum is subtracted, and
// p_y underflows to 0 unless the loss is log-sum-exp minus z_y rather than -log p_y.
template <typename Loss>
void check_cross_entropy_of_huge_logits(const Loss& xent) {
  const float logits[2 * 3] = {1000.f, -1000.f, 0.f, -1000.f, -1000.f, 1000.f};
  const int labels[2] = {1, 2};
  float probs[6], dz[6];
  const float loss = xent.forward(logits, labels, probs, 2, 3);
  xent.backward(probs, labels, dz, 2, 3);
  bool probs_finite = true;
  for (float p : probs) probs_finite = probs_finite && std::isfinite(p);
  ASSERT_TRUE(std::isfinite(loss))
      << "the mean cross-entropy of logits (1000, -1000, 0), (-1000, -1000, 1000) is " << loss << ", expected 1000: "
      << (probs_finite ? "p_y = e^-2000 is 0 in float, and -log 0 = inf: compute the loss as log(sum_k e^{z_k - m}) - "
                         "(z_y - m), m the row maximum"
                       : "the probabilities are not finite either: e^1000 overflows; subtract the row maximum m "
                         "before exponentiating, e^{z - m}");
  EXPECT_NEAR(loss, 1000.0f, 1e-2f) << "the mean cross-entropy: example 0 pays 2000 nats, example 1 none";
  // p = 1 at the largest logit of each row, 0 elsewhere; dz = (p - onehot) / B with B = 2.
  const float want_probs[6] = {1, 0, 0, 0, 0, 1}, want_dz[6] = {0.5f, -0.5f, 0, 0, 0, 0};
  EXPECT_TRUE(testkit::tensor_matches("softmax of logits (1000, -1000, 0), (-1000, -1000, 1000)", {{"n", 2}, {"k", 3}},
                                      probs, want_probs, testkit::Tolerance{1e-6, 0}));
  EXPECT_TRUE(testkit::tensor_matches("dlogits of those logits, labels 1 and 2", {{"n", 2}, {"k", 3}}, dz, want_dz,
                                      testkit::Tolerance{1e-6, 0},
                                      {{"p - onehot not divided by B = 2", {1, -1, 0, 0, 0, 0}},
                                       {"p / B without the label's -1 / B", {0.5, 0, 0, 0, 0, 0.5}}}));
}

template <typename Loss>
void check_mean_squared_error(const Loss& losses) {
  const int B = 4, K = 3;
  auto z = testkit::random_vector(B * K, 31);
  auto labels = testkit::random_labels(B, K, 32);
  std::vector<double> dz(B * K), scratch(B * K);
  const double value = losses.mse(z.data(), labels.data(), dz.data(), B, K);
  double ref = 0;
  for (int n = 0; n < B; ++n)
    for (int k = 0; k < K; ++k) ref += std::pow(z[n * K + k] - (k == labels[n]), 2);
  EXPECT_TRUE(testkit::scalar_matches("mse (B=4, K=3), the mean over all B*K squares", value, ref / (B * K),
                                      testkit::Tolerance{1e-14, 0},
                                      {{"the mean over the B rows alone (a sum over k)", {ref / B}},
                                       {"the sum of the squares, not their mean", {ref}}}));
  auto loss = [&] { return losses.mse(z.data(), labels.data(), scratch.data(), B, K); };
  GradCheckOptions opt;
  opt.tolerance = 1e-7;
  EXPECT_GRADIENT_OK(check_gradient("dlogits of mse (B=4, K=3)", z.data(), {{"n", B}, {"k", K}}, dz.data(), loss, opt));
}

/// Every check of Task 1.3, in the order of the task's tests.
template <typename Loss>
void check_losses(const Loss& loss) {
  check_equal_logits_give_log_k(loss);
  check_cross_entropy_gradient(loss);
  check_cross_entropy_of_huge_logits(loss);
  check_mean_squared_error(loss);
}

}  // namespace course::s01test
