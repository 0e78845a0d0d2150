// A tensor against the values it should hold, with the message a learner needs on failure:
// the tensor and its shape, expected and actual at the first wrong entries and at the worst,
// and the slip that explains them where one does (common/check/mismatch.hpp: a transpose, a sign,
// a factor, a term, an index off by one, entries never written; or one of the test's own
// known slips, computed by the test: "what reading W as [IN, OUT] gives").
//
//   EXPECT_TRUE(testkit::tensor_matches("y of dense_forward", {{"n", B}, {"o", OUT}}, y, ref,
//                                       testkit::Tolerance{1e-12, 1e-12}));
//
// describe_mismatch() is that message for helpers with a pass rule of their own (a bound per
// entry, a bound on the whole tensor's error); labels_match does the same for class indices and
// cell indices (no arithmetic diagnosis), and scalar_matches for one number (a loss, a count).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "common/check/mismatch.hpp"
#include "common/core/tensor.hpp"

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

/// Does `got` hold `values` at every entry (under `close`; an Inf or a NaN where the slip gives
/// one too: a slip may overflow)?
inline bool same_values(const std::vector<double>& got, const std::vector<double>& values, const CloseEnough& close) {
  if (values.size() != got.size()) return false;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(close(got[i], values[i]) || got[i] == values[i] || (std::isnan(got[i]) && std::isnan(values[i]))))
      return false;
  return true;
}

inline bool same_values(const std::vector<double>& got, const std::vector<double>& values, Tolerance tol) {
  return same_values(got, values, [tol](double a, double e) { return tol.accepts(a, e); });
}

/// The first slip that gives `got` at every entry (under `close`), or nullptr.
inline const KnownSlip* matching_slip(const std::vector<double>& got, const std::vector<KnownSlip>& slips,
                                      const CloseEnough& close) {
  for (const KnownSlip& slip : slips)
    if (same_values(got, slip.values, close)) return &slip;
  return nullptr;
}


/// Tensors larger than this are diagnosed from a sample of their entries (every wrong entry
/// shown in the message among them): the diagnosis looks each compared entry up by index.
constexpr std::size_t kDiagnoseAll = std::size_t(1) << 20;
constexpr std::size_t kDiagnoseSample = std::size_t(1) << 18;

}  // namespace detail

/// How a helper judges one entry, for describe_mismatch(): entry i passes when
/// |actual - expected| <= bound(i, expected) (NaN never does). `close` is the same rule
/// without the index, for the diagnosis (which compares an entry's expected value with
/// actual values found elsewhere in the tensor); `text` says the rule in the message, and
/// `show_bound` prints each shown entry's bound (for a bound that differs from entry to entry).
struct EntryRule {
  std::function<double(std::size_t, double)> bound;
  CloseEnough close;
  std::string text;
  bool show_bound = false;
};

/// The rule of a Tolerance: |actual - expected| <= atol + rtol |expected|.
inline EntryRule entry_rule(Tolerance tol) {
  return {[tol](std::size_t, double e) { return tol.atol + tol.rtol * std::fabs(e); },
          [tol](double a, double e) { return tol.accepts(a, e); }, "an entry passes " + detail::tolerance(tol), false};
}

