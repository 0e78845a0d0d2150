// Task 1.6: the SGD update with momentum.
#include <gtest/gtest.h>

#include "01_fc_softmax/sgd.hpp"
#include "course_test.hpp"

using namespace course;

TEST(Task1_6_Sgd, PlainStepWithoutMomentum) {
  double w[2] = {1, -2}, g[2] = {0.5, -1}, v[2] = {0, 0};
  sgd_update(w, g, v, 2, 0.1, 0.0);
  EXPECT_DOUBLE_EQ(w[0], 0.95);
  EXPECT_DOUBLE_EQ(w[1], -1.9);
}

// Two steps worked by hand: v1 = g1, w1 = w0 - lr g1; v2 = m g1 + g2, w2 = w1 - lr v2.
TEST(Task1_6_Sgd, MomentumAccumulatesVelocity) {
  double w[1] = {1}, v[1] = {0};
  const double g1[1] = {2}, g2[1] = {-1};
  sgd_update(w, g1, v, 1, 0.1, 0.9);
  EXPECT_DOUBLE_EQ(v[0], 2);
  EXPECT_DOUBLE_EQ(w[0], 1 - 0.2);
  sgd_update(w, g2, v, 1, 0.1, 0.9);
  EXPECT_DOUBLE_EQ(v[0], 0.9 * 2 - 1);
  EXPECT_NEAR(w[0], 0.8 - 0.1 * 0.8, 1e-15);
}
