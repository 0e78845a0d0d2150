/// @file mismatch.hpp
/// @brief What a wrong tensor's entries have in common: the slip that explains them.
///
/// A test that finds a tensor wrong knows more than "wrong at [3, 17]": it can try the
/// slips learners make and say which one explains every entry it compared. Each
/// hypothesis below maps an expected entry to the value the tensor would hold under that
/// slip, and holds only when it explains *every* compared entry (a slip that explains
/// half of them is not named):
///
///  - a transpose: the values are right but laid out with two axes swapped
///    (dW written [IN, OUT] where it is [OUT, IN]);
///  - a sign flipped, or a constant factor (a mean not divided by its count);
///  - a constant added or left out, or a term that depends on one axis only (a bias), or the
///    sum of a term of one axis and one of another (a bias read with the wrong index);
///  - a shift by one along an axis (an index off by one: the value of x+1 stored at x), by one or two
///    along both axes of a plane at once (an input index off by one in h and w, the padding), or by
///    two along one axis; the values a shift moves off the edge say nothing, the others must agree;
///  - an inverted mask: zero exactly where the tensor should not be, non-zero exactly where it should
///    (a ReLU gradient passed where x < 0, not x > 0);
///  - entries never written (one value everywhere the tensor is wrong: a fill, 0, NaN);
///  - wrong only past an index, or only at the edges, along an axis (a loop bound,
///    padding).
///
/// The gradient checker (gradcheck.hpp) asks it about the sampled entries of a gradient,
/// the GoogleTest glue in tests/support/tensor_check.hpp about every entry of an output.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace course {

/// A tensor's shape with a name per axis, e.g. {{"n", 64}, {"o", 10}}; names may be left
/// empty ("axis 0", "axis 1", ... are used).
struct TensorShape {
  std::vector<int> sizes;
  std::vector<std::string> names;

  TensorShape() = default;
  TensorShape(std::vector<int> s) : sizes(std::move(s)) {}  // NOLINT: a plain shape converts
  TensorShape(std::initializer_list<std::pair<const char*, int>> axes);

  std::size_t count() const;
  std::size_t rank() const { return sizes.size(); }
  std::string axis_name(std::size_t d) const;
  /// "[n=64, o=10]", or "[64, 10]" without names.
  std::string str() const;
  /// "[3, 7]" for a flat row-major index.
  std::string where(std::size_t flat) const;
  /// Row-major stride of axis d.
  std::size_t stride(std::size_t d) const;
  /// The coordinate of flat index `flat` along axis d.
  int coordinate(std::size_t flat, std::size_t d) const;
};

/// One compared entry: its flat index and the value it should hold.
struct ExpectedEntry {
  std::size_t index;
  double value;
};

/// Which actual values count as equal to an expected one (the test's tolerance).
using CloseEnough = std::function<bool(double actual, double expected)>;

/// What the message calls the two tensors ("analytic" and "numeric" in a gradient check).
struct MismatchWords {
  std::string actual = "actual";
  std::string expected = "expected";
};

/// What a tensor's entries are: amounts, which a sign, a factor or an added term can be wrong
/// by; or labels (class indices, the index of a cell), where only which entries are wrong and
/// where they lie mean anything ("actual = expected - 3" of a class index is no diagnosis).
enum class ValueKind { Amounts, Labels };

/// The slip that explains every entry of `expected` (all of them, or a sample), given the
/// tensor's whole contents `actual` (actual.size() == shape.count()), or "" when none of
/// the hypotheses explains them all. Call it only for a tensor found wrong.
std::string diagnose_mismatch(const TensorShape& shape, const std::vector<double>& actual,
                              const std::vector<ExpectedEntry>& expected, const CloseEnough& close,
                              const MismatchWords& words = {}, ValueKind kind = ValueKind::Amounts);

/// A factor written as a learner would recognise it: "4", "1/4", "-1", "0.37".
std::string factor_string(double k);

}  // namespace course
