// The checks of Task 1.5 (He initialisation), taking the code under test as an argument: the task
// tests pass the lesson's he_init, the slips catalog (slips_test.cpp) a learner's wrong copy, so
// both meet the very same messages. init(W, w_count, b, b_count, fan_in, rng), as he_init, for float.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/core/rng.hpp"
#include "course_test.hpp"
#include "tensor_check.hpp"

namespace course::s01test {

template <typename Init>
void check_he_standard_deviation(const Init& init) {
  for (int fan_in : {10, 100, 784}) {
    const int n = 200000;
    std::vector<float> W(n), b(16, 7.f);
    Rng rng(3);
    init(W.data(), n, b.data(), 16, fan_in, rng);
    double sum = 0, sq = 0;
    for (float w : W) {
      sum += w;
      sq += double(w) * w;
    }
    const double mean = sum / n, sd = std::sqrt(sq / n - mean * mean);
    const double want = std::sqrt(2.0 / fan_in);
    const std::string of = " of " + std::to_string(n) + " weights drawn with fan_in " + std::to_string(fan_in);
    // With 200000 draws the sample sd is within 1% of the truth with overwhelming probability.
    EXPECT_TRUE(testkit::scalar_matches(
        "standard deviation" + of + ", expected sqrt(2 / fan_in)", sd, want, testkit::Tolerance{0, 0.01},
        {{"sqrt(1 / fan_in) (LeCun's, without He's factor 2)", {std::sqrt(1.0 / fan_in)}},
         {"2 / fan_in (the variance used as the standard deviation)", {2.0 / fan_in}},
         {"the standard normal (no scaling)", {1.0}},
         {"sqrt(2 / fan_out), fan_out = w_count / fan_in (He's rule takes the fan-in, the inputs of one unit)",
          {std::sqrt(2.0 * fan_in / n)}}}));
    EXPECT_TRUE(testkit::scalar_matches("mean" + of + ", in units of sqrt(2 / fan_in)", mean / want, 0.0,
                                        testkit::Tolerance{0.01, 0}));
    const std::vector<float> zeros(b.size(), 0.f);
    EXPECT_TRUE(testkit::tensor_matches("biases after he_init (they start at zero)", {{"o", 16}}, b, zeros,
                                        testkit::kExact,
                                        {{"leaving the biases as they were (the test filled them with 7)",
                                          std::vector<double>(16, 7.0)}}));
  }
}

template <typename Init>
void check_he_same_seed_same_weights(const Init& init) {
  std::vector<float> a(1000), b(1000), bias(1);
  Rng r1(42), r2(42), r3(43);
  init(a.data(), 1000, bias.data(), 1, 50, r1);
  init(b.data(), 1000, bias.data(), 1, 50, r2);
  EXPECT_TRUE(testkit::tensor_matches("W of a second he_init from Rng(42), against the first", {{"i", 1000}}, b, a,
                                      testkit::kExact));
  init(b.data(), 1000, bias.data(), 1, 50, r3);
  EXPECT_NE(a, b) << "Rng(42) and Rng(43) gave the same 1000 weights: are they drawn from the rng passed in?";
}

// The draw order is fixed (Rng::fill_normal, entry by entry), so stages can rely on bit-identical weights.
template <typename Init>
void check_he_draw_order(const Init& init) {
  std::vector<float> W(64), bias(2);
  Rng r(9), ref(9);
  init(W.data(), 64, bias.data(), 2, 8, r);
  std::vector<float> expect(64), lecun(64);
  ref.fill_normal(expect.data(), 64, std::sqrt(2.0 / 8));
  Rng(9).fill_normal(lecun.data(), 64, std::sqrt(1.0 / 8));
  EXPECT_TRUE(testkit::tensor_matches("W of he_init from Rng(9), fan_in 8: the first 64 draws of Rng::fill_normal",
                                      {{"i", 64}}, W, expect, testkit::kExact,
                                      {{"sqrt(1 / fan_in) as the standard deviation (it is sqrt(2 / fan_in))",
                                        std::vector<double>(lecun.begin(), lecun.end())}}));
}

/// Every check of Task 1.5, in the order of the task's tests.
template <typename Init>
void check_he_init(const Init& init) {
  check_he_standard_deviation(init);
  check_he_same_seed_same_weights(init);
  check_he_draw_order(init);
}

}  // namespace course::s01test
