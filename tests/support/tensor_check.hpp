// A tensor against the values it should hold, with the message a learner needs on failure:
// the tensor and its shape, expected and actual at the first wrong entries and at the worst,
// and the slip that explains them where one does (common/mismatch.hpp: a transpose, a sign,
// a factor, a term, an index off by one, entries never written; or one of the test's own
// known slips, computed by the test: "what reading W as [IN, OUT] gives").
//
//   EXPECT_TRUE(testkit::tensor_matches("y of dense_forward", {{"n", B}, {"o", OUT}}, y, ref,
//                                       testkit::Tolerance{1e-12, 1e-12}));
//
// labels_match does the same for class indices and cell indices (no arithmetic diagnosis), and
// scalar_matches for one number (a loss, a count, a standard deviation).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
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

/// Bit for bit.
inline constexpr Tolerance kExact{0, 0};
/// At least as strict as EXPECT_FLOAT_EQ's 4 units in the last place (one unit is at least
/// |x| FLT_EPSILON / 2), for values a float computes exactly or to the last bit.
inline constexpr Tolerance kFloatEq{0, 2 * FLT_EPSILON};
/// The same for EXPECT_DOUBLE_EQ.
inline constexpr Tolerance kDoubleEq{0, 2 * DBL_EPSILON};

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

/// "within 1e-12 + 0 x |expected|", or "bit for bit".
inline std::string tolerance(Tolerance tol) {
  if (tol.atol == 0 && tol.rtol == 0) return "bit for bit";
  std::ostringstream s;
  s << "within " << tol.atol << " + " << tol.rtol << " x |expected|";
  return s.str();
}

/// Does `got` hold `values` at every entry (within `tol`; an Inf or a NaN where the slip gives one
/// too: a slip may overflow)?
inline bool same_values(const std::vector<double>& got, const std::vector<double>& values, Tolerance tol) {
  if (values.size() != got.size()) return false;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(tol.accepts(got[i], values[i]) || got[i] == values[i] || (std::isnan(got[i]) && std::isnan(values[i]))))
      return false;
  return true;
}

/// The first slip that gives `got` at every entry (within `tol`), or nullptr.
inline const KnownSlip* matching_slip(const std::vector<double>& got, const std::vector<KnownSlip>& slips, Tolerance tol) {
  for (const KnownSlip& slip : slips)
    if (same_values(got, slip.values, tol)) return &slip;
  return nullptr;
}

}  // namespace detail

/// The axes of a model parameter, named by its rank: a bias [o], a dense weight [o, i], a conv
/// weight [co, ci, kh, kw] (the layouts of stages 01 and 02).
inline TensorShape parameter_shape(const std::vector<int>& sizes) {
  TensorShape s(sizes);
  if (sizes.size() == 1) s.names = {"o"};
  if (sizes.size() == 2) s.names = {"o", "i"};
  if (sizes.size() == 4) s.names = {"co", "ci", "kh", "kw"};
  return s;
}

namespace detail {

template <typename A, typename E>
::testing::AssertionResult compare(const std::string& what, const TensorShape& shape, const A* actual, const E* expected,
                                   Tolerance tol, const std::vector<KnownSlip>& slips, ValueKind kind) {
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
  m << what << ", shape " << shape.str() << ": wrong at " << wrong << " of " << n << " entries (an entry passes "
    << detail::tolerance(tol) << ")\n";
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
  if (const KnownSlip* slip = detail::matching_slip(got, slips, tol)) diagnosis = "actual is what " + slip->what + " gives";
  if (diagnosis.empty()) diagnosis = diagnose_mismatch(shape, got, want, close, {}, kind);
  if (!diagnosis.empty()) m << "    diagnosis: " << diagnosis << "\n";
  return ::testing::AssertionFailure() << m.str();
}

}  // namespace detail

/// `actual` and `expected` hold shape.count() values each (any arithmetic types).
template <typename A, typename E>
::testing::AssertionResult tensor_matches(const std::string& what, const TensorShape& shape, const A* actual,
                                          const E* expected, Tolerance tol, const std::vector<KnownSlip>& slips = {}) {
  return detail::compare(what, shape, actual, expected, tol, slips, ValueKind::Amounts);
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

/// Labels (class indices, the index of a cell) against the ones they should be, bit for bit: the
/// same message, whose diagnosis says only which entries are wrong and where they lie, never
/// what arithmetic would turn one label into another.
template <typename A, typename E>
::testing::AssertionResult labels_match(const std::string& what, const TensorShape& shape, const A* actual,
                                        const E* expected, const std::vector<KnownSlip>& slips = {}) {
  return detail::compare(what, shape, actual, expected, kExact, slips, ValueKind::Labels);
}

template <typename A, typename E>
::testing::AssertionResult labels_match(const std::string& what, const TensorShape& shape, const std::vector<A>& actual,
                                        const std::vector<E>& expected, const std::vector<KnownSlip>& slips = {}) {
  if (actual.size() != shape.count() || expected.size() != shape.count())
    return ::testing::AssertionFailure() << what << ": " << actual.size() << " values, expected " << expected.size()
                                         << " (shape " << shape.str() << ")";
  return labels_match(what, shape, actual.data(), expected.data(), slips);
}

/// One number against the value it should hold: "<what>: expected X, actual Y", and what the
/// difference is when the test's known slips or a simple factor explain it.
template <typename A, typename E>
::testing::AssertionResult scalar_matches(const std::string& what, A actual, E expected, Tolerance tol,
                                          const std::vector<KnownSlip>& slips = {}) {
  const double got = static_cast<double>(actual), want = static_cast<double>(expected);
  if (tol.accepts(got, want)) return ::testing::AssertionSuccess();
  std::ostringstream m;
  m << what << ": expected " << detail::number(want) << ", actual " << detail::number(got) << " (passes "
    << detail::tolerance(tol) << ")";
  std::string diagnosis;
  if (const KnownSlip* slip = detail::matching_slip({got}, slips, tol)) {
    diagnosis = "actual is what " + slip->what + " gives";
  } else if (!std::isfinite(got)) {
    diagnosis = "actual is " + detail::number(got) + ": an overflow, a log of 0, or a 0/0 on the way";
  } else if (want != 0 && got != 0) {
    const double k = got / want;  // named only when it is a whole number or one over one: a count
    const double r = std::round(k), inv = std::round(1 / k);
    if (std::fabs(k + 1) <= 1e-6)
      diagnosis = "actual = -expected: the sign is flipped";
    else if ((std::fabs(r) >= 2 && std::fabs(k - r) <= 1e-6 * std::fabs(r)) ||
             (std::fabs(inv) >= 2 && std::fabs(1 / k - inv) <= 1e-6 * std::fabs(inv)))
      diagnosis = "actual = " + factor_string(k) + " x expected: a constant factor (a count divided by, or not?)";
  }
  if (!diagnosis.empty()) m << "\n    diagnosis: " << diagnosis;
  return ::testing::AssertionFailure() << m.str();
}

}  // namespace course::testkit
