// Task 1.2: ReLU and leaky ReLU at exactly 0, where the derivative is a convention.
//
// The kink has no derivative; the course takes PyTorch's choice (docs/lessons/01_fc_softmax.md,
// Task 1.2): relu'(0) = 0 and leaky'(0) = the negative slope, i.e. the gradient passes
// unchanged only where x > 0. -0.0 == 0.0 in IEEE arithmetic, so -0.0 is treated like 0.
// The gradient checks of Task1_2_Activations keep their inputs away from 0 (a central
// difference across the kink sees half of each slope), so they cannot see this choice.
// The checks live in activation_checks.hpp, shared with the slips catalog.
#include <gtest/gtest.h>

#include "activation_checks.hpp"

using namespace course;

namespace {
template <typename T>
class Task1_2_DerivativeAtZero : public ::testing::Test {};
using Scalars = ::testing::Types<float, double>;
TYPED_TEST_SUITE(Task1_2_DerivativeAtZero, Scalars);
}  // namespace

TYPED_TEST(Task1_2_DerivativeAtZero, ReluPassesNoGradientAtZero) {
  s01test::check_relu_derivative_at_zero<TypeParam>(s01test::LessonActivations{});
}

TYPED_TEST(Task1_2_DerivativeAtZero, LeakyPassesTheNegativeSlopeAtZero) {
  s01test::check_leaky_derivative_at_zero<TypeParam>(s01test::LessonActivations{});
}
