// Task 1.1: dense forward.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "01_fc_softmax/dense.hpp"
#include "course_test.hpp"
#include "tensor_check.hpp"

using namespace course;

namespace {

// y = x W^T + b in double, with the two slips a failing y is checked against: W read as if
// it were stored [IN, OUT] (W[i][o] where W[o][i] belongs), and the bias left out.
enum class Slip { None, WeightsReadAsInByOut, NoBias };

template <typename T>
std::vector<double> dense_reference(const T* x, const T* W, const T* b, int B, int IN, int OUT, Slip slip = Slip::None) {
  std::vector<double> y(static_cast<std::size_t>(B) * OUT);
  for (int n = 0; n < B; ++n)
    for (int o = 0; o < OUT; ++o) {
      double s = slip == Slip::NoBias ? 0.0 : static_cast<double>(b[o]);
      for (int i = 0; i < IN; ++i)
        s += static_cast<double>(slip == Slip::WeightsReadAsInByOut ? W[i * OUT + o] : W[o * IN + i]) * x[n * IN + i];
      y[static_cast<std::size_t>(n) * OUT + o] = s;
    }
  return y;
}

template <typename T>
std::vector<testkit::KnownSlip> dense_slips(const T* x, const T* W, const T* b, int B, int IN, int OUT) {
  return {{"reading W as [IN, OUT] (W[i * OUT + o]; W is [OUT, IN]: row o is W[o * IN + i])",
           dense_reference(x, W, b, B, IN, OUT, Slip::WeightsReadAsInByOut)},
          {"leaving out the bias b[o]", dense_reference(x, W, b, B, IN, OUT, Slip::NoBias)}};
}

std::string describe(int B, int IN, int OUT) {
  return "y of dense_forward (B=" + std::to_string(B) + ", IN=" + std::to_string(IN) + ", OUT=" + std::to_string(OUT) + ")";
}

}  // namespace

// A 2x3 weight, worked by hand: y = x W^T + b.
TEST(Task1_1_DenseForward, MatchesHandComputedExample) {
  const float x[2 * 3] = {1, 2, 3,    // example 0
                          -1, 0, 2};  // example 1
  const float W[2 * 3] = {0.5f, -1, 2,   // output 0
                          1, 1, -0.5f};  // output 1
  const float b[2] = {0.25f, -1};
  float y[2 * 2];
  dense_forward(x, W, b, y, 2, 3, 2);
  const float want[2 * 2] = {0.5f - 2 + 6 + 0.25f, 1 + 2 - 1.5f - 1,  //
                             -0.5f + 0 + 4 + 0.25f, -1 + 0 - 1 - 1};
  EXPECT_TRUE(testkit::tensor_matches("the hand example's " + describe(2, 3, 2), {{"n", 2}, {"o", 2}}, y, want,
                                      testkit::kFloatEq, dense_slips(x, W, b, 2, 3, 2)));
}

// Random shapes, including 1-wide ones, against a plain double loop.
TEST(Task1_1_DenseForward, MatchesReferenceOnRandomShapes) {
  const int shapes[][3] = {{1, 1, 1}, {3, 5, 4}, {7, 33, 10}, {64, 100, 17}};
  for (const auto& s : shapes) {
    const int B = s[0], IN = s[1], OUT = s[2];
    auto x = testkit::random_vector(static_cast<std::size_t>(B) * IN, 1);
    auto W = testkit::random_vector(static_cast<std::size_t>(OUT) * IN, 2);
    auto b = testkit::random_vector(static_cast<std::size_t>(OUT), 3);
    std::vector<double> y(static_cast<std::size_t>(B) * OUT, -999);  // an entry never written stays -999
    dense_forward(x.data(), W.data(), b.data(), y.data(), B, IN, OUT);
    ASSERT_TRUE(testkit::tensor_matches(describe(B, IN, OUT), {{"n", B}, {"o", OUT}}, y,
                                        dense_reference(x.data(), W.data(), b.data(), B, IN, OUT),
                                        testkit::Tolerance{1e-12, 0},
                                        dense_slips(x.data(), W.data(), b.data(), B, IN, OUT)));
  }
}
