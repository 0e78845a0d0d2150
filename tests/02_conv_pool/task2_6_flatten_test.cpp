// Task 2.6: flatten, [B, C, H, W] -> [B, C*H*W] and back.
#include <gtest/gtest.h>

#include <vector>

#include "02_conv_pool/flatten.hpp"
#include "course_test.hpp"

using namespace course;

namespace {
const int B = 2, C = 3, H = 2, W = 4;
// x[n][c][h][w] = 1000 n + 100 c + 10 h + w: every value says where it came from.
std::vector<float> labelled_batch() {
  std::vector<float> x(B * C * H * W);
  for (int n = 0; n < B; ++n)
    for (int c = 0; c < C; ++c)
      for (int h = 0; h < H; ++h)
        for (int w = 0; w < W; ++w) x[((n * C + c) * H + h) * W + w] = 1000.f * n + 100.f * c + 10.f * h + w;
  return x;
}
}  // namespace

TEST(Task2_6_Flatten, ForwardOrderIsChannelRowColumn) {
  const auto x = labelled_batch();
  std::vector<float> y(x.size() + 1, -1.f);
  flatten_forward(x.data(), y.data(), static_cast<long>(x.size()));
  for (int n = 0; n < B; ++n)
    for (int c = 0; c < C; ++c)
      for (int h = 0; h < H; ++h)
        for (int w = 0; w < W; ++w)
          EXPECT_EQ(y[n * (C * H * W) + (c * H + h) * W + w], 1000.f * n + 100.f * c + 10.f * h + w)
              << "y[" << n << "][" << (c * H + h) * W + w << "]";
  EXPECT_EQ(y.back(), -1.f) << "wrote past the end";
}

TEST(Task2_6_Flatten, BackwardRoutesEachGradientBack) {
  const auto dy = labelled_batch();  // read as [B, C*H*W]
  std::vector<float> dx(dy.size(), -1.f);
  flatten_backward(dy.data(), dx.data(), static_cast<long>(dy.size()));
  for (int n = 0; n < B; ++n)
    for (int c = 0; c < C; ++c)
      for (int h = 0; h < H; ++h)
        for (int w = 0; w < W; ++w)
          EXPECT_EQ(dx[((n * C + c) * H + h) * W + w], 1000.f * n + 100.f * c + 10.f * h + w)
              << "dx[" << n << "][" << c << "][" << h << "][" << w << "]";
}
