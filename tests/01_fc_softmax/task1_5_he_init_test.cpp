// Task 1.5: He initialisation.
#include <gtest/gtest.h>

#include <cmath>

#include "01_fc_softmax/init.hpp"
#include "course_test.hpp"

using namespace course;

TEST(Task1_5_HeInit, StandardDeviationIsSqrtTwoOverFanIn) {
  for (int fan_in : {10, 100, 784}) {
    const int n = 200000;
    std::vector<float> W(n), b(16, 7.f);
    Rng rng(3);
    he_init(W.data(), n, b.data(), 16, fan_in, rng);
    double sum = 0, sq = 0;
    for (float w : W) {
      sum += w;
      sq += double(w) * w;
    }
    const double mean = sum / n, sd = std::sqrt(sq / n - mean * mean);
    const double want = std::sqrt(2.0 / fan_in);
    // With 200000 draws the sample sd is within 1% of the truth with overwhelming probability.
    EXPECT_NEAR(sd / want, 1.0, 0.01) << "fan_in " << fan_in;
    EXPECT_NEAR(mean / want, 0.0, 0.01) << "fan_in " << fan_in;
    for (float v : b) EXPECT_EQ(v, 0.f) << "biases start at zero";
  }
}

TEST(Task1_5_HeInit, SameSeedSameWeights) {
  std::vector<float> a(1000), b(1000), bias(1);
  Rng r1(42), r2(42), r3(43);
  he_init(a.data(), 1000, bias.data(), 1, 50, r1);
  he_init(b.data(), 1000, bias.data(), 1, 50, r2);
  EXPECT_EQ(a, b);
  he_init(b.data(), 1000, bias.data(), 1, 50, r3);
  EXPECT_NE(a, b);
}

// The draw order is fixed (Rng::fill_normal, entry by entry), so stages can
// rely on bit-identical weights.
TEST(Task1_5_HeInit, DrawsInTheSharedOrder) {
  std::vector<float> W(64), bias(2);
  Rng r(9), ref(9);
  he_init(W.data(), 64, bias.data(), 2, 8, r);
  std::vector<float> expect(64);
  ref.fill_normal(expect.data(), 64, std::sqrt(2.0 / 8));
  EXPECT_EQ(W, expect);
}
