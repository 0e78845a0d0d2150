// Task 1.4: dense backward (dW, db, dX), checked by central differences. The checks live in
// dense_checks.hpp, shared with the slips catalog.
#include <gtest/gtest.h>

#include "01_fc_softmax/dense.hpp"
#include "dense_checks.hpp"

using namespace course;

namespace {
const auto lesson_backward = [](const auto* x, const auto* W, const auto* dy, auto* dW, auto* db, auto* dx, int B,
                                int IN, int OUT) { dense_backward(x, W, dy, dW, db, dx, B, IN, OUT); };
const auto lesson_dense_forward = [](const auto* x, const auto* W, const auto* b, auto* y, int B, int IN, int OUT) {
  dense_forward(x, W, b, y, B, IN, OUT);
};
void check_gradients(int B, int IN, int OUT) { s01test::check_dense_gradients(lesson_backward, lesson_dense_forward, B, IN, OUT); }
}  // namespace

TEST(Task1_4_DenseBackward, GradientCheckSmall) { check_gradients(1, 1, 1); }
TEST(Task1_4_DenseBackward, GradientCheckBatch) { check_gradients(4, 7, 5); }
TEST(Task1_4_DenseBackward, GradientCheckWide) { check_gradients(9, 50, 12); }

// Backward overwrites: stale values in the outputs must not leak in.
TEST(Task1_4_DenseBackward, OverwritesGradients) { s01test::check_dense_backward_overwrites(lesson_backward); }

// The first layer passes dx = nullptr: no input gradient is needed there.
TEST(Task1_4_DenseBackward, NullInputGradientIsAllowed) { s01test::check_dense_backward_without_dx(lesson_backward); }
