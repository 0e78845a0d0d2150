// The learning-rate schedule every trainer applies before each epoch.
#include <gtest/gtest.h>

#include <cmath>

#include "common/train/trainer.hpp"

using course::scheduled_learning_rate;

TEST(LearningRateSchedule, ConstantKeepsTheRate) {
  for (int e = 0; e < 5; ++e) EXPECT_DOUBLE_EQ(scheduled_learning_rate(0.02, "constant", e, 5), 0.02);
}

// lr (1 + cos(pi e / E)) / 2: the full rate first, half way at E/2, near 0 at the end.
TEST(LearningRateSchedule, CosineDecaysFromTheRateTowardsZero) {
  EXPECT_DOUBLE_EQ(scheduled_learning_rate(0.02, "cosine", 0, 10), 0.02);
  EXPECT_NEAR(scheduled_learning_rate(0.02, "cosine", 5, 10), 0.01, 1e-15);
  EXPECT_NEAR(scheduled_learning_rate(0.02, "cosine", 9, 10), 0.02 * (1 + std::cos(M_PI * 0.9)) / 2, 1e-15);
  for (int e = 1; e < 10; ++e)
    EXPECT_LT(scheduled_learning_rate(0.02, "cosine", e, 10), scheduled_learning_rate(0.02, "cosine", e - 1, 10));
  EXPECT_GT(scheduled_learning_rate(0.02, "cosine", 9, 10), 0.0) << "the last epoch still learns";
  EXPECT_DOUBLE_EQ(scheduled_learning_rate(0.1, "cosine", 0, 1), 0.1);
  EXPECT_THROW(scheduled_learning_rate(0.1, "linear", 0, 1), std::invalid_argument);
}
