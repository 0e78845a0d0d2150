// Task 1.2: activations forward and backward. The checks live in activation_checks.hpp, shared
// with the slips catalog.
#include <gtest/gtest.h>

#include "activation_checks.hpp"

using namespace course;

// Each activation at x = -2, 0.5, 3 against its formula; for the slips a learner makes in
// each formula, the message says which one the values are.
TEST(Task1_2_Activations, ForwardAtKnownPoints) {
  s01test::check_activations_at_known_points(s01test::LessonActivations{});
}

// softplus(1000) must be 1000, not inf; softplus(-1000) must be ~0, not NaN.
TEST(Task1_2_Activations, SoftplusDoesNotOverflow) {
  s01test::check_softplus_does_not_overflow(s01test::LessonActivations{});
}

// dL/dx for L = sum(f(x) * r), inputs kept at least 0.05 away from the kinks.
TEST(Task1_2_Activations, GradientCheckEveryActivation) {
  s01test::check_activation_gradients(s01test::LessonActivations{});
}

// --leaky-slope: leaky ReLU takes its slope from the last argument, forward and backward.
TEST(Task1_2_Activations, LeakyUsesTheSlopeItIsGiven) { s01test::check_leaky_uses_its_slope(s01test::LessonActivations{}); }
