// The pool shapes every pool gradient test of stage 02 runs (max pool, task 2.5; average pool,
// task 2.8): windows 2 and 3, strides 1 and 2, padding 0 and 1, an odd size that leaves a row
// and a column out, overlapping windows, batches above 1. One test per shape, named after it,
// so both tasks run the same six shapes under the same six names.
#pragma once

#include <gtest/gtest.h>

#include "02_conv_pool/pool.hpp"

namespace course::reference {

struct PoolCase {
  int B;
  PoolGeometry g;
};

// {B, PoolGeometry{C, H, W, K, S, P}}
inline const PoolCase kWindow2Stride2{2, PoolGeometry{3, 6, 8, 2, 2, 0}};
inline const PoolCase kWindow2Stride2OddSize{2, PoolGeometry{2, 7, 5, 2, 2, 0}};  // last row, column in no window
inline const PoolCase kWindow3Stride2Overlapping{2, PoolGeometry{2, 9, 7, 3, 2, 0}};
inline const PoolCase kWindow3Stride2Padded{3, PoolGeometry{2, 7, 8, 3, 2, 1}};
inline const PoolCase kWindow2Stride2Padded{2, PoolGeometry{2, 5, 6, 2, 2, 1}};
inline const PoolCase kWindow3Stride1Padded{1, PoolGeometry{2, 6, 5, 3, 1, 1}};  // a cell in up to 9 windows

}  // namespace course::reference

/// Test `Name` of suite `Suite`: check(B, g) with the batch size and geometry of the shape
/// reference::kName (Window2Stride2 runs kWindow2Stride2).
#define COURSE_POOL_CASE_TEST(Suite, Name, check) \
  TEST(Suite, Name) { check(::course::reference::k##Name.B, ::course::reference::k##Name.g); }

/// The six tests of suite `Suite`, one per shape above, each running check(B, g).
#define COURSE_POOL_CASE_TESTS(Suite, check)                  \
  COURSE_POOL_CASE_TEST(Suite, Window2Stride2, check)         \
  COURSE_POOL_CASE_TEST(Suite, Window2Stride2OddSize, check)  \
  COURSE_POOL_CASE_TEST(Suite, Window3Stride2Overlapping, check) \
  COURSE_POOL_CASE_TEST(Suite, Window3Stride2Padded, check)   \
  COURSE_POOL_CASE_TEST(Suite, Window2Stride2Padded, check)   \
  COURSE_POOL_CASE_TEST(Suite, Window3Stride1Padded, check)
