// Task 1.1: dense forward. The checks live in dense_checks.hpp, shared with the slips catalog.
#include <gtest/gtest.h>

#include "01_fc_softmax/dense.hpp"
#include "dense_checks.hpp"

using namespace course;

namespace {
const auto lesson_forward = [](const auto* x, const auto* W, const auto* b, auto* y, int B, int IN, int OUT) {
  dense_forward(x, W, b, y, B, IN, OUT);
};
}  // namespace

TEST(Task1_1_DenseForward, MatchesHandComputedExample) { s01test::check_dense_forward_by_hand(lesson_forward); }

TEST(Task1_1_DenseForward, MatchesReferenceOnRandomShapes) {
  s01test::check_dense_forward_on_random_shapes(lesson_forward);
}
