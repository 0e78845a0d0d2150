// The diagnosis of a wrong tensor (common/mismatch.hpp) and its GoogleTest message
// (tests/support/tensor_check.hpp): each planted slip must be named, and a tensor wrong in
// no particular way must be named as nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/gradcheck.hpp"
#include "common/mismatch.hpp"
#include "tensor_check.hpp"

using namespace course;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A reference tensor of shape [n=4, o=5] with distinct, irregular values.
std::vector<double> reference(int rows = 4, int cols = 5) {
  std::vector<double> v(static_cast<std::size_t>(rows) * cols);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::sin(1.7 * static_cast<double>(i) + 0.3) * (1 + 0.1 * i);
  return v;
}

std::string message(const std::vector<double>& actual, const std::vector<double>& expected,
                    const TensorShape& shape = {{"n", 4}, {"o", 5}}) {
  const auto r = testkit::tensor_matches("y", shape, actual, expected, testkit::Tolerance{1e-9, 1e-9});
  return r ? "" : r.message();
}

TEST(Mismatch, ACorrectTensorPasses) { EXPECT_EQ(message(reference(), reference()), ""); }

TEST(Mismatch, NamesTheShapeAndTheFirstWrongEntries) {
  auto got = reference();
  got[7] += 1;
  const std::string m = message(got, reference());
  EXPECT_TRUE(has(m, "y, shape [n=4, o=5]: wrong at 1 of 20 entries")) << m;
  EXPECT_TRUE(has(m, "at [1, 2]: expected")) << m;
}

TEST(Mismatch, ATranspose) {
  const auto ref = reference();
  std::vector<double> got(ref.size());
  for (int n = 0; n < 4; ++n)
    for (int o = 0; o < 5; ++o) got[o * 4 + n] = ref[n * 5 + o];  // stored [o][n]
  const std::string m = message(got, ref);
  EXPECT_TRUE(has(m, "laid out with n and o swapped")) << m;
}

TEST(Mismatch, ASignAndAFactor) {
  auto neg = reference(), quad = reference(), quarter = reference();
  for (double& v : neg) v = -v;
  for (double& v : quad) v *= 4;
  for (double& v : quarter) v /= 4;
  EXPECT_TRUE(has(message(neg, reference()), "the sign is flipped")) << message(neg, reference());
  EXPECT_TRUE(has(message(quad, reference()), "actual = 4 x expected")) << message(quad, reference());
  EXPECT_TRUE(has(message(quarter, reference()), "actual = 1/4 x expected")) << message(quarter, reference());
}

TEST(Mismatch, AConstantAndATermOfOneAxis) {
  const auto ref = reference();
  auto plus = ref, minus = ref, bias = ref;
  for (double& v : plus) v += 0.5;
  for (double& v : minus) v -= 0.5;  // a bias of 0.5 left out: said as "- 0.5", not "+ -0.5"
  for (int n = 0; n < 4; ++n)
    for (int o = 0; o < 5; ++o) bias[n * 5 + o] -= 0.1 * (o + 1);  // a bias b[o] left out
  EXPECT_TRUE(has(message(plus, ref), "actual = expected + 0.5 at every entry")) << message(plus, ref);
  EXPECT_TRUE(has(message(minus, ref), "actual = expected - 0.5 at every entry")) << message(minus, ref);
  EXPECT_TRUE(has(message(bias, ref), "depends on o alone")) << message(bias, ref);
}

TEST(Mismatch, ATermReadWithTheWrongIndex) {
  const auto ref = reference();
  auto got = ref;
  const double b[5] = {0.3, -0.7, 1.1, 0.2, -0.4};
  for (int n = 0; n < 4; ++n)
    for (int o = 0; o < 5; ++o) got[n * 5 + o] += b[n] - b[o];  // y + b[n] where y + b[o] belongs
  const std::string m = message(got, ref);
  EXPECT_TRUE(has(m, "actual - expected = f(n) + g(o): a term indexed by n where one indexed by o belongs")) << m;
}