/// The message of a tensor found wrong, as tensor_matches() prints it:
///
///   <what>, shape [n=4, o=5]: wrong at 3 of 20 entries (an entry passes within 1e-09 + 1e-09 x |expected|)
///       at [1, 2]: expected 0.5, actual -0.5
///       ... and 1 more; the worst at [3, 0]: expected 2, actual -2
///       <each of `notes`, a line about the whole tensor, e.g. its relative error in norm>
///       diagnosis: actual = -expected at every entry: the sign is flipped
///
/// `actual` and `expected` hold shape.count() values (a shape of another count is replaced by a
/// flat one, and said). A tensor whose every entry passes (a helper that also bounds the whole
/// tensor's error, and found that too large) is described by its notes and the entry nearest its
/// bound. The diagnosis is one of the test's known slips (the values a mistake the test knows
/// would give), or else common/check/mismatch.hpp's, under `rule.close`.
inline std::string describe_mismatch(const std::string& what, const TensorShape& shape_in,
                                     const std::vector<double>& actual, const std::vector<double>& expected,
                                     const EntryRule& rule, const std::vector<KnownSlip>& slips = {},
                                     const std::vector<std::string>& notes = {},
                                     ValueKind kind = ValueKind::Amounts) {
  const std::size_t n = std::min(actual.size(), expected.size());
  const TensorShape shape = shape_in.count() == n ? shape_in : TensorShape(std::vector<int>{static_cast<int>(n)});
  std::vector<double> bound(n);
  std::size_t wrong = 0, worst = 0, nearest = 0;  // the worst wrong entry; the passing one nearest its bound
  double worst_excess = -1, nearest_excess = -1;   // |actual - expected| / bound there
  std::vector<std::size_t> first;                  // the first wrong entries, shown
  for (std::size_t i = 0; i < n; ++i) {
    bound[i] = rule.bound(i, expected[i]);
    double excess = std::isfinite(actual[i]) ? std::fabs(actual[i] - expected[i]) / (bound[i] + 1e-300) : INFINITY;
    if (std::isnan(excess)) excess = INFINITY;
    if (std::fabs(actual[i] - expected[i]) <= bound[i]) {  // NaN fails
      if (excess > nearest_excess) nearest_excess = excess, nearest = i;
      continue;
    }
    ++wrong;
    if (first.size() < 4) first.push_back(i);
    if (excess > worst_excess) worst_excess = excess, worst = i;
  }
  auto entry = [&](std::size_t i) {
    std::string s = "at " + shape.where(i) + ": expected " + detail::number(expected[i]) + ", actual " +
                    detail::number(actual[i]);
    if (rule.show_bound)
      s += " (off by " + detail::number(std::fabs(actual[i] - expected[i])) + ", bound " + detail::number(bound[i]) + ")";
    return s;
  };
  std::ostringstream m;
  m << what << ", shape " << shape.str();
  if (shape_in.count() != n) m << " (given as " << shape_in.str() << ", which holds " << shape_in.count() << ")";
  if (wrong == 0) {
    m << ": every entry passes (" << rule.text << "), but the tensor as a whole does not:\n";
    for (const std::string& note : notes) m << "    " << note << "\n";
    if (n) m << "    the entry nearest its bound " << entry(nearest) << "\n";
    return m.str();
  }
  m << ": wrong at " << wrong << " of " << n << " entries (" << rule.text << ")\n";
  for (std::size_t i : first) m << "    " << entry(i) << "\n";
  const bool worst_shown = std::find(first.begin(), first.end(), worst) != first.end();
  if (wrong > first.size()) m << "    ... and " << wrong - first.size() << " more";
  if (!worst_shown) m << (wrong > first.size() ? "; " : "    ") << "the worst " << entry(worst);
  if (wrong > first.size() || !worst_shown) m << "\n";
  for (const std::string& note : notes) m << "    " << note << "\n";
  std::string diagnosis;
  const std::vector<double> got(actual.begin(), actual.begin() + static_cast<long>(n));
  if (const KnownSlip* slip = detail::matching_slip(got, slips, rule.close)) diagnosis = "actual is what " + slip->what + " gives";
  if (diagnosis.empty()) {
    std::vector<ExpectedEntry> want;
    if (n <= detail::kDiagnoseAll) {
      want.resize(n);
      for (std::size_t i = 0; i < n; ++i) want[i] = {i, expected[i]};
    } else {  // a sample: the shown entries, the worst, and entries spread by a step prime to every size
      std::vector<std::size_t> pick(first);
      pick.push_back(worst);
      const std::size_t step = 2654435761u % n ? 2654435761u % n : 1;
      std::size_t at = 0;
      for (std::size_t k = 0; k < detail::kDiagnoseSample; ++k, at = (at + step) % n) pick.push_back(at);
      std::sort(pick.begin(), pick.end());
      pick.erase(std::unique(pick.begin(), pick.end()), pick.end());
      for (std::size_t i : pick) want.push_back({i, expected[i]});
    }
    diagnosis = diagnose_mismatch(shape, got, want, rule.close, {}, kind);
  }
  if (!diagnosis.empty()) m << "    diagnosis: " << diagnosis << "\n";
  return m.str();
}

