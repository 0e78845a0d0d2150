// Task 6.9: the dense layer on cuBLAS (bias on cuDNN) against stage 01's
// dense_forward and dense_backward, row-major in and out.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "01_fc_softmax/dense.hpp"
#include "06_cudnn/dense_cublas.hpp"
#include "course_test.hpp"
#include "s06_support.hpp"

using namespace course;
using namespace course::s06test;

namespace {

// FP32 dot products of up to 784 terms of values in [-1, 1] against double:
// within ~1e-5 of the output's scale. Checked to 1e-4 of it; a transposed
// operand or a wrong leading dimension is off by O(1), or fails to run.
constexpr double kDenseAbs = 1e-4, kDenseRel = 1e-4;

void check_dense(int B, int IN, int OUT) {
  S06_SKIP_WITHOUT_GPU();
  const std::string what = "dense " + std::to_string(IN) + " -> " + std::to_string(OUT) + ", batch " + std::to_string(B);
  TestGpu gpu;
  DenseDescriptors d;
  test_nchw(d.y, B, OUT, 1, 1);
  test_nchw(d.bias, 1, OUT, 1, 1);
  const auto x = as_float_values(testkit::random_vector(static_cast<std::size_t>(B) * IN, 91));
  const auto W = as_float_values(testkit::random_vector(static_cast<std::size_t>(OUT) * IN, 92));
  const auto b = as_float_values(testkit::random_vector(OUT, 93));
  const auto dy = as_float_values(testkit::random_vector(static_cast<std::size_t>(B) * OUT, 94));
  const auto dev_x = to_device(x), dev_W = to_device(W), dev_b = to_device(b), dev_dy = to_device(dy);
  auto y = filled(static_cast<std::size_t>(B) * OUT, -99.f), dx = filled(x.size(), 777.f),
       dW = filled(W.size(), 777.f), db = filled(b.size(), 777.f);
  dense_forward_cublas(gpu.h(), d, dev_x.get(), dev_W.get(), dev_b.get(), y.get(), B, IN, OUT);
  dense_backward_cublas(gpu.h(), d, dev_x.get(), dev_W.get(), dev_dy.get(), dW.get(), db.get(), dx.get(), B, IN, OUT);
  const auto got_y = to_host(y), got_dx = to_host(dx), got_dW = to_host(dW), got_db = to_host(db);

  std::vector<double> want_y(got_y.size()), want_dx(x.size()), want_dW(W.size()), want_db(b.size());
  dense_forward(x.data(), W.data(), b.data(), want_y.data(), B, IN, OUT);
  dense_backward(x.data(), W.data(), dy.data(), want_dW.data(), want_db.data(), want_dx.data(), B, IN, OUT);
  EXPECT_TRUE(all_close("y of " + what, got_y, want_y, {{"n", B}, {"o", OUT}}, kDenseAbs * scale_of(want_y), kDenseRel));
  EXPECT_TRUE(all_close("dx of " + what, got_dx, want_dx, {{"n", B}, {"i", IN}}, kDenseAbs * scale_of(want_dx), kDenseRel));
  EXPECT_TRUE(all_close("dW of " + what, got_dW, want_dW, {{"o", OUT}, {"i", IN}}, kDenseAbs * scale_of(want_dW), kDenseRel));
  EXPECT_TRUE(all_close("db of " + what, got_db, want_db, {{"o", OUT}}, kDenseAbs * scale_of(want_db), kDenseRel));
}

}  // namespace

// Every size different, so a swapped m, n or k, or a wrong leading dimension, shows.
TEST(Task6_9_Dense, SmallOddSizes) { check_dense(3, 5, 4); }
TEST(Task6_9_Dense, MlpFirstLayer) { check_dense(64, 784, 256); }
TEST(Task6_9_Dense, CnnClassifier) { check_dense(17, 1568, 100); }
TEST(Task6_9_Dense, OneOutput) { check_dense(7, 9, 1); }
TEST(Task6_9_Dense, OneExample) { check_dense(1, 6, 11); }

// The first layer passes a null dx: only dW and db are computed.
TEST(Task6_9_Dense, NullDxSkipsTheInputGradient) {
  S06_SKIP_WITHOUT_GPU();
  TestGpu gpu;
  const int B = 4, IN = 6, OUT = 5;
  DenseDescriptors d;
  test_nchw(d.y, B, OUT, 1, 1);
  test_nchw(d.bias, 1, OUT, 1, 1);
  const auto x = as_float_values(testkit::random_vector(B * IN, 95)), W = as_float_values(testkit::random_vector(OUT * IN, 96));
  const auto dy = as_float_values(testkit::random_vector(B * OUT, 97));
  const auto dev_x = to_device(x), dev_W = to_device(W), dev_dy = to_device(dy);
  auto dW = filled(W.size(), 777.f), db = filled(OUT, 777.f);
  dense_backward_cublas(gpu.h(), d, dev_x.get(), dev_W.get(), dev_dy.get(), dW.get(), db.get(), nullptr, B, IN, OUT);
  std::vector<double> want_dW(W.size()), want_db(OUT);
  const auto got_dW = to_host(dW), got_db = to_host(db);
  dense_backward(x.data(), W.data(), dy.data(), want_dW.data(), want_db.data(), static_cast<double*>(nullptr), B, IN, OUT);
  EXPECT_TRUE(all_close("dW with dx null", got_dW, want_dW, {{"o", OUT}, {"i", IN}}, kDenseAbs * scale_of(want_dW), kDenseRel));
  EXPECT_TRUE(all_close("db with dx null", got_db, want_db, {{"o", OUT}}, kDenseAbs * scale_of(want_db), kDenseRel));
}
