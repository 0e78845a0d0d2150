// Task 1.1: dense forward.
#include <gtest/gtest.h>

#include "01_fc_softmax/dense.hpp"
#include "course_test.hpp"

using namespace course;

// A 2x3 weight, worked by hand: y = x W^T + b.
TEST(Task1_1_DenseForward, MatchesHandComputedExample) {
  const float x[2 * 3] = {1, 2, 3,    // example 0
                          -1, 0, 2};  // example 1
  const float W[2 * 3] = {0.5f, -1, 2,   // output 0
                          1, 1, -0.5f};  // output 1
  const float b[2] = {0.25f, -1};
  float y[2 * 2];
  dense_forward(x, W, b, y, 2, 3, 2);
  EXPECT_FLOAT_EQ(y[0], 0.5f - 2 + 6 + 0.25f);
  EXPECT_FLOAT_EQ(y[1], 1 + 2 - 1.5f - 1);
  EXPECT_FLOAT_EQ(y[2], -0.5f + 0 + 4 + 0.25f);
  EXPECT_FLOAT_EQ(y[3], -1 + 0 - 1 - 1);
}

// Random shapes, including 1-wide ones, against a plain double loop.
TEST(Task1_1_DenseForward, MatchesReferenceOnRandomShapes) {
  const int shapes[][3] = {{1, 1, 1}, {3, 5, 4}, {7, 33, 10}, {64, 100, 17}};
  for (const auto& s : shapes) {
    const int B = s[0], IN = s[1], OUT = s[2];
    auto x = testkit::random_vector(static_cast<std::size_t>(B) * IN, 1);
    auto W = testkit::random_vector(static_cast<std::size_t>(OUT) * IN, 2);
    auto b = testkit::random_vector(static_cast<std::size_t>(OUT), 3);
    std::vector<double> y(static_cast<std::size_t>(B) * OUT, -999);
    dense_forward(x.data(), W.data(), b.data(), y.data(), B, IN, OUT);
    for (int n = 0; n < B; ++n)
      for (int o = 0; o < OUT; ++o) {
        double ref = b[o];
        for (int i = 0; i < IN; ++i) ref += W[o * IN + i] * x[n * IN + i];
        ASSERT_NEAR(y[n * OUT + o], ref, 1e-12) << "y[" << n << ", " << o << "] for B=" << B << " IN=" << IN
                                                << " OUT=" << OUT;
      }
  }
}
