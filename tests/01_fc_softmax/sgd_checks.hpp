// The checks of Task 1.6 (SGD with momentum), taking the code under test as an argument: the task
// tests pass the lesson's sgd_update, the slips catalog (slips_test.cpp) a learner's wrong copy, so
// both meet the very same messages. update(w, g, v, n, lr, momentum), as sgd_update, for double.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "course_test.hpp"
#include "tensor_check.hpp"

namespace course::s01test {

// One step of v <- m v + g, w <- w - lr v from (w, v), and the same step as the usual slips write it.
enum class SgdSlip { None, WBeforeV, LrInsideV, SignFlipped, Dampened };

struct SgdState {
  double w, v;
};

inline SgdState sgd_step(SgdState s, double g, double lr, double m, SgdSlip slip = SgdSlip::None) {
  switch (slip) {
    case SgdSlip::WBeforeV: return {s.w - lr * s.v, m * s.v + g};
    case SgdSlip::LrInsideV: return {s.w - (m * s.v + lr * g), m * s.v + lr * g};
    case SgdSlip::SignFlipped: return {s.w + lr * (m * s.v + g), m * s.v + g};
    case SgdSlip::Dampened: return {s.w - lr * (m * s.v + (1 - m) * g), m * s.v + (1 - m) * g};
    case SgdSlip::None: break;
  }
  return {s.w - lr * (m * s.v + g), m * s.v + g};
}

// What w (or v) would hold after the steps `gs` from `start` under each slip.
inline std::vector<testkit::KnownSlip> sgd_slips_after(SgdState start, const std::vector<double>& gs, double lr,
                                                       double m, bool of_w) {
  const struct {
    SgdSlip slip;
    const char* what;
  } kinds[] = {{SgdSlip::WBeforeV, "updating w with the old v, before v = momentum v + g"},
               {SgdSlip::LrInsideV, "v = momentum v + lr g, w -= v (lr inside v: not this course's convention)"},
               {SgdSlip::SignFlipped, "w += lr v (a step up the gradient)"},
               {SgdSlip::Dampened, "v = momentum v + (1 - momentum) g (a dampened average: this course's v adds g "
                                   "whole)"}};
  std::vector<testkit::KnownSlip> out;
  for (const auto& k : kinds) {
    SgdState s = start;
    for (double g : gs) s = sgd_step(s, g, lr, m, k.slip);
    out.push_back({k.what, {of_w ? s.w : s.v}});
  }
  return out;
}

template <typename Update>
void check_sgd_without_momentum(const Update& update) {
  double w[2] = {1, -2}, g[2] = {0.5, -1}, v[2] = {0, 0};
  update(w, g, v, 2, 0.1, 0.0);
  const double want[2] = {0.95, -1.9};
  EXPECT_TRUE(testkit::tensor_matches("w after one step from w = (1, -2), g = (0.5, -1), lr 0.1, momentum 0", {{"i", 2}},
                                      w, want, testkit::kDoubleEq,
                                      {{"updating w with the old v (0 here), before v = momentum v + g", {1, -2}},
                                       {"w += lr g (a step up the gradient)", {1.05, -2.1}},
                                       {"w -= g (lr left out)", {0.5, -1.0}}}));
}

// Two steps worked by hand: v1 = g1, w1 = w0 - lr g1; v2 = m g1 + g2, w2 = w1 - lr v2. (lr is not
// 1 - momentum, or lr inside v and a dampened v would give the same v.)
template <typename Update>
void check_sgd_momentum(const Update& update) {
  double w[1] = {1}, v[1] = {0};
  const double g1[1] = {2}, g2[1] = {-1}, lr = 0.05, m = 0.9;
  const SgdState start{1, 0};
  update(w, g1, v, 1, lr, m);
  EXPECT_TRUE(testkit::scalar_matches("v after step 1 (w 1, v 0, g 2, lr 0.05, momentum 0.9)", v[0], 2.0,
                                      testkit::kDoubleEq, sgd_slips_after(start, {2}, lr, m, false)));
  EXPECT_TRUE(testkit::scalar_matches("w after step 1", w[0], 1 - 0.1, testkit::kDoubleEq,
                                      sgd_slips_after(start, {2}, lr, m, true)));
  update(w, g2, v, 1, lr, m);
  EXPECT_TRUE(testkit::scalar_matches("v after step 2 (g -1)", v[0], 0.9 * 2 - 1, testkit::kDoubleEq,
                                      sgd_slips_after(start, {2, -1}, lr, m, false)));
  EXPECT_TRUE(testkit::scalar_matches("w after step 2", w[0], 0.9 - 0.05 * 0.8, testkit::Tolerance{1e-15, 0},
                                      sgd_slips_after(start, {2, -1}, lr, m, true)));
}

/// Every check of Task 1.6, in the order of the task's tests.
template <typename Update>
void check_sgd(const Update& update) {
  check_sgd_without_momentum(update);
  check_sgd_momentum(update);
}

}  // namespace course::s01test
