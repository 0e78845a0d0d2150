// Task 2.6: flatten, [B, C, H, W] -> [B, C*H*W] and back. The checks live in flatten_checks.hpp,
// shared with the slips catalog.
#include <gtest/gtest.h>

#include "02_conv_pool/flatten.hpp"
#include "flatten_checks.hpp"

using namespace course;

TEST(Task2_6_Flatten, ForwardOrderIsChannelRowColumn) {
  s02test::check_flatten_forward([](const float* x, float* y, long count) { flatten_forward(x, y, count); });
}

TEST(Task2_6_Flatten, BackwardRoutesEachGradientBack) {
  s02test::check_flatten_backward([](const float* dy, float* dx, long count) { flatten_backward(dy, dx, count); });
}
