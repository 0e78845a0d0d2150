/// @file gradcheck.hpp
/// @brief The gradient checker: analytic gradients against central differences in double precision.
///
/// For a scalar loss L(p) and a sampled entry p_i, the numeric derivative is
///
///     n_i = (L(p + eps e_i) - L(p - eps e_i)) / (2 eps)
///
/// and the relative error against the analytic a_i is
///
///     |a_i - n_i| / max(|a_i| + |n_i|, tiny).
///
/// `tiny` keeps entries whose true gradient is zero (a masked ReLU, a max-pool
/// cell that was not the arg-max) from dividing rounding noise by zero.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/check/mismatch.hpp"

namespace course {

/// How hard to look.
struct GradCheckOptions {
  double eps = 1e-5;        ///< finite-difference step
  double tolerance = 1e-6;  ///< largest relative error that passes
  double tiny = 1e-6;       ///< floor of the denominator
  int max_samples = 64;     ///< entries checked per tensor (all when the tensor is smaller)
  std::uint64_t seed = 7;   ///< which entries are sampled
};

/// The outcome for one tensor.
struct GradCheckResult {
  std::string tensor;          ///< e.g. "dW of fc1"
  bool passed = true;
  double worst_rel_error = 0;  ///< largest relative error seen
  std::size_t worst_index = 0; ///< flat index of that entry
  std::string worst_where;     ///< multi-index of that entry, e.g. "[3, 17]"
  double analytic = 0;         ///< analytic value at the worst entry
  double numeric = 0;          ///< numeric value at the worst entry
  std::size_t checked = 0;     ///< entries compared
  std::size_t total = 0;       ///< entries in the tensor
  double tolerance = 0;
  std::size_t failing = 0;     ///< checked entries over the tolerance
  std::string failing_where;   ///< the first of them, e.g. "[0, 3], [1, 6], [2, 0] and 2 more"
  std::string pattern;         ///< what every wrong entry shares, when they share it (a constant factor, a sign), else ""
  /// One line: "dW of fc1: worst relative error 3.1e-01 at [2, 5] (analytic ..., numeric ...), tolerance 1e-06,
  /// 64 of 1200 entries checked; wrong at 3 of them: [2, 5], [4, 1], [7, 0]; the other 61 agree"
  /// and, when the wrong entries share a pattern, what it is ("analytic = 4 x numeric at each: ...").
  std::string message() const;
};

/// |a - n| / max(|a| + |n|, tiny)
double relative_error(double analytic, double numeric, double tiny);

/// The entries to check: all of them when n <= max_samples, else the first, the
/// last and a seeded random sample (no repeats), sorted.
std::vector<std::size_t> sample_indices(std::size_t n, int max_samples, std::uint64_t seed);

/// "[i, j, k]" for flat index `index` of a row-major tensor of shape `shape`.
std::string index_to_string(std::size_t index, const std::vector<int>& shape);

/// Checks `analytic` (dL/dparam, same shape as param) at sampled entries.
///
/// `loss` must recompute L from the current contents of `param`; the checker
/// perturbs param[i] by +-eps, calls `loss`, and restores param[i] exactly.
GradCheckResult check_gradient(const std::string& tensor_name, double* param, const std::vector<int>& shape,
                               const double* analytic, const std::function<double()>& loss,
                               const GradCheckOptions& options = {});

/// The same, for a tensor whose axes have names, e.g. {{"o", OUT}, {"i", IN}}: the tensor is
/// called "<tensor_name>, shape [o=5, i=7]" and a diagnosis of layout or index speaks of its
/// axes by name ("laid out with o and i swapped") rather than as "axis 0" and "axis 1".
GradCheckResult check_gradient(const std::string& tensor_name, double* param, const TensorShape& shape,
                               const double* analytic, const std::function<double()>& loss,
                               const GradCheckOptions& options = {});

}  // namespace course
