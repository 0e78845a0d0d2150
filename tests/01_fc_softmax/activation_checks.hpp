// The checks of Task 1.2 (activations forward and backward), taking the code under test as an
// argument: the task tests pass the lesson's functions, the slips catalog (slips_test.cpp) a
// learner's wrong copy, so both meet the very same messages. `act` has
//
//   act.forward(f, x, y, n, slope = kLeakySlope)
//   act.backward(f, x, y, dy, dx, n, slope = kLeakySlope)
//
// for float and double, as activation_forward and activation_backward.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "01_fc_softmax/activations.hpp"
#include "course_test.hpp"
#include "tensor_check.hpp"

namespace course::s01test {

/// The lesson's activation_forward and activation_backward, as the checks take them.
struct LessonActivations {
  template <typename T>
  void forward(Activation f, const T* x, T* y, long n, double slope = kLeakySlope) const {
    activation_forward(f, x, y, n, slope);
  }
  template <typename T>
  void backward(Activation f, const T* x, const T* y, const T* dy, T* dx, long n, double slope = kLeakySlope) const {
    activation_backward(f, x, y, dy, dx, n, slope);
  }
};

inline const Activation kAllActivations[] = {Activation::ReLU, Activation::LeakyReLU, Activation::Sigmoid,
                                             Activation::Tanh, Activation::Softplus};

/// f(x) for every entry of x.
template <typename F>
std::vector<double> each(const std::vector<double>& x, F f) {
  std::vector<double> y;
  for (double v : x) y.push_back(f(v));
  return y;
}

/// The slips of activation_backward a gradient check can name: f'(x) not multiplied by dy, ReLU's and
/// leaky ReLU's mask left out, and sigmoid's and tanh's derivatives written with x where their formulas
/// have y = f(x). (An inverted mask the diagnosis names by itself: the complement of the right support.)
inline std::vector<testkit::KnownSlip> backward_slips(Activation f, const std::vector<double>& x,
                                                      const std::vector<double>& dy) {
  const auto sigmoid = [](double v) { return 1 / (1 + std::exp(-v)); };
  const auto derivative = [&](double v) {  // f'(v)
    switch (f) {
      case Activation::ReLU: return v > 0 ? 1.0 : 0.0;
      case Activation::LeakyReLU: return v > 0 ? 1.0 : kLeakySlope;
      case Activation::Sigmoid: return sigmoid(v) * (1 - sigmoid(v));
      case Activation::Tanh: return 1 - std::tanh(v) * std::tanh(v);
      case Activation::Softplus: return sigmoid(v);
    }
    return 0.0;
  };
  std::vector<testkit::KnownSlip> slips = {{"f'(x) alone, not multiplied by dy (dx = dy * f'(x))", each(x, derivative)}};
  if (f == Activation::ReLU || f == Activation::LeakyReLU)
    slips.push_back({"dx = dy everywhere: the mask left out (where x <= 0, dx is 0 for relu, slope * dy for leaky)", dy});
  std::vector<double> with_x(x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    with_x[i] = dy[i] * (f == Activation::Sigmoid ? x[i] * (1 - x[i]) : 1 - x[i] * x[i]);
  if (f == Activation::Sigmoid) slips.push_back({"x (1 - x) where sigmoid' = y (1 - y), y = sigmoid(x)", with_x});
  if (f == Activation::Tanh) slips.push_back({"1 - x^2 where tanh' = 1 - y^2, y = tanh(x)", with_x});
  return slips;
}

// Each activation at x = -2, 0.5, 3 against its formula; for the slips a learner makes in
// each formula, the message says which one the values are.
template <typename Act>
void check_activations_at_known_points(const Act& act) {
  const std::vector<double> x = {-2.0, 0.5, 3.0};
  const auto sigmoid = [](double v) { return 1 / (1 + std::exp(-v)); };
  const struct {
    Activation f;
    std::vector<double> want;
    testkit::Tolerance tol;
    std::vector<testkit::KnownSlip> slips;
  } cases[] = {
      {Activation::ReLU, {0.0, 0.5, 3.0}, testkit::kDoubleEq, {}},
      {Activation::LeakyReLU, {-0.02, 0.5, 3.0}, testkit::kDoubleEq,
       {{"a slope of 0.1 below 0 (it is 0.01)", {-0.2, 0.5, 3.0}}, {"ReLU (no slope below 0)", {0.0, 0.5, 3.0}}}},
      {Activation::Sigmoid, each(x, sigmoid), testkit::Tolerance{1e-15, 0},
       {{"1 / (1 + e^x) (the sign of the exponent flipped)", each(x, [&](double v) { return sigmoid(-v); })}}},
      {Activation::Tanh, each(x, [](double v) { return std::tanh(v); }), testkit::Tolerance{1e-15, 0}, {}},
      {Activation::Softplus, each(x, [](double v) { return std::log(1 + std::exp(v)); }), testkit::Tolerance{1e-14, 0},
       {{"log(e^x) = x (the 1 + left out)", x},
        {"max(x, 0) + log1p(e^|x|) (the sign of |x| flipped)",
         each(x, [](double v) { return std::max(v, 0.0) + std::log1p(std::exp(std::fabs(v))); })}}},
  };
  for (const auto& c : cases) {
    std::vector<double> y(3, -999);
    act.forward(c.f, x.data(), y.data(), 3);
    EXPECT_TRUE(testkit::tensor_matches(std::string(activation_name(c.f)) + "(x) at x = -2, 0.5, 3", {{"i", 3}}, y,
                                        c.want, c.tol, c.slips));
  }
}

// softplus(1000) must be 1000, not inf; softplus(-1000) must be ~0, not NaN.
template <typename Act>
void check_softplus_does_not_overflow(const Act& act) {
  const float x[2] = {1000.f, -1000.f};
  float y[2];
  act.forward(Activation::Softplus, x, y, 2);
  EXPECT_TRUE(testkit::scalar_matches("softplus(1000) in float", y[0], 1000.f, testkit::kFloatEq,
                                      {{"log(1 + e^x), whose e^1000 overflows (use max(x, 0) + log1p(e^-|x|))",
                                        {static_cast<double>(std::log(1 + std::exp(x[0])))}}}));
  EXPECT_TRUE(std::isfinite(y[1]) && y[1] >= 0.f && y[1] < 1e-30f)
      << "softplus(-1000) in float: expected a value in [0, 1e-30), actual " << y[1];
}

// dL/dx for L = sum(f(x) * r), inputs kept at least 0.05 away from the kinks.
template <typename Act>
void check_activation_gradients(const Act& act) {
  const std::size_t n = 200;
  for (Activation f : kAllActivations) {
    auto x = testkit::random_away_from_zero(n, 11);
    for (auto& v : x) v *= 3;  // cover the flat tails of sigmoid and tanh too
    const auto r = testkit::random_vector(n, 12);
    std::vector<double> y(n), dx(n);
    act.forward(f, x.data(), y.data(), static_cast<long>(n));
    act.backward(f, x.data(), y.data(), r.data(), dx.data(), static_cast<long>(n));
    auto loss = [&] {
      std::vector<double> out(n);
      act.forward(f, x.data(), out.data(), static_cast<long>(n));
      return testkit::weighted_sum(out, r);
    };
    GradCheckOptions opt;
    opt.tolerance = 1e-7;
    auto result = check_gradient(std::string("dx of ") + activation_name(f), x.data(), {{"i", int(n)}}, dx.data(),
                                 loss, opt);
    testkit::name_slip(result, dx, backward_slips(f, x, r));
    EXPECT_GRADIENT_OK(result);
  }
}

// --leaky-slope: leaky ReLU takes its slope from the last argument, forward and backward
// (a learner who keeps kLeakySlope in the formula passes the checks above, not this one).
template <typename Act>
void check_leaky_uses_its_slope(const Act& act) {
  const std::vector<double> x = {-2.0, -0.5, 0.5, 3.0}, dy = {1.0, -2.0, 3.0, -4.0};
  for (const double slope : {0.1, 0.25}) {
    std::vector<double> y(4, -999), dx(4, -999);
    act.forward(Activation::LeakyReLU, x.data(), y.data(), 4, slope);
    act.backward(Activation::LeakyReLU, x.data(), y.data(), dy.data(), dx.data(), 4, slope);
    const std::vector<double> want_y = {-2.0 * slope, -0.5 * slope, 0.5, 3.0};
    const std::vector<double> want_dx = {1.0 * slope, -2.0 * slope, 3.0, -4.0};
    const std::vector<double> default_y = {-2.0 * kLeakySlope, -0.5 * kLeakySlope, 0.5, 3.0};
    const std::vector<double> default_dx = {1.0 * kLeakySlope, -2.0 * kLeakySlope, 3.0, -4.0};
    const std::string at = " with slope " + std::to_string(slope) + " at x = -2, -0.5, 0.5, 3";
    EXPECT_TRUE(testkit::tensor_matches("leaky(x)" + at, {{"i", 4}}, y, want_y, testkit::kDoubleEq,
                                        {{"the default slope kLeakySlope, not the one passed in", default_y}}));
    EXPECT_TRUE(testkit::tensor_matches("dx of leaky" + at, {{"i", 4}}, dx, want_dx, testkit::kDoubleEq,
                                        {{"the default slope kLeakySlope, not the one passed in", default_dx}}));
  }
}

// ReLU and leaky ReLU at exactly 0, where the derivative is a convention (PyTorch's: the gradient
// passes unchanged only where x > 0). Inputs: +0, -0, and the smallest normal numbers on either
// side, which must fall on their own side of the kink (x > 0, not x >= some epsilon).
template <typename T>
struct AtZero {
  static constexpr int n = 4;
  T x[n] = {T(0), -T(0), std::numeric_limits<T>::min(), -std::numeric_limits<T>::min()};
  T y[n] = {};
  T dy[n] = {T(1.5), T(-2.5), T(3.0), T(-4.0)};
  T dx[n] = {};

  template <typename Act>
  void run(const Act& act, Activation f) {
    act.forward(f, x, y, n);
    act.backward(f, x, y, dy, dx, n);
  }
};

template <typename T, typename Act>
void check_relu_derivative_at_zero(const Act& act) {
  AtZero<T> a;
  a.run(act, Activation::ReLU);
  EXPECT_EQ(a.y[0], T(0)) << "relu(0)";
  EXPECT_EQ(a.y[1], T(0)) << "relu(-0.0)";
  EXPECT_EQ(a.dx[0], T(0)) << "relu'(0) must be 0, as in PyTorch (the gradient passes only where x > 0): dy = "
                           << a.dy[0] << " gave dx = " << a.dx[0];
  EXPECT_EQ(a.dx[1], T(0)) << "relu'(-0.0) must be 0 (-0.0 is not > 0): dy = " << a.dy[1] << " gave dx = " << a.dx[1];
  EXPECT_EQ(a.y[2], a.x[2]) << "relu of the smallest positive normal number";
  EXPECT_EQ(a.dx[2], a.dy[2]) << "relu' of the smallest positive normal number must be 1";
  EXPECT_EQ(a.y[3], T(0)) << "relu of minus the smallest normal number";
  EXPECT_EQ(a.dx[3], T(0)) << "relu' of minus the smallest normal number must be 0";
}

template <typename T, typename Act>
void check_leaky_derivative_at_zero(const Act& act) {
  const T slope = T(kLeakySlope);
  AtZero<T> a;
  a.run(act, Activation::LeakyReLU);
  EXPECT_EQ(a.y[0], T(0)) << "leaky(0)";
  EXPECT_EQ(a.y[1], T(0)) << "leaky(-0.0)";
  // The slope times dy: EXPECT_NEAR rather than bitwise, so that slope * dy and dy * slope,
  // in float or through double, all pass; 1 and 0 would not.
  const T tol = T(4) * std::numeric_limits<T>::epsilon();
  EXPECT_NEAR(a.dx[0], slope * a.dy[0], tol) << "leaky'(0) must be the negative slope " << kLeakySlope
                                             << ", as in PyTorch (the slope applies wherever x <= 0)";
  EXPECT_NEAR(a.dx[1], slope * a.dy[1], tol) << "leaky'(-0.0) must be the negative slope " << kLeakySlope;
  EXPECT_EQ(a.y[2], a.x[2]) << "leaky of the smallest positive normal number";
  EXPECT_EQ(a.dx[2], a.dy[2]) << "leaky' of the smallest positive normal number must be 1";
  EXPECT_NEAR(a.dx[3], slope * a.dy[3], tol) << "leaky' of minus the smallest normal number must be the slope";
}

/// Every check of Task 1.2, in the order of the task's tests.
template <typename Act>
void check_activations(const Act& act) {
  check_activations_at_known_points(act);
  check_softplus_does_not_overflow(act);
  check_activation_gradients(act);
  check_leaky_uses_its_slope(act);
  check_relu_derivative_at_zero<float>(act);
  check_relu_derivative_at_zero<double>(act);
  check_leaky_derivative_at_zero<float>(act);
  check_leaky_derivative_at_zero<double>(act);
}

}  // namespace course::s01test
