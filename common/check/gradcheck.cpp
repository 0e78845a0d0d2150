#include "common/check/gradcheck.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <utility>

#include "common/check/mismatch.hpp"
#include "common/core/rng.hpp"

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
  std::string m = buf;
  if (failing > 0) {
    m += "; wrong at " + std::to_string(failing) + " of them: " + failing_where;
    m += failing < checked ? "; the other " + std::to_string(checked - failing) + " agree" : "";
  }
  if (!pattern.empty()) m += "; " + pattern;
  return m;
}

namespace {

/// What the wrong entries share, from (analytic, numeric) of each: the same ratio a/n at every one of them
/// (a scale factor: a mean not taken, or taken twice; -1: a sign), or an analytic 0 where the numeric is not
/// (a gradient never written). Empty when they share nothing this can name. `checked`: the entries compared.
std::string failure_pattern(const std::vector<std::pair<double, double>>& wrong, std::size_t checked) {
  if (wrong.size() < 2) return "";  // one entry shares nothing with another
  std::size_t only_numeric = 0, only_analytic = 0;  // one of the two is 0 (exactly: the loss does not move)
  for (const auto& [a, n] : wrong) {
    only_numeric += a == 0.0 && n != 0.0;
    only_analytic += n == 0.0 && a != 0.0;
  }
  if (only_numeric == wrong.size())
    return "the analytic gradient is 0 at each wrong entry: a gradient never written, or zeroed after";
  // Every entry one-sided, both ways and none right: the complement of the right support, an inverted mask,
  // which diagnose_mismatch names.
  if (only_numeric + only_analytic == checked && only_numeric >= 2 && only_analytic >= 2) return "";
  // Most wrong entries one-sided, both ways: gradient sent to the wrong entries (where several land on one
  // entry, that entry is wrong both ways, hence "most").
  if (only_numeric > 0 && only_analytic > 0 && 4 * (only_numeric + only_analytic) >= 3 * wrong.size()) {
    char buf[360];
    std::snprintf(buf, sizeof buf,
                  "at %zu of the wrong entries only the numeric gradient is non-zero, at %zu only the analytic one: "
                  "the gradient lands on entries that do not move the loss, and misses the ones that do (an index or "
                  "an offset is off)", only_numeric, only_analytic);
    return buf;
  }
  char buf[256];
  // The same difference a - n at every wrong entry: a term added (or left out) where it does not belong.
  const double diff = wrong[0].first - wrong[0].second;
  bool same_diff = diff != 0.0;
  for (const auto& [a, n] : wrong) same_diff = same_diff && std::fabs((a - n) - diff) <= 1e-6 * std::fabs(diff);
  if (same_diff) {
    const double k = std::round(1 / std::fabs(diff));
    std::string as_fraction;
    if (k >= 2 && std::fabs(1 / std::fabs(diff) - k) < 1e-4 * k)
      as_fraction = " = " + std::string(diff < 0 ? "-" : "") + "1/" + std::to_string(static_cast<long>(k));
    std::snprintf(buf, sizeof buf,
                  "analytic - numeric = %.6g%s at each wrong entry: the gradient there is off by one constant term, "
                  "left out or added (a label's? a bias's?)", diff, as_fraction.c_str());
    return buf;
  }
  double ratio = 0;
  for (const auto& [a, n] : wrong) {
    if (n == 0.0) return "";
    const double r = a / n;
    if (ratio == 0) ratio = r;
    if (!(std::fabs(r - ratio) <= 1e-4 * std::fabs(ratio))) return "";
  }
  if (std::fabs(ratio + 1) < 1e-4) return "analytic = -numeric at each wrong entry: the sign is flipped";
  const double k = std::round(ratio), inv = std::round(1 / ratio);
  if (std::fabs(ratio) > 1 && k >= 2 && std::fabs(ratio - k) < 1e-4 * k)
    std::snprintf(buf, sizeof buf,
                  "analytic = %.0f x numeric at each wrong entry: a factor of %.0f too much (a mean that does "
                  "not divide by its count, e.g. a batch of %.0f?)", k, k, k);
  else if (std::fabs(ratio) < 1 && inv >= 2 && std::fabs(1 / ratio - inv) < 1e-4 * inv)
    std::snprintf(buf, sizeof buf,
                  "analytic = numeric / %.0f at each wrong entry: divided by %.0f once too often (a mean taken "
                  "twice?)", inv, inv);
  else
    std::snprintf(buf, sizeof buf, "analytic = %.4g x numeric at each wrong entry: a constant factor is off", ratio);
  return buf;
}

}  // namespace

namespace {

GradCheckResult check(const std::string& tensor_name, double* param, const TensorShape& shape, const double* analytic,
                      const std::function<double()>& loss, const GradCheckOptions& options) {
  GradCheckResult r;
  r.tensor = tensor_name;
  r.tolerance = options.tolerance;
  r.total = shape.count();
  r.worst_rel_error = -1;
  std::vector<std::pair<double, double>> wrong;  // (analytic, numeric) of every entry over the tolerance
  std::vector<ExpectedEntry> numerics;            // every checked entry: what the analytic one should be
  constexpr std::size_t kShown = 4;              // wrong entries named in the message
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
    numerics.push_back({i, numeric});
    if (!(err <= options.tolerance)) {
      if (r.failing < kShown) r.failing_where += (r.failing ? ", " : "") + shape.where(i);
      ++r.failing;
      wrong.emplace_back(analytic[i], numeric);
    }
    if (err > r.worst_rel_error) {
      r.worst_rel_error = err;
      r.worst_index = i;
      r.analytic = analytic[i];
      r.numeric = numeric;
    }
  }
  if (r.checked == 0) r.worst_rel_error = 0;
  r.worst_where = shape.where(r.worst_index);
  if (r.failing > kShown) r.failing_where += " and " + std::to_string(r.failing - kShown) + " more";
  r.pattern = failure_pattern(wrong, r.checked);
  if (r.pattern.empty() && r.failing > 0) {  // a slip of layout or index: a transpose, a shift by one, a region
    const std::vector<double> all(analytic, analytic + r.total);
    const double tol = options.tolerance, tiny = options.tiny;
    r.pattern = diagnose_mismatch(shape, all, numerics,
                                  [tol, tiny](double a, double n) { return relative_error(a, n, tiny) <= tol; },
                                  MismatchWords{"analytic", "numeric"});
  }
  r.passed = r.checked > 0 && r.worst_rel_error <= options.tolerance;
  return r;
}

}  // namespace

GradCheckResult check_gradient(const std::string& tensor_name, double* param, const std::vector<int>& shape,
                               const double* analytic, const std::function<double()>& loss,
                               const GradCheckOptions& options) {
  return check(tensor_name, param, TensorShape(shape), analytic, loss, options);
}

GradCheckResult check_gradient(const std::string& tensor_name, double* param, const TensorShape& shape,
                               const double* analytic, const std::function<double()>& loss,
                               const GradCheckOptions& options) {
  return check(tensor_name + ", shape " + shape.str(), param, shape, analytic, loss, options);
}

}  // namespace course
