// A tensor against the values it should hold, with the message a learner needs on failure:
// the tensor and its shape, expected and actual at the first wrong entries and at the worst,
// and the slip that explains them where one does (common/mismatch.hpp: a transpose, a sign,
// a factor, a term, an index off by one, entries never written; or one of the test's own
// known slips, computed by the test: "what reading W as [IN, OUT] gives").
//
//   EXPECT_TRUE(testkit::tensor_matches("y of dense_forward", {{"n", B}, {"o", OUT}}, y, ref,
//                                       testkit::Tolerance{1e-12, 1e-12}));
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "common/mismatch.hpp"

namespace course::testkit {

/// An entry passes when |actual - expected| <= atol + rtol * |expected|.
struct Tolerance {
  double atol = 0;
  double rtol = 0;
  bool accepts(double actual, double expected) const {
    return std::fabs(actual - expected) <= atol + rtol * std::fabs(expected);  // NaN fails
  }
};

/// A mistake the test knows and computes: the values `what` would produce.
struct KnownSlip {
  std::string what;             ///< e.g. "W read as [IN, OUT] (W[i * OUT + o] instead of W[o * IN + i])"
  std::vector<double> values;   ///< the whole tensor that slip gives
};

namespace detail {

inline std::string number(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace detail

/// `actual` and `expected` hold shape.count() values each (any arithmetic types).
template <typename A, typename E>
::testing::AssertionResult tensor_matches(const std::string& what, const TensorShape& shape, const A* actual,
                                          const E* expected, Tolerance tol, const std::vector<KnownSlip>& slips = {}) {
  const std::size_t n = shape.count();
  std::vector<double> got(n);
  std::vector<ExpectedEntry> want(n);
  std::size_t wrong = 0, worst = 0;
  double worst_excess = -1;
  std::vector<std::size_t> first;  // the first wrong entries, shown
  for (std::size_t i = 0; i < n; ++i) {
    got[i] = static_cast<double>(actual[i]);
    want[i] = {i, static_cast<double>(expected[i])};
    if (tol.accepts(got[i], want[i].value)) continue;
    ++wrong;
    if (first.size() < 4) first.push_back(i);
    const double excess = std::isfinite(got[i]) ? std::fabs(got[i] - want[i].value) /
                                                      (tol.atol + tol.rtol * std::fabs(want[i].value) + 1e-300)
                                                : INFINITY;
    if (excess > worst_excess) worst_excess = excess, worst = i;
  }
  if (wrong == 0) return ::testing::AssertionSuccess();
  std::ostringstream m;
  m << what << ", shape " << shape.str() << ": wrong at " << wrong << " of " << n << " entries (an entry passes within "
    << tol.atol << " + " << tol.rtol << " x |expected|)\n";
  for (std::size_t i : first)
    m << "    at " << shape.where(i) << ": expected " << detail::number(want[i].value) << ", actual "
      << detail::number(got[i]) << "\n";
  if (wrong > first.size()) m << "    ... and " << wrong - first.size() << " more";
  if (std::find(first.begin(), first.end(), worst) == first.end())
    m << (wrong > first.size() ? "; " : "    ") << "the worst at " << shape.where(worst) << ": expected "
      << detail::number(want[worst].value) << ", actual " << detail::number(got[worst]);
  if (wrong > first.size() || std::find(first.begin(), first.end(), worst) == first.end()) m << "\n";
  const CloseEnough close = [tol](double a, double e) { return tol.accepts(a, e); };
  std::string diagnosis;
  for (const KnownSlip& slip : slips) {
    if (slip.values.size() != n) continue;
    bool same = true;
    for (std::size_t i = 0; i < n && same; ++i) same = tol.accepts(got[i], slip.values[i]);
    if (same) {
      diagnosis = "actual is what " + slip.what + " gives";
      break;
    }
  }
  if (diagnosis.empty()) diagnosis = diagnose_mismatch(shape, got, want, close);
  if (!diagnosis.empty()) m << "    diagnosis: " << diagnosis << "\n";
  return ::testing::AssertionFailure() << m.str();
}

template <typename A, typename E>
::testing::AssertionResult tensor_matches(const std::string& what, const TensorShape& shape,
                                          const std::vector<A>& actual, const std::vector<E>& expected, Tolerance tol,
                                          const std::vector<KnownSlip>& slips = {}) {
  if (actual.size() != shape.count() || expected.size() != shape.count())
    return ::testing::AssertionFailure() << what << ": " << actual.size() << " values, expected " << expected.size()
                                         << " (shape " << shape.str() << ")";
  return tensor_matches(what, shape, actual.data(), expected.data(), tol, slips);
}

}  // namespace course::testkit
