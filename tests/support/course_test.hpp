// Helpers shared by the stage tests: random tensors, inputs kept away from
// kinks, and a GoogleTest check that prints the gradient checker's verdict.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/check/gradcheck.hpp"
#include "common/core/rng.hpp"
#include "tensor_check.hpp"

namespace course::testkit {

/// n values uniform in [lo, hi).
inline std::vector<double> random_vector(std::size_t n, std::uint64_t seed, double lo = -1.0, double hi = 1.0) {
  Rng rng(seed, 5);
  std::vector<double> v(n);
  for (auto& x : v) x = rng.uniform(lo, hi);
  return v;
}

/// n values uniform in [-1, 1) with |x| >= gap: away from the kink of ReLU at 0,
/// so a step of eps never crosses it.
inline std::vector<double> random_away_from_zero(std::size_t n, std::uint64_t seed, double gap = 0.05) {
  std::vector<double> v = random_vector(n, seed);
  for (auto& x : v)
    if (std::fabs(x) < gap) x = x < 0 ? x - gap : x + gap;
  return v;
}

/// n labels in [0, K).
inline std::vector<int> random_labels(int n, int K, std::uint64_t seed) {
  Rng rng(seed, 6);
  std::vector<int> v(static_cast<std::size_t>(n));
  for (auto& y : v) y = static_cast<int>(rng.below(static_cast<std::uint64_t>(K)));
  return v;
}

/// sum_i y[i] * r[i]: a scalar loss whose gradient with respect to y is r, so
/// backward can be fed dy = r and every output entry matters.
inline double weighted_sum(const std::vector<double>& y, const std::vector<double>& r) {
  double s = 0;
  for (std::size_t i = 0; i < y.size(); ++i) s += y[i] * r[i];
  return s;
}

/// When a failed gradient check's `analytic` gradient (the whole tensor) is, to rounding, what
/// one of the test's known slips gives, says so in the check's message in place of the pattern
/// the checker found: the central differences show where a gradient is wrong, a known slip why.
inline void name_slip(GradCheckResult& result, const std::vector<double>& analytic, const std::vector<KnownSlip>& slips) {
  if (result.passed) return;
  for (const KnownSlip& slip : slips) {
    double scale = 0;
    for (double v : slip.values) scale = std::max(scale, std::fabs(v));
    if (detail::same_values(analytic, slip.values, Tolerance{1e-9 * scale, 1e-9})) {
      result.pattern = "the analytic gradient is what " + slip.what + " gives";  // the generic pattern says less
      return;
    }
  }
}

}  // namespace course::testkit

/// Passes when the gradient check passes; on failure prints the tensor, the
/// worst relative error and where it is.
#define EXPECT_GRADIENT_OK(result)                                        \
  do {                                                                   \
    const ::course::GradCheckResult& r_ = (result);                      \
    EXPECT_TRUE(r_.passed) << "gradient check failed: " << r_.message(); \
  } while (0)

/// Passes when the gradient check rejects a planted mistake.
#define EXPECT_GRADIENT_REJECTED(result)                                               \
  do {                                                                                \
    const ::course::GradCheckResult& r_ = (result);                                   \
    EXPECT_FALSE(r_.passed) << "the checker accepted a wrong gradient: " << r_.message(); \
  } while (0)
