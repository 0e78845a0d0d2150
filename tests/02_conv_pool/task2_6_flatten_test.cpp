// Task 2.6: flatten, [B, C, H, W] -> [B, C*H*W] and back.
#include <gtest/gtest.h>

#include <vector>

#include "02_conv_pool/flatten.hpp"
#include "course_test.hpp"
#include "tensor_check.hpp"

using namespace course;

namespace {
const int B = 2, C = 3, H = 2, W = 4;

// Where x[n][c][h][w] lies in this course's NCHW order, and in the order of an NHWC layout.
using Order = int (*)(int n, int c, int h, int w);
int nchw_index(int n, int c, int h, int w) { return ((n * C + c) * H + h) * W + w; }
int nhwc_index(int n, int c, int h, int w) { return n * C * H * W + (h * W + w) * C + c; }

// x[n][c][h][w] = 1000 n + 100 c + 10 h + w: every value says where it came from.
std::vector<float> labelled_batch() {
  std::vector<float> x(B * C * H * W);
  for (int n = 0; n < B; ++n)
    for (int c = 0; c < C; ++c)
      for (int h = 0; h < H; ++h)
        for (int w = 0; w < W; ++w) x[nchw_index(n, c, h, w)] = 1000.f * n + 100.f * c + 10.f * h + w;
  return x;
}

// v [B, C, H, W] with each value moved from where the order `from` puts it to where `to` does.
std::vector<double> reordered(const std::vector<float>& v, Order from, Order to) {
  std::vector<double> out(v.size());
  for (int n = 0; n < B; ++n)
    for (int c = 0; c < C; ++c)
      for (int h = 0; h < H; ++h)
        for (int w = 0; w < W; ++w) out[to(n, c, h, w)] = v[from(n, c, h, w)];
  return out;
}

// x [B, C, H, W] flattened channels-last, y[n][(h*W + w)*C + c] = x[n][c][h][w]: the order of an
// NHWC layout, not this course's.
std::vector<double> channels_last(const std::vector<float>& x) { return reordered(x, nchw_index, nhwc_index); }

// The inverse: dx[n][c][h][w] = dy[n][(h*W + w)*C + c].
std::vector<double> from_channels_last(const std::vector<float>& dy) {
  return reordered(dy, nhwc_index, nchw_index);
}
}  // namespace

TEST(Task2_6_Flatten, ForwardOrderIsChannelRowColumn) {
  const auto x = labelled_batch();
  std::vector<float> y(x.size() + 1, -1.f);  // one guard cell after the end
  flatten_forward(x.data(), y.data(), static_cast<long>(x.size()));
  // In NCHW, y[n][(c*H + h)*W + w] = x[n][c][h][w] is where x's values already lie: y = x.
  EXPECT_TRUE(testkit::tensor_matches("y of flatten of a [2, 3, 2, 4] batch (x[n][c][h][w] = 1000n + 100c + 10h + w)",
                                      {{"n", B}, {"f", C * H * W}}, y.data(), x.data(), testkit::kExact,
                                      {{"the channels-last order (h*W + w)*C + c", channels_last(x)}}));
  EXPECT_EQ(y.back(), -1.f) << "flatten_forward wrote past the end of its " << x.size() << " values";
}

TEST(Task2_6_Flatten, BackwardRoutesEachGradientBack) {
  const auto dy = labelled_batch();  // read as [B, C*H*W]
  std::vector<float> dx(dy.size(), -1.f);
  flatten_backward(dy.data(), dx.data(), static_cast<long>(dy.size()));
  EXPECT_TRUE(testkit::tensor_matches("dx of flatten's backward of a [2, 24] dy (dy[n][f] = the same labels)",
                                      {{"n", B}, {"c", C}, {"h", H}, {"w", W}}, dx.data(), dy.data(), testkit::kExact,
                                      {{"reading dy in the channels-last order (h*W + w)*C + c", from_channels_last(dy)}}));
}
