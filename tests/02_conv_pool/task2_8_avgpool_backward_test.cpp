// Task 2.8: average-pool backward. The loss is built on the reference forward pass
// (avgpool_reference.hpp), so these tests need the backward hole alone. The checks live in
// avgpool_layer_checks.hpp, shared with the slips catalog.
#include <gtest/gtest.h>

#include "02_conv_pool/avgpool.hpp"
#include "avgpool_layer_checks.hpp"
#include "pool_case_tests.hpp"

using namespace course;

namespace {
void lesson_avgpool_backward(const double* dy, double* dx, int B, const PoolGeometry& g) { avgpool_backward(dy, dx, B, g); }
void check_avgpool_gradient(int B, const PoolGeometry& g) { s02test::check_avgpool_gradient(lesson_avgpool_backward, B, g); }
}  // namespace

// One test per pool shape of pool_case_tests.hpp, named after it, and two more: windows that
// overlap at stride 1 without padding, and padding 2 (a window may be two thirds padding).
COURSE_POOL_CASE_TESTS(Task2_8_AvgPoolBackward, check_avgpool_gradient)
//                                                                          C  H  W  K  S  P
TEST(Task2_8_AvgPoolBackward, Window2Stride1Overlapping) { check_avgpool_gradient(2, PoolGeometry{2, 5, 6, 2, 1, 0}); }
TEST(Task2_8_AvgPoolBackward, Window3Stride1Padding2) { check_avgpool_gradient(2, PoolGeometry{2, 5, 4, 3, 1, 2}); }

// Overlapping windows add up: the centre of 2x2 windows at stride 1 on a 3x3 plane gets four shares.
TEST(Task2_8_AvgPoolBackward, OverlappingWindowsAreSummed) { s02test::check_avgpool_overlapping_gradients(lesson_avgpool_backward); }

// A padded window still hands every image cell dy / (K*K), never dy / (the cells it holds).
TEST(Task2_8_AvgPoolBackward, PaddedWindowsStillShareByKK) { s02test::check_avgpool_padded_shares(lesson_avgpool_backward); }

// Each plane (n, c) gets its own outputs' gradients.
TEST(Task2_8_AvgPoolBackward, EachPlaneOnItsOwn) { s02test::check_avgpool_gradient_planes(lesson_avgpool_backward); }