TEST(Mismatch, AnIndexOffByOne) {
  const auto ref = reference();
  std::vector<double> got(ref.size(), 0.0);
  for (int n = 0; n < 4; ++n)
    for (int o = 0; o + 1 < 5; ++o) got[n * 5 + o + 1] = ref[n * 5 + o];  // written one column too far
  const std::string m = message(got, ref);
  EXPECT_TRUE(has(m, "shifted by one along o")) << m;
  EXPECT_TRUE(has(m, "sits at o = c + 1")) << m;
}

TEST(Mismatch, EntriesNeverWrittenAndWhere) {
  const auto ref = reference();
  auto got = ref;
  for (int n = 0; n < 4; ++n) got[n * 5 + 4] = NAN;  // the last column left as the test's NaN fill
  const std::string m = message(got, ref);
  EXPECT_TRUE(has(m, "every wrong entry is NaN: never written")) << m;
  EXPECT_TRUE(has(m, "right for o < 4, wrong from o = 4 on")) << m;
}

TEST(Mismatch, TheBorderOfAPlane) {
  const TensorShape shape{{"c", 2}, {"h", 5}, {"w", 5}};
  std::vector<double> ref(shape.count());
  for (std::size_t i = 0; i < ref.size(); ++i) ref[i] = std::cos(0.9 * static_cast<double>(i)) + 2;
  auto got = ref;
  for (int c = 0; c < 2; ++c)
    for (int h = 0; h < 5; ++h)
      for (int w = 0; w < 5; ++w)
        if (h == 0 || w == 0 || h == 4 || w == 4) got[(c * 5 + h) * 5 + w] *= 1.0 + 0.1 * ((h * 7 + w * 3) % 5);
  const std::string m = message(got, ref, shape);
  EXPECT_TRUE(has(m, "wrong only on the border of the h x w plane")) << m;
}

TEST(Mismatch, NoDiagnosisForScatteredErrors) {
  const auto ref = reference();
  auto got = ref;
  got[3] += 0.7;
  got[11] -= 2.0;
  got[17] *= 3.1;
  const std::string m = message(got, ref);
  EXPECT_FALSE(has(m, "diagnosis")) << m;
}

TEST(Mismatch, AKnownSlipOfTheTest) {
  const auto ref = reference();
  auto slip = ref;
  slip[2] = 9, slip[13] = -4, slip[19] = 0.5;
  const auto r = testkit::tensor_matches("y", {{"n", 4}, {"o", 5}}, slip, ref, testkit::Tolerance{1e-9, 1e-9},
                                         {{"reading the weights transposed", slip}});
  EXPECT_TRUE(has(r.message(), "diagnosis: actual is what reading the weights transposed gives")) << r.message();
}

// describe_mismatch(): a helper's own rule (a bound per entry, shown), and a tensor every entry of
// which passes but which fails as a whole (a note about it, and the entry nearest its bound).
TEST(Mismatch, AHelpersOwnRuleAndANoteAboutTheWholeTensor) {
  const auto ref = reference();
  auto got = ref;
  for (double& v : got) v = -v;
  const testkit::EntryRule rule{[](std::size_t i, double) { return 1e-6 * static_cast<double>(i + 1); },
                                [](double a, double e) { return std::fabs(a - e) <= 2e-5; },
                                "an entry passes within 1e-6 (i + 1)", true};
  const std::string m = testkit::describe_mismatch("C", {{"m", 4}, {"n", 5}}, got, ref, rule, {}, {"a note"});
  EXPECT_TRUE(has(m, "C, shape [m=4, n=5]: wrong at 20 of 20 entries (an entry passes within 1e-6 (i + 1))")) << m;
  EXPECT_TRUE(has(m, ", bound 1e-06)")) << m;
  EXPECT_TRUE(has(m, "    a note\n    diagnosis: actual = -expected at every entry")) << m;
  auto close = ref;
  for (double& v : close) v *= 1 + 3e-10;
  const std::string whole = testkit::describe_mismatch("w", {{"i", 20}}, close, ref, testkit::Tolerance{0, 1e-9}, {},
                                                       {"||actual - expected|| / ||expected|| = 3e-10, limit 1e-10"});
  EXPECT_TRUE(has(whole,
                  "w, shape [i=20]: every entry passes (an entry passes within 0 + 1e-09 x |expected|), but "
                  "the tensor as a whole does not:\n    ||actual - expected||"))
      << whole;
  EXPECT_TRUE(has(whole, "the entry nearest its bound at [")) << whole;
}

