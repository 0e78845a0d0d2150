// Task 2.4: max-pool forward, the recorded arg-max, and the two stated rules (ties go to the first
// maximum in row-major window order; padding never wins). The checks live in maxpool_checks.hpp,
// shared with the slips catalog.
#include <gtest/gtest.h>

#include "02_conv_pool/pool.hpp"
#include "maxpool_checks.hpp"

using namespace course;

namespace {
const auto lesson_maxpool_forward = [](const auto* x, auto* y, int* argmax, int B, const PoolGeometry& g) {
  maxpool_forward(x, y, argmax, B, g);
};
}  // namespace

// 2x2 windows, stride 2, on a 4x4 plane: each output is the largest of its block.
TEST(Task2_4_MaxPoolForward, HandExample2x2Stride2) { s02test::check_maxpool_by_hand(lesson_maxpool_forward); }

// Ties: the first maximum in row-major window order (top row first, left to right).
TEST(Task2_4_MaxPoolForward, TiesGoToTheFirstMaximumInRowMajorOrder) { s02test::check_maxpool_ties(lesson_maxpool_forward); }

// Padding is not a zero that competes: a padded window returns its largest image cell.
TEST(Task2_4_MaxPoolForward, PaddedCellsNeverWin) { s02test::check_maxpool_padding_never_wins(lesson_maxpool_forward); }

// Many shapes against the reference, with guard cells after the outputs.
TEST(Task2_4_MaxPoolForward, MatchesReferenceOnManyShapes) { s02test::check_maxpool_on_many_shapes(lesson_maxpool_forward); }
