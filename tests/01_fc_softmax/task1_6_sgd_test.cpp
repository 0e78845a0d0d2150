// Task 1.6: the SGD update with momentum.
#include <gtest/gtest.h>

#include <vector>

#include "01_fc_softmax/sgd.hpp"
#include "course_test.hpp"
#include "tensor_check.hpp"

using namespace course;

namespace {

// One step of v <- m v + g, w <- w - lr v from (w, v), and the same step as the usual slips write it.
enum class Slip { None, WBeforeV, LrInsideV, SignFlipped };

struct State {
  double w, v;
};

State step(State s, double g, double lr, double m, Slip slip = Slip::None) {
  switch (slip) {
    case Slip::WBeforeV: return {s.w - lr * s.v, m * s.v + g};
    case Slip::LrInsideV: return {s.w - (m * s.v + lr * g), m * s.v + lr * g};
    case Slip::SignFlipped: return {s.w + lr * (m * s.v + g), m * s.v + g};
    case Slip::None: break;
  }
  return {s.w - lr * (m * s.v + g), m * s.v + g};
}

// What w (or v) would hold after the steps `gs` from `start` under each slip.
std::vector<testkit::KnownSlip> slips_after(State start, const std::vector<double>& gs, double lr, double m, bool of_w) {
  const struct {
    Slip slip;
    const char* what;
  } kinds[] = {{Slip::WBeforeV, "updating w with the old v, before v = momentum v + g"},
               {Slip::LrInsideV, "v = momentum v + lr g, w -= v (lr inside v: not this course's convention)"},
               {Slip::SignFlipped, "w += lr v (a step up the gradient)"}};
  std::vector<testkit::KnownSlip> out;
  for (const auto& k : kinds) {
    State s = start;
    for (double g : gs) s = step(s, g, lr, m, k.slip);
    out.push_back({k.what, {of_w ? s.w : s.v}});
  }
  return out;
}

}  // namespace

TEST(Task1_6_Sgd, PlainStepWithoutMomentum) {
  double w[2] = {1, -2}, g[2] = {0.5, -1}, v[2] = {0, 0};
  sgd_update(w, g, v, 2, 0.1, 0.0);
  const double want[2] = {0.95, -1.9};
  EXPECT_TRUE(testkit::tensor_matches("w after one step from w = (1, -2), g = (0.5, -1), lr 0.1, momentum 0", {{"i", 2}},
                                      w, want, testkit::kDoubleEq,
                                      {{"updating w with the old v (0 here), before v = momentum v + g", {1, -2}},
                                       {"w += lr g (a step up the gradient)", {1.05, -2.1}},
                                       {"w -= g (lr left out)", {0.5, -1.0}}}));
}

// Two steps worked by hand: v1 = g1, w1 = w0 - lr g1; v2 = m g1 + g2, w2 = w1 - lr v2.
TEST(Task1_6_Sgd, MomentumAccumulatesVelocity) {
  double w[1] = {1}, v[1] = {0};
  const double g1[1] = {2}, g2[1] = {-1}, lr = 0.1, m = 0.9;
  const State start{1, 0};
  sgd_update(w, g1, v, 1, lr, m);
  EXPECT_TRUE(testkit::scalar_matches("v after step 1 (w 1, v 0, g 2, lr 0.1, momentum 0.9)", v[0], 2.0,
                                      testkit::kDoubleEq, slips_after(start, {2}, lr, m, false)));
  EXPECT_TRUE(testkit::scalar_matches("w after step 1", w[0], 1 - 0.2, testkit::kDoubleEq,
                                      slips_after(start, {2}, lr, m, true)));
  sgd_update(w, g2, v, 1, lr, m);
  EXPECT_TRUE(testkit::scalar_matches("v after step 2 (g -1)", v[0], 0.9 * 2 - 1, testkit::kDoubleEq,
                                      slips_after(start, {2, -1}, lr, m, false)));
  EXPECT_TRUE(testkit::scalar_matches("w after step 2", w[0], 0.8 - 0.1 * 0.8, testkit::Tolerance{1e-15, 0},
                                      slips_after(start, {2, -1}, lr, m, true)));
}
