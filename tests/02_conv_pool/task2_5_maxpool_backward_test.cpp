// Task 2.5: max-pool backward. The arg-max comes from the reference forward (reference.hpp), so
// these tests need Task 2.5 alone. The checks live in maxpool_checks.hpp, shared with the slips
// catalog.
#include <gtest/gtest.h>

#include "02_conv_pool/pool.hpp"
#include "maxpool_checks.hpp"
#include "pool_case_tests.hpp"

using namespace course;

namespace {
void lesson_maxpool_backward(const double* dy, const int* argmax, double* dx, int B, const PoolGeometry& g) {
  maxpool_backward(dy, argmax, dx, B, g);
}
void check_pool_gradient(int B, const PoolGeometry& g) { s02test::check_maxpool_gradient(lesson_maxpool_backward, B, g); }
}  // namespace

// One test per pool shape of pool_case_tests.hpp, named after it.
COURSE_POOL_CASE_TESTS(Task2_5_MaxPoolBackward, check_pool_gradient)

// Overlapping windows add up: a cell that wins several windows gets the sum of their gradients.
TEST(Task2_5_MaxPoolBackward, OverlappingWindowsAreSummed) { s02test::check_maxpool_overlapping_windows_sum(lesson_maxpool_backward); }

// The arg-max indexes its own plane.
TEST(Task2_5_MaxPoolBackward, EachPlaneUsesItsOwnArgmax) { s02test::check_maxpool_each_plane_uses_its_argmax(lesson_maxpool_backward); }
