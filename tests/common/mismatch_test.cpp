// The diagnosis of a wrong tensor (common/check/mismatch.hpp) and its GoogleTest message
// (tests/support/tensor_check.hpp): each planted slip must be named, and a tensor wrong in
// no particular way must be named as nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/check/gradcheck.hpp"
#include "common/check/mismatch.hpp"
#include "tensor_check.hpp"

using namespace course;

namespace {

bool mentions(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

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
  EXPECT_TRUE(mentions(m, "y, shape [n=4, o=5]: wrong at 1 of 20 entries")) << m;
  EXPECT_TRUE(mentions(m, "at [1, 2]: expected")) << m;
}

TEST(Mismatch, ATranspose) {
  const auto ref = reference();
  std::vector<double> got(ref.size());
  for (int n = 0; n < 4; ++n)
    for (int o = 0; o < 5; ++o) got[o * 4 + n] = ref[n * 5 + o];  // stored [o][n]
  const std::string m = message(got, ref);
  EXPECT_TRUE(mentions(m, "laid out with n and o swapped")) << m;
}

TEST(Mismatch, ASignAndAFactor) {
  auto neg = reference(), quad = reference(), quarter = reference();
  for (double& v : neg) v = -v;
  for (double& v : quad) v *= 4;
  for (double& v : quarter) v /= 4;
  EXPECT_TRUE(mentions(message(neg, reference()), "the sign is flipped")) << message(neg, reference());
  EXPECT_TRUE(mentions(message(quad, reference()), "actual = 4 x expected")) << message(quad, reference());
  EXPECT_TRUE(mentions(message(quarter, reference()), "actual = 1/4 x expected")) << message(quarter, reference());
}

TEST(Mismatch, AConstantAndATermOfOneAxis) {
  const auto ref = reference();
  auto plus = ref, minus = ref, bias = ref;
  for (double& v : plus) v += 0.5;
  for (double& v : minus) v -= 0.5;  // a bias of 0.5 left out: said as "- 0.5", not "+ -0.5"
  for (int n = 0; n < 4; ++n)
    for (int o = 0; o < 5; ++o) bias[n * 5 + o] -= 0.1 * (o + 1);  // a bias b[o] left out
  EXPECT_TRUE(mentions(message(plus, ref), "actual = expected + 0.5 at every entry")) << message(plus, ref);
  EXPECT_TRUE(mentions(message(minus, ref), "actual = expected - 0.5 at every entry")) << message(minus, ref);
  EXPECT_TRUE(mentions(message(bias, ref), "depends on o alone")) << message(bias, ref);
}

TEST(Mismatch, ATermReadWithTheWrongIndex) {
  const auto ref = reference();
  auto got = ref;
  const double b[5] = {0.3, -0.7, 1.1, 0.2, -0.4};
  for (int n = 0; n < 4; ++n)
    for (int o = 0; o < 5; ++o) got[n * 5 + o] += b[n] - b[o];  // y + b[n] where y + b[o] belongs
  const std::string m = message(got, ref);
  EXPECT_TRUE(mentions(m, "actual - expected = f(n) + g(o): a term indexed by n where one indexed by o belongs")) << m;
}

TEST(Mismatch, AnIndexOffByOne) {
  const auto ref = reference();
  std::vector<double> got(ref.size(), 0.0);
  for (int n = 0; n < 4; ++n)
    for (int o = 0; o + 1 < 5; ++o) got[n * 5 + o + 1] = ref[n * 5 + o];  // written one column too far
  const std::string m = message(got, ref);
  EXPECT_TRUE(mentions(m, "shifted by one along o")) << m;
  EXPECT_TRUE(mentions(m, "sits at o = c + 1")) << m;
}

// A plane [c, h, w] whose values are those of `ref` moved by (dh, dw): the value of (h, w) lands at
// (h + dh, w + dw); cells no value lands on hold what an edge gives (a partial sum): here 0.37 + h - w.
std::vector<double> moved_plane(const std::vector<double>& ref, int C, int H, int W, int dh, int dw) {
  std::vector<double> got(ref.size());
  for (int c = 0; c < C; ++c)
    for (int h = 0; h < H; ++h)
      for (int w = 0; w < W; ++w) {
        const int sh = h - dh, sw = w - dw;  // where the value now at (h, w) belongs
        got[(c * H + h) * W + w] =
            sh >= 0 && sh < H && sw >= 0 && sw < W ? ref[(c * H + sh) * W + sw] : 0.37 + h - w;
      }
  return got;
}

// The input read one cell too far in both axes (ih = oh*S - P + kh + 1): every output holds its
// diagonal neighbour's value, and the last row and column read past the image.
TEST(Mismatch, AShiftAlongBothAxesOfAPlane) {
  const TensorShape shape{{"c", 2}, {"h", 4}, {"w", 5}};
  const auto ref = reference(8, 5);
  const std::string m = message(moved_plane(ref, 2, 4, 5, -1, -1), ref, shape);
  EXPECT_TRUE(mentions(m, "shifted along h and w at once: the value that belongs at (h, w) = (r, c) sits at (r - 1, c - 1)"))
      << m;
  const std::string down = message(moved_plane(ref, 2, 4, 5, 1, 1), ref, shape);
  EXPECT_TRUE(mentions(down, "sits at (r + 1, c + 1)")) << down;
}

// A 2x2 output plane moved by one in both axes keeps one value of four; six planes of them are
// evidence enough, one plane is not (one equal value says nothing).
TEST(Mismatch, AShiftOnSmallPlanesNeedsSeveralOfThem) {
  const TensorShape many{{"n", 2}, {"co", 3}, {"oh", 2}, {"ow", 2}};
  const auto ref = reference(6, 4);
  const std::string m = message(moved_plane(ref, 6, 2, 2, -1, -1), ref, many);
  EXPECT_TRUE(mentions(m, "shifted along oh and ow at once")) << m;
  const TensorShape one{{"oh", 2}, {"ow", 2}};
  const auto small = reference(2, 2);
  const std::string alone = message(moved_plane(small, 1, 2, 2, -1, -1), small, one);
  EXPECT_FALSE(mentions(alone, "shifted")) << alone;
}

// The padding counted twice along one axis: each value two cells along.
TEST(Mismatch, AShiftByTwoAlongOneAxis) {
  const TensorShape shape{{"h", 3}, {"w", 6}};
  const auto ref = reference(3, 6);
  auto got = ref;
  for (int h = 0; h < 3; ++h)
    for (int w = 0; w < 6; ++w) got[h * 6 + w] = w >= 2 ? ref[h * 6 + w - 2] : 0.0;
  const std::string m = message(got, ref, shape);
  EXPECT_TRUE(mentions(m, "shifted by two along w: the value that belongs at w = c sits at w = c + 2")) << m;
}

// A plane of equal values with its edge wrong is no shift (every shifted value equals the one it
// replaces), nor is a plane where one row was shifted and the rest scattered.
TEST(Mismatch, NoShiftWhereNeighboursAreEqual) {
  const TensorShape shape{{"h", 4}, {"w", 4}};
  std::vector<double> ref(16, 2.5), got(16, 2.5);
  got[3] = got[7] = got[11] = got[15] = 0.1 * 7;
  const std::string m = message(got, ref, shape);
  EXPECT_FALSE(mentions(m, "shifted")) << m;
}

// ReLU's backward with its test inverted: the gradient passes where x < 0, and is 0 where x > 0.
TEST(Mismatch, AnInvertedMask) {
  const auto x = reference(4, 5), dy = reference(5, 4);
  std::vector<double> want(x.size()), got(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    want[i] = x[i] > 0 ? dy[i] : 0.0;
    got[i] = x[i] < 0 ? dy[i] : 0.0;
  }
  const std::string m = message(got, want);
  EXPECT_TRUE(mentions(m, "diagnosis: the mask is inverted: actual is 0 exactly where expected is not")) << m;
  want[7] = got[7] = 0;  // x = 0 exactly: shut by both masks
  EXPECT_TRUE(mentions(message(got, want), "the mask is inverted")) << message(got, want);
}

// Not an inverted mask: a sparse gradient sent to the wrong cells (most cells are 0 in both), a
// gradient never written (0 everywhere), a mask right at some entries.
TEST(Mismatch, NoInvertedMaskWhereTheSupportsOverlap) {
  const auto dy = reference(4, 5);
  std::vector<double> want(20, 0.0), routed(20, 0.0);
  for (int n = 0; n < 4; ++n) want[n * 5 + n] = dy[n], routed[n * 5 + n + 1] = dy[n];
  EXPECT_FALSE(mentions(message(routed, want), "mask")) << message(routed, want);
  const std::vector<double> zeros(20, 0.0);
  EXPECT_FALSE(mentions(message(zeros, want), "mask")) << message(zeros, want);
  const auto x = reference(4, 5);
  std::vector<double> masked(20), half(20);
  for (std::size_t i = 0; i < 20; ++i) {
    masked[i] = x[i] > 0 ? dy[i] : 0.0;
    half[i] = i < 10 ? masked[i] : (x[i] < 0 ? dy[i] : 0.0);
  }
  EXPECT_FALSE(mentions(message(half, masked), "mask")) << message(half, masked);
}

// A softmax gradient without the label's -1/B: 1/B more at one entry of each row, said as 1/B.
TEST(Mismatch, OneTermAtTheWrongEntriesSaidAsAFraction) {
  const auto ref = reference();
  auto got = ref;
  for (int n = 0; n < 4; ++n) got[n * 5 + (3 * n + 1) % 5] += 0.25;
  const std::string m = message(got, ref);
  EXPECT_TRUE(mentions(m, "actual - expected = 0.25 (= 1/4) at each wrong entry: one constant term left out")) << m;
}

TEST(Mismatch, EntriesNeverWrittenAndWhere) {
  const auto ref = reference();
  auto got = ref;
  for (int n = 0; n < 4; ++n) got[n * 5 + 4] = NAN;  // the last column left as the test's NaN fill
  const std::string m = message(got, ref);
  EXPECT_TRUE(mentions(m, "every wrong entry is NaN: never written")) << m;
  EXPECT_TRUE(mentions(m, "right for o < 4, wrong from o = 4 on")) << m;
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
  EXPECT_TRUE(mentions(m, "wrong only on the border of the h x w plane")) << m;
}

TEST(Mismatch, NoDiagnosisForScatteredErrors) {
  const auto ref = reference();
  auto got = ref;
  got[3] += 0.7;
  got[11] -= 2.0;
  got[17] *= 3.1;
  const std::string m = message(got, ref);
  EXPECT_FALSE(mentions(m, "diagnosis")) << m;
}

TEST(Mismatch, AKnownSlipOfTheTest) {
  const auto ref = reference();
  auto slip = ref;
  slip[2] = 9, slip[13] = -4, slip[19] = 0.5;
  const auto r = testkit::tensor_matches("y", {{"n", 4}, {"o", 5}}, slip, ref, testkit::Tolerance{1e-9, 1e-9},
                                         {{"reading the weights transposed", slip}});
  EXPECT_TRUE(mentions(r.message(), "diagnosis: actual is what reading the weights transposed gives")) << r.message();
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
  EXPECT_TRUE(mentions(m, "C, shape [m=4, n=5]: wrong at 20 of 20 entries (an entry passes within 1e-6 (i + 1))")) << m;
  EXPECT_TRUE(mentions(m, ", bound 1e-06)")) << m;
  EXPECT_TRUE(mentions(m, "    a note\n    diagnosis: actual = -expected at every entry")) << m;
  auto close = ref;
  for (double& v : close) v *= 1 + 3e-10;
  const std::string whole = testkit::describe_mismatch("w", {{"i", 20}}, close, ref, testkit::Tolerance{0, 1e-9}, {},
                                                       {"||actual - expected|| / ||expected|| = 3e-10, limit 1e-10"});
  EXPECT_TRUE(mentions(whole,
                  "w, shape [i=20]: every entry passes (an entry passes within 0 + 1e-09 x |expected|), but "
                  "the tensor as a whole does not:\n    ||actual - expected||"))
      << whole;
  EXPECT_TRUE(mentions(whole, "the entry nearest its bound at [")) << whole;
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
  EXPECT_TRUE(mentions(r.message(), "laid out with axis 0 and axis 1 swapped")) << r.message();
  // With its axes named, the tensor is named with its shape and the diagnosis speaks of its axes.
  const auto named = check_gradient("dW", p.data(), {{"o", 3}, {"i", 4}}, transposed.data(), loss);
  EXPECT_TRUE(mentions(named.message(), "dW, shape [o=3, i=4]: worst relative error")) << named.message();
  EXPECT_TRUE(mentions(named.message(), "laid out with o and i swapped")) << named.message();
}

// An inverted mask in a gradient check: the loss does not move where the analytic gradient is non-zero
// and moves where it is 0; every entry one-sided. A gradient sent to the wrong entries, with others
// right, is still "an index or an offset".
TEST(Mismatch, TheGradientCheckerNamesAnInvertedMask) {
  std::vector<double> p(12), r(12);
  for (int i = 0; i < 12; ++i) p[i] = (i % 3 == 0 ? -1.0 : 1.0) * (0.2 + 0.1 * i), r[i] = 0.5 + 0.25 * i;
  auto loss = [&] {
    double s = 0;
    for (int i = 0; i < 12; ++i) s += (p[i] > 0 ? p[i] : 0.0) * r[i];
    return s;
  };
  std::vector<double> inverted(12), misrouted(12);
  for (int i = 0; i < 12; ++i) {
    inverted[i] = p[i] < 0 ? r[i] : 0.0;
    misrouted[i] = p[i] > 0 ? r[i] : 0.0;
  }
  const auto named = check_gradient("dx of relu", p.data(), {{"i", 12}}, inverted.data(), loss);
  EXPECT_TRUE(mentions(named.message(), "the mask is inverted: analytic is 0 exactly where numeric is not")) << named.message();
  std::swap(misrouted[0], misrouted[1]);  // entry 1's gradient written to entry 0
  std::swap(misrouted[3], misrouted[4]);
  const auto routed = check_gradient("dx of relu", p.data(), {{"i", 12}}, misrouted.data(), loss);
  EXPECT_TRUE(mentions(routed.message(), "an index or an offset is off")) << routed.message();
}

// Labels (class indices): a wrong class is no arithmetic slip; only where the wrong ones lie is said.
TEST(Mismatch, LabelsAreNotAmounts) {
  std::vector<int> want(20, 3), got(20, 3);
  for (int i = 12; i < 20; ++i) got[i] = 0;  // never recorded past example 12
  const auto as_amounts = testkit::tensor_matches("predictions", {{"example", 20}}, got, want, testkit::kExact);
  const auto as_labels = testkit::labels_match("predictions", {{"example", 20}}, got, want);
  EXPECT_TRUE(mentions(as_amounts.message(), "actual - expected = -3")) << as_amounts.message();
  EXPECT_FALSE(mentions(as_labels.message(), "actual - expected")) << as_labels.message();
  EXPECT_TRUE(mentions(as_labels.message(), "right for example < 12, wrong from example = 12 on")) << as_labels.message();
}

// One number: both values, and a slip of the test's or a simple factor when one explains it.
TEST(Mismatch, AScalar) {
  EXPECT_TRUE(testkit::scalar_matches("loss", 2.0, 2.0, testkit::kExact));
  const auto slip = testkit::scalar_matches("loss", 6.0, 2.0, testkit::kExact, {{"a sum where a mean belongs", {6.0}}});
  EXPECT_TRUE(mentions(slip.message(), "loss: expected 2, actual 6 (passes bit for bit)")) << slip.message();
  EXPECT_TRUE(mentions(slip.message(), "diagnosis: actual is what a sum where a mean belongs gives")) << slip.message();
  const auto factor = testkit::scalar_matches("loss", 0.5, 2.0, testkit::Tolerance{1e-9, 0});
  EXPECT_TRUE(mentions(factor.message(), "actual = 1/4 x expected")) << factor.message();
  const auto overflow = testkit::scalar_matches("loss", INFINITY, 2.0, testkit::kExact, {{"e^1000", {INFINITY}}});
  EXPECT_TRUE(mentions(overflow.message(), "actual is what e^1000 gives")) << overflow.message();
}

}  // namespace