/// describe_mismatch() for any arithmetic types, under a Tolerance.
template <typename A, typename E>
std::string describe_mismatch(const std::string& what, const TensorShape& shape, const A* actual, const E* expected,
                              std::size_t count, Tolerance tol, const std::vector<KnownSlip>& slips = {},
                              const std::vector<std::string>& notes = {}, ValueKind kind = ValueKind::Amounts) {
  std::vector<double> got(count), want(count);
  for (std::size_t i = 0; i < count; ++i) got[i] = static_cast<double>(actual[i]), want[i] = static_cast<double>(expected[i]);
  return describe_mismatch(what, shape, got, want, entry_rule(tol), slips, notes, kind);
}

template <typename A, typename E>
std::string describe_mismatch(const std::string& what, const TensorShape& shape, const std::vector<A>& actual,
                              const std::vector<E>& expected, Tolerance tol, const std::vector<KnownSlip>& slips = {},
                              const std::vector<std::string>& notes = {}) {
  return describe_mismatch(what, shape, actual.data(), expected.data(), std::min(actual.size(), expected.size()), tol,
                           slips, notes);
}

/// `actual` and `expected` hold shape.count() values each (any arithmetic types).
template <typename A, typename E>
::testing::AssertionResult tensor_matches(const std::string& what, const TensorShape& shape, const A* actual,
                                          const E* expected, Tolerance tol, const std::vector<KnownSlip>& slips = {}) {
  const std::size_t n = shape.count();
  bool all = true;
  for (std::size_t i = 0; i < n && all; ++i) all = tol.accepts(static_cast<double>(actual[i]), static_cast<double>(expected[i]));
  if (all) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << describe_mismatch(what, shape, actual, expected, n, tol, slips);
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
  const std::size_t n = shape.count();
  bool all = true;
  for (std::size_t i = 0; i < n && all; ++i) all = static_cast<double>(actual[i]) == static_cast<double>(expected[i]);
  if (all) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << describe_mismatch(what, shape, actual, expected, n, kExact, slips, {},
                                                            ValueKind::Labels);
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
  if (const KnownSlip* slip = detail::matching_slip({got}, slips, [tol](double a, double e) { return tol.accepts(a, e); })) {
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

/// The shape of a model parameter with its axes named by rank: a bias [o], a dense weight [o, i],
/// a conv weight [co, ci, kh, kw] (the layouts of every stage); other ranks unnamed.
inline TensorShape parameter_shape(const std::vector<int>& sizes) {
  TensorShape s(sizes);
  if (sizes.size() == 1) s.names = {"o"};
  if (sizes.size() == 2) s.names = {"o", "i"};
  if (sizes.size() == 4) s.names = {"co", "ci", "kh", "kw"};
  return s;
}

/// Expects `actual` to be the parameters `expected` lists, in model order, bit for bit (compared as
/// values: -0 and 0 alike). A wrong tensor is named "<name> <when>" in the message, e.g.
/// "fc1.weight after 2 epochs with the graph (expected: the plain run's)".
inline void expect_same_parameters(const std::vector<NamedTensor>& actual, const std::vector<NamedTensor>& expected,
                                   const std::string& when) {
  ASSERT_EQ(actual.size(), expected.size()) << "parameter tensors " << when;
  for (std::size_t i = 0; i < expected.size(); ++i)
    EXPECT_TRUE(tensor_matches(expected[i].name + " " + when, parameter_shape(expected[i].tensor.shape),
                               actual[i].tensor.data, expected[i].tensor.data, kExact));
}

}  // namespace course::testkit
