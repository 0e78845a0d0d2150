// The gradient checker's message says where a gradient is wrong and, when the
// wrong entries share it, what they share: the words a learner reads first.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/check/gradcheck.hpp"

using namespace course;

namespace {

// L(p) = sum_i c_i p_i^2 / 2, so dL/dp_i = c_i p_i.
struct Quadratic {
  std::vector<double> p{0.3, -0.7, 1.1, 0.4, -0.2, 0.9}, c{1.0, 2.0, 0.5, 3.0, 1.5, 0.25};
  double loss() const {
    double s = 0;
    for (std::size_t i = 0; i < p.size(); ++i) s += c[i] * p[i] * p[i] / 2;
    return s;
  }
  std::vector<double> gradient() const {
    std::vector<double> g(p.size());
    for (std::size_t i = 0; i < p.size(); ++i) g[i] = c[i] * p[i];
    return g;
  }
  GradCheckResult check(const std::vector<double>& analytic) {
    return check_gradient("dp", p.data(), {2, 3}, analytic.data(), [this] { return loss(); });
  }
};

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(GradCheckPattern, ACorrectGradientNamesNoWrongEntry) {
  Quadratic q;
  const auto r = q.check(q.gradient());
  EXPECT_TRUE(r.passed) << r.message();
  EXPECT_EQ(r.failing, 0u);
  EXPECT_FALSE(has(r.message(), "wrong at")) << r.message();
}

TEST(GradCheckPattern, AMeanNotTakenIsAFactor) {
  Quadratic q;
  auto g = q.gradient();
  for (double& v : g) v *= 4;  // a sum over a batch of 4 where the loss is its mean
  const auto r = q.check(g);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.failing, 6u);
  EXPECT_TRUE(has(r.message(), "analytic = 4 x numeric at each wrong entry")) << r.message();
  EXPECT_TRUE(has(r.message(), "a batch of 4?")) << r.message();
}

TEST(GradCheckPattern, AMeanTakenTwiceAndASignFlip) {
  Quadratic q;
  auto halved = q.gradient(), flipped = q.gradient();
  for (double& v : halved) v /= 3;
  for (double& v : flipped) v = -v;
  EXPECT_TRUE(has(q.check(halved).message(), "divided by 3 once too often")) << q.check(halved).message();
  EXPECT_TRUE(has(q.check(flipped).message(), "the sign is flipped")) << q.check(flipped).message();
}

TEST(GradCheckPattern, WrongEntriesAreNamedAndTheOthersAgree) {
  Quadratic q;
  auto g = q.gradient();
  g[1] -= 1.0;  // [0, 1]
  g[5] -= 2.0;  // [1, 2]
  const auto r = q.check(g);
  EXPECT_EQ(r.failing, 2u);
  EXPECT_TRUE(has(r.message(), "wrong at 2 of them: [0, 1], [1, 2]; the other 4 agree")) << r.message();
  EXPECT_TRUE(r.pattern.empty()) << r.pattern;  // two different errors share no factor and no term
}

TEST(GradCheckPattern, AConstantTermLeftOut) {
  Quadratic q;
  auto g = q.gradient();
  g[1] += 0.25;  // like p where p - y belongs: the label's -1/B left out, at one entry per row
  g[3] += 0.25;
  const auto r = q.check(g);
  EXPECT_TRUE(has(r.message(), "wrong at 2 of them: [0, 1], [1, 0]; the other 4 agree")) << r.message();
  EXPECT_TRUE(has(r.message(), "analytic - numeric = 0.25 = 1/4 at each wrong entry")) << r.message();
}

TEST(GradCheckPattern, AGradientOnTheWrongEntries) {
  Quadratic q;
  q.c = {1.0, 0.0, 2.0, 0.0, 1.0, 1.0};  // entries 1 and 3 do not move the loss
  auto g = q.gradient();
  std::swap(g[0], g[1]);  // entry 0's gradient written to entry 1
  std::swap(g[2], g[3]);
  const auto r = q.check(g);
  EXPECT_TRUE(has(r.message(), "at 2 of the wrong entries only the numeric gradient is non-zero, at 2 only the analytic one"))
      << r.message();
  auto zeroed = q.gradient();
  zeroed[0] = zeroed[2] = 0;
  EXPECT_TRUE(has(q.check(zeroed).message(), "the analytic gradient is 0 at each wrong entry")) << q.check(zeroed).message();
}

TEST(GradCheckPattern, ManyWrongEntriesAreCounted) {
  Quadratic q;
  auto g = q.gradient();
  for (std::size_t i = 0; i < g.size(); ++i) g[i] += 0.5 + static_cast<double>(i);
  const auto r = q.check(g);
  EXPECT_TRUE(has(r.message(), "wrong at 6 of them: [0, 0], [0, 1], [0, 2], [1, 0] and 2 more")) << r.message();
}

}  // namespace
