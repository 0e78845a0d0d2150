// Task 1.2: activations forward and backward.
#include <gtest/gtest.h>

#include <cmath>

#include "01_fc_softmax/activations.hpp"
#include "course_test.hpp"

using namespace course;

namespace {
const Activation kAll[] = {Activation::ReLU, Activation::LeakyReLU, Activation::Sigmoid, Activation::Tanh,
                           Activation::Softplus};
}

TEST(Task1_2_Activations, ForwardAtKnownPoints) {
  const double x[3] = {-2.0, 0.5, 3.0};
  double y[3];
  activation_forward(Activation::ReLU, x, y, 3);
  EXPECT_DOUBLE_EQ(y[0], 0.0);
  EXPECT_DOUBLE_EQ(y[2], 3.0);
  activation_forward(Activation::LeakyReLU, x, y, 3);
  EXPECT_DOUBLE_EQ(y[0], -0.02);
  EXPECT_DOUBLE_EQ(y[1], 0.5);
  activation_forward(Activation::Sigmoid, x, y, 3);
  EXPECT_NEAR(y[1], 1 / (1 + std::exp(-0.5)), 1e-15);
  activation_forward(Activation::Tanh, x, y, 3);
  EXPECT_NEAR(y[0], std::tanh(-2.0), 1e-15);
  activation_forward(Activation::Softplus, x, y, 3);
  EXPECT_NEAR(y[2], std::log(1 + std::exp(3.0)), 1e-14);
}

// softplus(1000) must be 1000, not inf; softplus(-1000) must be ~0, not NaN.
TEST(Task1_2_Activations, SoftplusDoesNotOverflow) {
  const float x[2] = {1000.f, -1000.f};
  float y[2];
  activation_forward(Activation::Softplus, x, y, 2);
  EXPECT_FLOAT_EQ(y[0], 1000.f);
  EXPECT_TRUE(std::isfinite(y[1]) && y[1] >= 0.f && y[1] < 1e-30f);
}

// dL/dx for L = sum(f(x) * r), inputs kept at least 0.05 away from the kinks.
TEST(Task1_2_Activations, GradientCheckEveryActivation) {
  const std::size_t n = 200;
  for (Activation f : kAll) {
    auto x = testkit::random_away_from_zero(n, 11);
    for (auto& v : x) v *= 3;  // cover the flat tails of sigmoid and tanh too
    const auto r = testkit::random_vector(n, 12);
    std::vector<double> y(n), dx(n);
    activation_forward(f, x.data(), y.data(), static_cast<long>(n));
    activation_backward(f, x.data(), y.data(), r.data(), dx.data(), static_cast<long>(n));
    auto loss = [&] {
      std::vector<double> out(n);
      activation_forward(f, x.data(), out.data(), static_cast<long>(n));
      return testkit::weighted_sum(out, r);
    };
    GradCheckOptions opt;
    opt.tolerance = 1e-7;
    EXPECT_GRADIENT_OK(check_gradient(std::string("dx of ") + activation_name(f), x.data(), {int(n)}, dx.data(),
                                      loss, opt));
  }
}
