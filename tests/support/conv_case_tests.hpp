// One test per conv shape of stage 02's gradient checks (tests/02_conv_pool/conv_cases.hpp),
// named after the shape: a task that checks a conv layer on each of them writes them in one
// line, and every such task runs the same ten shapes under the same ten names.
#pragma once

#include <gtest/gtest.h>

#include "../02_conv_pool/conv_cases.hpp"

/// Test `Name` of suite `Suite` on `Case`, one of the shapes (reference::kK3Pad0): the statement
/// `skip` (which may skip the test), then check(B, g) with the shape's batch size and geometry.
#define COURSE_CONV_CASE_TEST(Suite, Name, Case, skip, check)  \
  TEST(Suite, Name) {                                          \
    skip;                                                      \
    check(::course::Case.B, ::course::Case.g);                 \
  }

/// The ten tests of suite `Suite`, one per shape of conv_cases.hpp, each running `skip` and
/// then check(B, g). Each test is named after its shape (K3Pad0 runs kK3Pad0); `first` names
/// the first one's, kK3Pad1NonSquare's (a suite may name its batch of 2 too, ...Batch).
#define COURSE_CONV_CASE_TESTS(Suite, first, skip, check)                                 \
  COURSE_CONV_CASE_TEST(Suite, first, reference::kK3Pad1NonSquare, skip, check)           \
  COURSE_CONV_CASE_TEST(Suite, K3Pad0, reference::kK3Pad0, skip, check)                   \
  COURSE_CONV_CASE_TEST(Suite, K5Pad2, reference::kK5Pad2, skip, check)                   \
  COURSE_CONV_CASE_TEST(Suite, K3Pad2, reference::kK3Pad2, skip, check)                   \
  COURSE_CONV_CASE_TEST(Suite, K1, reference::kK1, skip, check)                           \
  COURSE_CONV_CASE_TEST(Suite, K1Stride2, reference::kK1Stride2, skip, check)             \
  COURSE_CONV_CASE_TEST(Suite, K3Pad1Stride2, reference::kK3Pad1Stride2, skip, check)     \
  COURSE_CONV_CASE_TEST(Suite, K5Pad1Stride2, reference::kK5Pad1Stride2, skip, check)     \
  COURSE_CONV_CASE_TEST(Suite, K5Pad2Stride2, reference::kK5Pad2Stride2, skip, check)     \
  COURSE_CONV_CASE_TEST(Suite, K3Pad0Stride3, reference::kK3Pad0Stride3, skip, check)