// The gradient checker asks the same questions of its sampled entries.
TEST(Mismatch, TheGradientCheckerNamesATransposedGradient) {
  // L = sum_{o,i} c[o][i] p[o][i]^2 / 2 with p of shape [3, 4]: dL/dp[o][i] = c p.
  std::vector<double> p(12), c(12);
  for (int i = 0; i < 12; ++i) p[i] = 0.3 + 0.17 * i, c[i] = 1 + 0.5 * (i % 5);
  auto loss = [&] {
    double s = 0;
    for (int i = 0; i < 12; ++i) s += c[i] * p[i] * p[i] / 2;
    return s;
  };
  std::vector<double> transposed(12);
  for (int o = 0; o < 3; ++o)
    for (int i = 0; i < 4; ++i) transposed[i * 3 + o] = c[o * 4 + i] * p[o * 4 + i];
  const auto r = check_gradient("dW", p.data(), {3, 4}, transposed.data(), loss);
  EXPECT_FALSE(r.passed);
  EXPECT_TRUE(has(r.message(), "laid out with axis 0 and axis 1 swapped")) << r.message();
  // With its axes named, the tensor is named with its shape and the diagnosis speaks of its axes.
  const auto named = check_gradient("dW", p.data(), {{"o", 3}, {"i", 4}}, transposed.data(), loss);
  EXPECT_TRUE(has(named.message(), "dW, shape [o=3, i=4]: worst relative error")) << named.message();
  EXPECT_TRUE(has(named.message(), "laid out with o and i swapped")) << named.message();
}

// Labels (class indices): a wrong class is no arithmetic slip; only where the wrong ones lie is said.
TEST(Mismatch, LabelsAreNotAmounts) {
  std::vector<int> want(20, 3), got(20, 3);
  for (int i = 12; i < 20; ++i) got[i] = 0;  // never recorded past example 12
  const auto as_amounts = testkit::tensor_matches("predictions", {{"example", 20}}, got, want, testkit::kExact);
  const auto as_labels = testkit::labels_match("predictions", {{"example", 20}}, got, want);
  EXPECT_TRUE(has(as_amounts.message(), "actual - expected = -3")) << as_amounts.message();
  EXPECT_FALSE(has(as_labels.message(), "actual - expected")) << as_labels.message();
  EXPECT_TRUE(has(as_labels.message(), "right for example < 12, wrong from example = 12 on")) << as_labels.message();
}

// One number: both values, and a slip of the test's or a simple factor when one explains it.
TEST(Mismatch, AScalar) {
  EXPECT_TRUE(testkit::scalar_matches("loss", 2.0, 2.0, testkit::kExact));
  const auto slip = testkit::scalar_matches("loss", 6.0, 2.0, testkit::kExact, {{"a sum where a mean belongs", {6.0}}});
  EXPECT_TRUE(has(slip.message(), "loss: expected 2, actual 6 (passes bit for bit)")) << slip.message();
  EXPECT_TRUE(has(slip.message(), "diagnosis: actual is what a sum where a mean belongs gives")) << slip.message();
  const auto factor = testkit::scalar_matches("loss", 0.5, 2.0, testkit::Tolerance{1e-9, 0});
  EXPECT_TRUE(has(factor.message(), "actual = 1/4 x expected")) << factor.message();
  const auto overflow = testkit::scalar_matches("loss", INFINITY, 2.0, testkit::kExact, {{"e^1000", {INFINITY}}});
  EXPECT_TRUE(has(overflow.message(), "actual is what e^1000 gives")) << overflow.message();
}

}  // namespace
