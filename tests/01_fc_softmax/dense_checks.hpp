// The checks of Tasks 1.1 (dense forward) and 1.4 (dense backward), taking the code under test as
// an argument: the task tests pass the lesson's dense_forward and dense_backward, the slips
// catalog (slips_test.cpp) a learner's wrong copy, so both meet the very same messages.
//
//   forward(x, W, b, y, B, IN, OUT)           for float and double pointers
//   backward(x, W, dy, dW, db, dx, B, IN, OUT) for double pointers (dx may be nullptr)
//
// The gradient checks of Task 1.4 differentiate the loss through `forward` (the lesson's: Task 1.4
// then needs Task 1.1, and says so).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "course_test.hpp"
#include "tensor_check.hpp"

namespace course::s01test {

/// y = x W^T + b in double: the reference, and the two slips a failing y is checked against:
/// W read as if it were stored [IN, OUT] (W[i][o] where W[o][i] belongs), and the bias left out.
enum class DenseSlip { None, WeightsReadAsInByOut, NoBias };

template <typename T>
std::vector<double> dense_reference(const T* x, const T* W, const T* b, int B, int IN, int OUT,
                                    DenseSlip slip = DenseSlip::None) {
  std::vector<double> y(static_cast<std::size_t>(B) * OUT);
  for (int n = 0; n < B; ++n)
    for (int o = 0; o < OUT; ++o) {
      double s = slip == DenseSlip::NoBias ? 0.0 : static_cast<double>(b[o]);
      for (int i = 0; i < IN; ++i)
        s += static_cast<double>(slip == DenseSlip::WeightsReadAsInByOut ? W[i * OUT + o] : W[o * IN + i]) * x[n * IN + i];
      y[static_cast<std::size_t>(n) * OUT + o] = s;
    }
  return y;
}

template <typename T>
std::vector<testkit::KnownSlip> dense_slips(const T* x, const T* W, const T* b, int B, int IN, int OUT) {
  return {{"reading W as [IN, OUT] (W[i * OUT + o]; W is [OUT, IN]: row o is W[o * IN + i])",
           dense_reference(x, W, b, B, IN, OUT, DenseSlip::WeightsReadAsInByOut)},
          {"leaving out the bias b[o]", dense_reference(x, W, b, B, IN, OUT, DenseSlip::NoBias)}};
}

inline std::string describe_dense(int B, int IN, int OUT) {
  return "y of dense_forward (B=" + std::to_string(B) + ", IN=" + std::to_string(IN) + ", OUT=" + std::to_string(OUT) + ")";
}

// A 2x3 weight, worked by hand: y = x W^T + b.
template <typename Forward>
void check_dense_forward_by_hand(const Forward& forward) {
  const float x[2 * 3] = {1, 2, 3,    // example 0
                          -1, 0, 2};  // example 1
  const float W[2 * 3] = {0.5f, -1, 2,   // output 0
                          1, 1, -0.5f};  // output 1
  const float b[2] = {0.25f, -1};
  float y[2 * 2];
  forward(x, W, b, y, 2, 3, 2);
  const float want[2 * 2] = {0.5f - 2 + 6 + 0.25f, 1 + 2 - 1.5f - 1,  //
                             -0.5f + 0 + 4 + 0.25f, -1 + 0 - 1 - 1};
  EXPECT_TRUE(testkit::tensor_matches("the hand example's " + describe_dense(2, 3, 2), {{"n", 2}, {"o", 2}}, y, want,
                                      testkit::kFloatEq, dense_slips(x, W, b, 2, 3, 2)));
}

// Random shapes, including 1-wide ones, against a plain double loop.
template <typename Forward>
void check_dense_forward_on_random_shapes(const Forward& forward) {
  const int shapes[][3] = {{1, 1, 1}, {3, 5, 4}, {7, 33, 10}, {64, 100, 17}};
  for (const auto& s : shapes) {
    const int B = s[0], IN = s[1], OUT = s[2];
    auto x = testkit::random_vector(static_cast<std::size_t>(B) * IN, 1);
    auto W = testkit::random_vector(static_cast<std::size_t>(OUT) * IN, 2);
    auto b = testkit::random_vector(static_cast<std::size_t>(OUT), 3);
    std::vector<double> y(static_cast<std::size_t>(B) * OUT, -999);  // an entry never written stays -999
    forward(x.data(), W.data(), b.data(), y.data(), B, IN, OUT);
    ASSERT_TRUE(testkit::tensor_matches(describe_dense(B, IN, OUT), {{"n", B}, {"o", OUT}}, y,
                                        dense_reference(x.data(), W.data(), b.data(), B, IN, OUT),
                                        testkit::Tolerance{1e-12, 0},
                                        dense_slips(x.data(), W.data(), b.data(), B, IN, OUT)));
  }
}

/// dW, db and dX of `backward` on a batch of B examples against central differences of the loss
/// through `forward`, naming the slips whose gradients it knows.
template <typename Backward, typename Forward>
void check_dense_gradients(const Backward& backward, const Forward& forward, int B, int IN, int OUT) {
  auto x = testkit::random_vector(std::size_t(B) * IN, 41);
  auto W = testkit::random_vector(std::size_t(OUT) * IN, 42);
  auto b = testkit::random_vector(std::size_t(OUT), 43);
  const auto r = testkit::random_vector(std::size_t(B) * OUT, 44);  // dL/dy
  std::vector<double> dW(W.size()), db(b.size()), dx(x.size());
  backward(x.data(), W.data(), r.data(), dW.data(), db.data(), dx.data(), B, IN, OUT);
  auto loss = [&] {
    std::vector<double> y(std::size_t(B) * OUT);
    forward(x.data(), W.data(), b.data(), y.data(), B, IN, OUT);
    return testkit::weighted_sum(y, r);
  };
  const std::string shape = " (B=" + std::to_string(B) + ", IN=" + std::to_string(IN) + ", OUT=" +
                            std::to_string(OUT) + ")";
  GradCheckOptions opt;
  opt.tolerance = 1e-7;
  auto dW_check = check_gradient("dW of dense" + shape, W.data(), {{"o", OUT}, {"i", IN}}, dW.data(), loss, opt);
  auto db_check = check_gradient("db of dense" + shape, b.data(), {{"o", OUT}}, db.data(), loss, opt);
  auto dx_check = check_gradient("dX of dense" + shape, x.data(), {{"n", B}, {"i", IN}}, dx.data(), loss, opt);
  // The loss is linear in W, b and x, so the slips' gradients are exact: name them when they are the answer.
  std::vector<double> db_first_example(r.begin(), r.begin() + OUT), db_last_example(r.end() - OUT, r.end());
  std::vector<double> dW_last_example(W.size()), dx_transposed_W(x.size(), 0.0);
  for (int o = 0; o < OUT; ++o)
    for (int i = 0; i < IN; ++i) dW_last_example[o * IN + i] = r[(B - 1) * OUT + o] * x[(B - 1) * IN + i];
  for (int n = 0; n < B; ++n)
    for (int i = 0; i < IN; ++i)
      for (int o = 0; o < OUT; ++o) dx_transposed_W[n * IN + i] += r[n * OUT + o] * W[i * OUT + o];
  testkit::name_slip(dW_check, dW,
                     {{"dy^T x of the last example alone (dW[o][i] = where dW[o][i] += belongs: dW sums over the batch)",
                       dW_last_example}});
  testkit::name_slip(db_check, db,
                     {{"dy of the last example alone (db[o] = where db[o] += belongs: db sums dy over the batch)",
                       db_last_example},
                      {"dy of example 0 alone (db sums dy over the batch)", db_first_example}});
  testkit::name_slip(dx_check, dx, {{"dy W with W read as [IN, OUT] (W[i * OUT + o]; W is [OUT, IN])", dx_transposed_W}});
  EXPECT_GRADIENT_OK(dW_check);
  EXPECT_GRADIENT_OK(db_check);
  EXPECT_GRADIENT_OK(dx_check);
}

// Backward overwrites: stale values in the outputs must not leak in.
template <typename Backward>
void check_dense_backward_overwrites(const Backward& backward) {
  const double x[2] = {1, 2}, W[2] = {3, 4}, dy[1] = {1};
  double dW[2] = {100, 100}, db[1] = {100}, dx[2] = {100, 100};
  backward(x, W, dy, dW, db, dx, 1, 2, 1);
  const double want_dW[2] = {1, 2}, want_db[1] = {1}, want_dx[2] = {3, 4};
  const std::string buffers = " (B=1, IN=2, OUT=1; the buffers held 100 before the call)";
  const auto kept_100 = [](std::vector<double> v) {
    for (double& g : v) g += 100;
    return testkit::KnownSlip{"adding to the 100 the buffer held, without zeroing it first", v};
  };
  EXPECT_TRUE(testkit::tensor_matches("dW" + buffers, {{"o", 1}, {"i", 2}}, dW, want_dW, testkit::kDoubleEq,
                                      {kept_100({1, 2})}));
  EXPECT_TRUE(testkit::tensor_matches("db" + buffers, {{"o", 1}}, db, want_db, testkit::kDoubleEq, {kept_100({1})}));
  EXPECT_TRUE(testkit::tensor_matches("dX" + buffers, {{"n", 1}, {"i", 2}}, dx, want_dx, testkit::kDoubleEq,
                                      {kept_100({3, 4})}));
}

// The first layer passes dx = nullptr: no input gradient is needed there.
template <typename Backward>
void check_dense_backward_without_dx(const Backward& backward) {
  const double x[2] = {1, 2}, W[2] = {3, 4}, dy[1] = {2};
  double dW[2], db[1];
  backward(x, W, dy, dW, db, static_cast<double*>(nullptr), 1, 2, 1);
  const double want_dW[2] = {2, 4}, want_db[1] = {2};
  EXPECT_TRUE(testkit::tensor_matches("dW with dx = nullptr (B=1, IN=2, OUT=1)", {{"o", 1}, {"i", 2}}, dW, want_dW,
                                      testkit::kDoubleEq));
  EXPECT_TRUE(testkit::tensor_matches("db with dx = nullptr (B=1, IN=2, OUT=1)", {{"o", 1}}, db, want_db,
                                      testkit::kDoubleEq));
}

/// Every check of Task 1.1, and of Task 1.4, in the order of the task's tests.
template <typename Forward>
void check_dense_forward(const Forward& forward) {
  check_dense_forward_by_hand(forward);
  check_dense_forward_on_random_shapes(forward);
}

template <typename Backward, typename Forward>
void check_dense_backward(const Backward& backward, const Forward& forward) {
  for (const auto& s : {std::vector<int>{1, 1, 1}, {4, 7, 5}, {9, 50, 12}})
    check_dense_gradients(backward, forward, s[0], s[1], s[2]);
  check_dense_backward_overwrites(backward);
  check_dense_backward_without_dx(backward);
}

}  // namespace course::s01test
