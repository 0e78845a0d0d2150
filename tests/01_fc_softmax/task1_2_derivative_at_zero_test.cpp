// Task 1.2: ReLU and leaky ReLU at exactly 0, where the derivative is a convention.
//
// The kink has no derivative; the course takes PyTorch's choice (docs/lessons/01_fc_softmax.md,
// Task 1.2): relu'(0) = 0 and leaky'(0) = the negative slope, i.e. the gradient passes
// unchanged only where x > 0. -0.0 == 0.0 in IEEE arithmetic, so -0.0 is treated like 0.
// The gradient checks of Task1_2_Activations keep their inputs away from 0 (a central
// difference across the kink sees half of each slope), so they cannot see this choice.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "01_fc_softmax/activations.hpp"

using namespace course;

namespace {

template <typename T>
class Task1_2_DerivativeAtZero : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(Task1_2_DerivativeAtZero, Scalars);

// Inputs: +0, -0, and the smallest normal numbers on either side, which must fall on
// their own side of the kink (x > 0, not x >= some epsilon).
template <typename T>
struct AtZero {
  static constexpr int n = 4;
  T x[n] = {T(0), -T(0), std::numeric_limits<T>::min(), -std::numeric_limits<T>::min()};
  T y[n] = {};
  T dy[n] = {T(1.5), T(-2.5), T(3.0), T(-4.0)};
  T dx[n] = {};

  void run(Activation f) {
    activation_forward(f, x, y, n);
    activation_backward(f, x, y, dy, dx, n);
  }
};

}  // namespace

TYPED_TEST(Task1_2_DerivativeAtZero, ReluPassesNoGradientAtZero) {
  using T = TypeParam;
  AtZero<T> a;
  a.run(Activation::ReLU);
  EXPECT_EQ(a.y[0], T(0)) << "relu(0)";
  EXPECT_EQ(a.y[1], T(0)) << "relu(-0.0)";
  EXPECT_EQ(a.dx[0], T(0)) << "relu'(0) must be 0, as in PyTorch (the gradient passes only where x > 0): dy = "
                           << a.dy[0] << " gave dx = " << a.dx[0];
  EXPECT_EQ(a.dx[1], T(0)) << "relu'(-0.0) must be 0 (-0.0 is not > 0): dy = " << a.dy[1] << " gave dx = "
                           << a.dx[1];
  EXPECT_EQ(a.y[2], a.x[2]) << "relu of the smallest positive normal number";
  EXPECT_EQ(a.dx[2], a.dy[2]) << "relu' of the smallest positive normal number must be 1";
  EXPECT_EQ(a.y[3], T(0)) << "relu of minus the smallest normal number";
  EXPECT_EQ(a.dx[3], T(0)) << "relu' of minus the smallest normal number must be 0";
}

TYPED_TEST(Task1_2_DerivativeAtZero, LeakyPassesTheNegativeSlopeAtZero) {
  using T = TypeParam;
  const T slope = T(kLeakySlope);
  AtZero<T> a;
  a.run(Activation::LeakyReLU);
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
