// Task 2.8: average-pool forward, against examples worked by hand (padded cells count as zeros:
// the divisor is K*K everywhere) and a plain reference. The checks live in avgpool_layer_checks.hpp,
// shared with the slips catalog.
#include <gtest/gtest.h>

#include "02_conv_pool/avgpool.hpp"
#include "avgpool_layer_checks.hpp"

using namespace course;

namespace {
const auto lesson_avgpool_forward = [](const auto* x, auto* y, int B, const PoolGeometry& g) { avgpool_forward(x, y, B, g); };
}  // namespace

// 2x2 windows, stride 2, on a 4x4 plane: the mean of each block.
TEST(Task2_8_AvgPoolForward, HandExample2x2Stride2) { s02test::check_avgpool_by_hand(lesson_avgpool_forward); }

// A padded window divides by K*K (padded cells count as zeros), not by the image cells it holds.
TEST(Task2_8_AvgPoolForward, PaddedCellsCountAsZerosInTheDivisor) {
  s02test::check_avgpool_padded_divisor(lesson_avgpool_forward);
}

// Overlapping windows (stride 1 below the window 2): each cell feeds several outputs.
TEST(Task2_8_AvgPoolForward, OverlappingWindowsStride1) { s02test::check_avgpool_overlapping(lesson_avgpool_forward); }

// Each plane (n, c) is pooled on its own.
TEST(Task2_8_AvgPoolForward, EachPlaneOnItsOwn) { s02test::check_avgpool_planes(lesson_avgpool_forward); }

// Many shapes against the reference in double.
TEST(Task2_8_AvgPoolForward, MatchesReferenceOnManyShapes) { s02test::check_avgpool_on_many_shapes(lesson_avgpool_forward); }
