// The checks of Task 2.6 (flatten), taking the code under test as an argument: the task tests pass
// the lesson's functions, the slips catalog (slips_test.cpp) a learner's wrong copy, so both meet
// the very same messages. forward(x, y, count) and backward(dy, dx, count), as flatten_forward and
// flatten_backward, for float; the batch is [2, 3, 2, 4].
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "course_test.hpp"
#include "tensor_check.hpp"

namespace course::s02test {

namespace flatten_batch {
constexpr int B = 2, C = 3, H = 2, W = 4;

// Where x[n][c][h][w] lies in this course's NCHW order, and in the order of an NHWC layout.
using Order = int (*)(int n, int c, int h, int w);
inline int nchw_index(int n, int c, int h, int w) { return ((n * C + c) * H + h) * W + w; }
inline int nhwc_index(int n, int c, int h, int w) { return n * C * H * W + (h * W + w) * C + c; }

// x[n][c][h][w] = 1000 n + 100 c + 10 h + w: every value says where it came from.
inline std::vector<float> labelled() {
  std::vector<float> x(B * C * H * W);
  for (int n = 0; n < B; ++n)
    for (int c = 0; c < C; ++c)
      for (int h = 0; h < H; ++h)
        for (int w = 0; w < W; ++w) x[nchw_index(n, c, h, w)] = 1000.f * n + 100.f * c + 10.f * h + w;
  return x;
}

// v [B, C, H, W] with each value moved from where the order `from` puts it to where `to` does.
inline std::vector<double> reordered(const std::vector<float>& v, Order from, Order to) {
  std::vector<double> out(v.size());
  for (int n = 0; n < B; ++n)
    for (int c = 0; c < C; ++c)
      for (int h = 0; h < H; ++h)
        for (int w = 0; w < W; ++w) out[to(n, c, h, w)] = v[from(n, c, h, w)];
  return out;
}
}  // namespace flatten_batch

template <typename Forward>
void check_flatten_forward(const Forward& forward) {
  using namespace flatten_batch;
  const auto x = labelled();
  std::vector<float> y(x.size() + 1, -1.f);  // one guard cell after the end
  forward(x.data(), y.data(), static_cast<long>(x.size()));
  // In NCHW, y[n][(c*H + h)*W + w] = x[n][c][h][w] is where x's values already lie: y = x.
  EXPECT_TRUE(testkit::tensor_matches("y of flatten of a [2, 3, 2, 4] batch (x[n][c][h][w] = 1000n + 100c + 10h + w)",
                                      {{"n", B}, {"f", C * H * W}}, y.data(), x.data(), testkit::kExact,
                                      {{"the channels-last order (h*W + w)*C + c", reordered(x, nchw_index, nhwc_index)}}));
  EXPECT_EQ(y.back(), -1.f) << "flatten_forward wrote past the end of its " << x.size() << " values";
}

template <typename Backward>
void check_flatten_backward(const Backward& backward) {
  using namespace flatten_batch;
  const auto dy = labelled();  // read as [B, C*H*W]
  std::vector<float> dx(dy.size(), -1.f);
  backward(dy.data(), dx.data(), static_cast<long>(dy.size()));
  EXPECT_TRUE(testkit::tensor_matches("dx of flatten's backward of a [2, 24] dy (dy[n][f] = the same labels)",
                                      {{"n", B}, {"c", C}, {"h", H}, {"w", W}}, dx.data(), dy.data(), testkit::kExact,
                                      {{"reading dy in the channels-last order (h*W + w)*C + c",
                                        reordered(dy, nhwc_index, nchw_index)}}));
}

}  // namespace course::s02test
