#include "common/gradcheck.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "common/rng.hpp"
#include "common/tensor.hpp"

namespace course {

double relative_error(double analytic, double numeric, double tiny) {
  const double diff = std::fabs(analytic - numeric);
  const double scale = std::max(std::fabs(analytic) + std::fabs(numeric), tiny);
  if (std::isnan(diff)) return INFINITY;  // NaN never passes
  return diff / scale;
}

std::vector<std::size_t> sample_indices(std::size_t n, int max_samples, std::uint64_t seed) {
  std::vector<std::size_t> out;
  if (n == 0) return out;
  if (max_samples <= 0 || n <= static_cast<std::size_t>(max_samples)) {
    for (std::size_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  std::set<std::size_t> picked{0, n - 1};
  Rng rng(seed, 77);
  while (picked.size() < static_cast<std::size_t>(max_samples)) picked.insert(rng.below(n));
  return {picked.begin(), picked.end()};
}

std::string index_to_string(std::size_t index, const std::vector<int>& shape) {
  if (shape.empty()) return "[" + std::to_string(index) + "]";
  std::vector<std::size_t> idx(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    const auto extent = static_cast<std::size_t>(std::max(shape[d], 1));
    idx[d] = index % extent;
    index /= extent;
  }
  std::string s = "[";
  for (std::size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}

std::string GradCheckResult::message() const {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%s: worst relative error %.2e at %s (analytic %.6g, numeric %.6g), tolerance %.0e, "
                "%zu of %zu entries checked",
                tensor.c_str(), worst_rel_error, worst_where.c_str(), analytic, numeric, tolerance, checked,
                total);
  return buf;
}

GradCheckResult check_gradient(const std::string& tensor_name, double* param, const std::vector<int>& shape,
                               const double* analytic, const std::function<double()>& loss,
                               const GradCheckOptions& options) {
  GradCheckResult r;
  r.tensor = tensor_name;
  r.tolerance = options.tolerance;
  r.total = TensorT<double>::count(shape);
  r.worst_rel_error = -1;
  for (std::size_t i : sample_indices(r.total, options.max_samples, options.seed)) {
    const double saved = param[i];
    param[i] = saved + options.eps;
    const double plus = loss();
    param[i] = saved - options.eps;
    const double minus = loss();
    param[i] = saved;
    const double numeric = (plus - minus) / (2 * options.eps);
    const double err = relative_error(analytic[i], numeric, options.tiny);
    ++r.checked;
    if (err > r.worst_rel_error) {
      r.worst_rel_error = err;
      r.worst_index = i;
      r.analytic = analytic[i];
      r.numeric = numeric;
    }
  }
  if (r.checked == 0) r.worst_rel_error = 0;
  r.worst_where = index_to_string(r.worst_index, shape);
  r.passed = r.checked > 0 && r.worst_rel_error <= options.tolerance;
  return r;
}

}  // namespace course
