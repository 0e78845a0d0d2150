// Task 1.4: dense backward (dW, db, dX), checked by central differences.
#include <gtest/gtest.h>

#include "01_fc_softmax/dense.hpp"
#include "course_test.hpp"

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
  EXPECT_GRADIENT_OK(check_gradient("dW of dense" + shape, W.data(), {OUT, IN}, dW.data(), loss, opt));
  EXPECT_GRADIENT_OK(check_gradient("db of dense" + shape, b.data(), {OUT}, db.data(), loss, opt));
  EXPECT_GRADIENT_OK(check_gradient("dX of dense" + shape, x.data(), {B, IN}, dx.data(), loss, opt));
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
  EXPECT_DOUBLE_EQ(dW[0], 1);
  EXPECT_DOUBLE_EQ(dW[1], 2);
  EXPECT_DOUBLE_EQ(db[0], 1);
  EXPECT_DOUBLE_EQ(dx[0], 3);
  EXPECT_DOUBLE_EQ(dx[1], 4);
}

// The first layer passes dx = nullptr: no input gradient is needed there.
TEST(Task1_4_DenseBackward, NullInputGradientIsAllowed) {
  const double x[2] = {1, 2}, W[2] = {3, 4}, dy[1] = {2};
  double dW[2], db[1];
  dense_backward<double>(x, W, dy, dW, db, nullptr, 1, 2, 1);
  EXPECT_DOUBLE_EQ(dW[1], 4);
}
