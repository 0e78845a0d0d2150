// Task 2.5: max-pool backward. The arg-max comes from the reference forward (reference.hpp), so
// these tests need Task 2.5 alone. The checks live in maxpool_checks.hpp, shared with the slips
// catalog.
#include <gtest/gtest.h>

#include "02_conv_pool/pool.hpp"
#include "maxpool_checks.hpp"

using namespace course;

namespace {
void lesson(const double* dy, const int* argmax, double* dx, int B, const PoolGeometry& g) {
  maxpool_backward(dy, argmax, dx, B, g);
}
void check_pool_gradient(int B, const PoolGeometry& g) { s02test::check_maxpool_gradient(lesson, B, g); }
}  // namespace

//                                                                    C  H  W  K  S  P
TEST(Task2_5_MaxPoolBackward, Window2Stride2) { check_pool_gradient(2, PoolGeometry{3, 6, 8, 2, 2, 0}); }
TEST(Task2_5_MaxPoolBackward, Window2Stride2OddSize) { check_pool_gradient(2, PoolGeometry{2, 7, 5, 2, 2, 0}); }
TEST(Task2_5_MaxPoolBackward, Window3Stride2Overlapping) { check_pool_gradient(2, PoolGeometry{2, 9, 7, 3, 2, 0}); }
TEST(Task2_5_MaxPoolBackward, Window3Stride2Padded) { check_pool_gradient(3, PoolGeometry{2, 7, 8, 3, 2, 1}); }
TEST(Task2_5_MaxPoolBackward, Window2Stride2Padded) { check_pool_gradient(2, PoolGeometry{2, 5, 6, 2, 2, 1}); }
TEST(Task2_5_MaxPoolBackward, Window3Stride1Padded) { check_pool_gradient(1, PoolGeometry{2, 6, 5, 3, 1, 1}); }

// Overlapping windows add up: a cell that wins several windows gets the sum of their gradients.
TEST(Task2_5_MaxPoolBackward, OverlappingWindowsAreSummed) { s02test::check_maxpool_overlapping_windows_sum(lesson); }

// The arg-max indexes its own plane.
TEST(Task2_5_MaxPoolBackward, EachPlaneUsesItsOwnArgmax) { s02test::check_maxpool_each_plane_uses_its_argmax(lesson); }
