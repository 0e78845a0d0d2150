// Task 1.3: softmax cross-entropy and mean squared error. The checks live in loss_checks.hpp,
// shared with the slips catalog.
#include <gtest/gtest.h>

#include "loss_checks.hpp"

using namespace course;

TEST(Task1_3_SoftmaxCrossEntropy, EqualLogitsGiveLogK) { s01test::check_equal_logits_give_log_k(s01test::LessonLoss{}); }

TEST(Task1_3_SoftmaxCrossEntropy, GradientIsPMinusYOverB) { s01test::check_cross_entropy_gradient(s01test::LessonLoss{}); }

// Logits of +-1000 overflow e^z in any precision unless the row maximum is subtracted, and
// p_y underflows to 0 unless the loss is log-sum-exp minus z_y rather than -log p_y.
TEST(Task1_3_SoftmaxCrossEntropy, StableForHugeLogits) {
  s01test::check_cross_entropy_of_huge_logits(s01test::LessonLoss{});
}

TEST(Task1_3_MeanSquaredError, ValueAndGradient) { s01test::check_mean_squared_error(s01test::LessonLoss{}); }
