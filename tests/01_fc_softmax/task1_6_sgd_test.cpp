// Task 1.6: the SGD update with momentum. The checks live in sgd_checks.hpp, shared with the
// slips catalog.
#include <gtest/gtest.h>

#include "01_fc_softmax/sgd.hpp"
#include "sgd_checks.hpp"

using namespace course;

namespace {
const auto lesson_update = [](double* w, const double* g, double* v, long n, double lr, double momentum) {
  sgd_update(w, g, v, n, lr, momentum);
};
}  // namespace

TEST(Task1_6_Sgd, PlainStepWithoutMomentum) { s01test::check_sgd_without_momentum(lesson_update); }

// Two steps worked by hand: v1 = g1, w1 = w0 - lr g1; v2 = m g1 + g2, w2 = w1 - lr v2.
TEST(Task1_6_Sgd, MomentumAccumulatesVelocity) { s01test::check_sgd_momentum(lesson_update); }
