// Task 1.4: dense backward (dW, db, dX), checked by central differences.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "01_fc_softmax/dense.hpp"
#include "course_test.hpp"
#include "tensor_check.hpp"

using namespace course;

namespace {
struct DenseCase {
  int B, IN, OUT;
};

void check_dense(const DenseCase& c) {
  const int B = c.B, IN = c.IN, OUT = c.OUT;
  auto x = testkit::random_vector(std::size_t(B) * IN, 41);
  auto W = testkit::random_vector(std::size_t(OUT) * IN, 42);
  auto b = testkit::random_vector(std::size_t(OUT), 43);
  const auto r = testkit::random_vector(std::size_t(B) * OUT, 44);  // dL/dy
  std::vector<double> dW(W.size()), db(b.size()), dx(x.size());
  dense_backward(x.data(), W.data(), r.data(), dW.data(), db.data(), dx.data(), B, IN, OUT);
  auto loss = [&] {
    std::vector<double> y(std::size_t(B) * OUT);
    dense_forward(x.data(), W.data(), b.data(), y.data(), B, IN, OUT);
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
  std::vector<double> dx_transposed_W(x.size(), 0.0);
  for (int n = 0; n < B; ++n)
    for (int i = 0; i < IN; ++i)
      for (int o = 0; o < OUT; ++o) dx_transposed_W[n * IN + i] += r[n * OUT + o] * W[i * OUT + o];
  testkit::name_slip(db_check, db,
                     {{"dy of the last example alone (db[o] = where db[o] += belongs: db sums dy over the batch)",
                       db_last_example},
                      {"dy of example 0 alone (db sums dy over the batch)", db_first_example}});
  testkit::name_slip(dx_check, dx, {{"dy W with W read as [IN, OUT] (W[i * OUT + o]; W is [OUT, IN])", dx_transposed_W}});
  EXPECT_GRADIENT_OK(dW_check);
  EXPECT_GRADIENT_OK(db_check);
  EXPECT_GRADIENT_OK(dx_check);
}
}  // namespace

TEST(Task1_4_DenseBackward, GradientCheckSmall) { check_dense({1, 1, 1}); }
TEST(Task1_4_DenseBackward, GradientCheckBatch) { check_dense({4, 7, 5}); }
TEST(Task1_4_DenseBackward, GradientCheckWide) { check_dense({9, 50, 12}); }

// Backward overwrites: stale values in the outputs must not leak in.
TEST(Task1_4_DenseBackward, OverwritesGradients) {
  const double x[2] = {1, 2}, W[2] = {3, 4}, dy[1] = {1};
  double dW[2] = {100, 100}, db[1] = {100}, dx[2] = {100, 100};
  dense_backward(x, W, dy, dW, db, dx, 1, 2, 1);
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
TEST(Task1_4_DenseBackward, NullInputGradientIsAllowed) {
  const double x[2] = {1, 2}, W[2] = {3, 4}, dy[1] = {2};
  double dW[2], db[1];
  dense_backward<double>(x, W, dy, dW, db, nullptr, 1, 2, 1);
  const double want_dW[2] = {2, 4}, want_db[1] = {2};
  EXPECT_TRUE(testkit::tensor_matches("dW with dx = nullptr (B=1, IN=2, OUT=1)", {{"o", 1}, {"i", 2}}, dW, want_dW,
                                      testkit::kDoubleEq));
  EXPECT_TRUE(testkit::tensor_matches("db with dx = nullptr (B=1, IN=2, OUT=1)", {{"o", 1}}, db, want_db,
                                      testkit::kDoubleEq));
}
