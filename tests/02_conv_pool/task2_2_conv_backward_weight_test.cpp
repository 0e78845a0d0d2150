// Task 2.2: the weight and bias gradients of conv2d, checked by central
// differences of the plain reference forward (reference.hpp), so these tests
// need Task 2.2 alone.
#include <gtest/gtest.h>

#include <string>

#include "02_conv_pool/conv.hpp"
#include "conv_cases.hpp"
#include "course_test.hpp"
#include "planted_mistakes.hpp"
#include "reference.hpp"
#include "tensor_check.hpp"

using namespace course;
using reference::ConvCase;

namespace {
// L = sum_i r_i y_i, so dL/dy = r and every output matters.
void check_weight_gradients(const ConvCase& c) {
  const ConvGeometry& g = c.g;
  auto x = testkit::random_vector(c.B * g.in_size(), 21), W = testkit::random_vector(g.weight_size(), 22),
       b = testkit::random_vector(g.C_out, 23);
  const auto r = testkit::random_vector(c.B * g.out_size(), 24);
  std::vector<double> dW(W.size()), db(b.size());
  conv2d_backward_weight(x.data(), r.data(), dW.data(), db.data(), c.B, g);
  auto loss = [&] { return testkit::weighted_sum(reference::conv_forward(x, W, b, c.B, g), r); };
  GradCheckOptions opt;
  opt.tolerance = 1e-6;  // conv is linear in W and b: only rounding (up to about 1e-7 on small entries here) separates the two
  const std::string where = " (" + reference::describe(c) + ")";
  auto result = check_gradient("dW of conv" + where, W.data(), {{"co", g.C_out}, {"ci", g.C_in}, {"kh", g.K}, {"kw", g.K}},
                               dW.data(), loss, opt);
  planted::name_mistake(result, planted::conv_weight_mistake(dW, x, r, c.B, g));
  EXPECT_GRADIENT_OK(result);
  EXPECT_GRADIENT_OK(check_gradient("db of conv" + where, b.data(), {{"co", g.C_out}}, db.data(), loss, opt));
}
}  // namespace

TEST(Task2_2_ConvBackwardWeight, K3Pad1NonSquareBatch) { check_weight_gradients(reference::kK3Pad1NonSquare); }
TEST(Task2_2_ConvBackwardWeight, K3Pad0) { check_weight_gradients(reference::kK3Pad0); }
TEST(Task2_2_ConvBackwardWeight, K5Pad2) { check_weight_gradients(reference::kK5Pad2); }
TEST(Task2_2_ConvBackwardWeight, K3Pad2) { check_weight_gradients(reference::kK3Pad2); }
TEST(Task2_2_ConvBackwardWeight, K1) { check_weight_gradients(reference::kK1); }
TEST(Task2_2_ConvBackwardWeight, K1Stride2) { check_weight_gradients(reference::kK1Stride2); }
TEST(Task2_2_ConvBackwardWeight, K3Pad1Stride2) { check_weight_gradients(reference::kK3Pad1Stride2); }
TEST(Task2_2_ConvBackwardWeight, K5Pad1Stride2) { check_weight_gradients(reference::kK5Pad1Stride2); }
TEST(Task2_2_ConvBackwardWeight, K5Pad2Stride2) { check_weight_gradients(reference::kK5Pad2Stride2); }
TEST(Task2_2_ConvBackwardWeight, K3Pad0Stride3) { check_weight_gradients(reference::kK3Pad0Stride3); }

// The gradients are sums over the batch, written fresh on every call: stale
// values must not leak in. One 2x2 image, a 1x1 filter: dW = sum x * dy.
TEST(Task2_2_ConvBackwardWeight, SumsOverTheBatchAndOverwrites) {
  const ConvGeometry g{1, 2, 2, 1, 1, 0, 1};
  const double x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, dy[8] = {1, 0, 0, 1, 0.5, 0.5, 0, 0};
  double dW[1] = {100}, db[1] = {100};
  conv2d_backward_weight(x, dy, dW, db, 2, g);
  const std::string what = " of a 1x1 conv on two 2x2 examples (the buffers held 100 before the call)";
  EXPECT_TRUE(testkit::scalar_matches("dW" + what, dW[0], (1 + 4) + (2.5 + 3), testkit::kDoubleEq,
                                      {{"adding to the 100 dW held, without zeroing it first", {100 + 10.5}},
                                       {"example 1 alone (each example overwrites dW: it sums over the batch)", {5.5}},
                                       {"example 0 alone (dW sums over the batch)", {5}}}));
  EXPECT_TRUE(testkit::scalar_matches("db" + what, db[0], 2 + 1, testkit::kDoubleEq,
                                      {{"adding to the 100 db held, without zeroing it first", {103}},
                                       {"example 1 alone (each example overwrites db: it sums over the batch)", {1}},
                                       {"example 0 alone (db sums over the batch)", {2}}}));
}
