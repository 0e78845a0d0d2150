// Helpers shared by the stage 04 tests: random inputs, the device helpers of
// tests/support/gpu_buffers.hpp (skipping without a GPU, device copies, poisoned
// outputs), and a comparison that reports the worst element against atol + rtol * |ref|.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "common/gpu/cuda_check.hpp"
#include "common/check/gradcheck.hpp"
#include "common/core/rng.hpp"
#include "gpu_buffers.hpp"
#include "tensor_check.hpp"

namespace course::gputest {

/// n floats uniform in [lo, hi).
inline std::vector<float> random_floats(std::size_t n, std::uint64_t seed, double lo = -1.0, double hi = 1.0) {
  Rng rng(seed, 9);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(rng.uniform(lo, hi));
  return v;
}

/// n floats uniform in [lo, hi) with |x| >= gap (away from the kinks of ReLU and leaky ReLU).
inline std::vector<float> random_away_from_zero(std::size_t n, std::uint64_t seed, double lo, double hi,
                                                double gap = 0.05) {
  std::vector<float> v = random_floats(n, seed, lo, hi);
  for (auto& x : v)
    if (std::fabs(x) < gap) x = static_cast<float>(x < 0 ? x - gap : x + gap);
  return v;
}

/// How far `got` is from `ref`: the relative error of the whole tensor and the worst element.
struct Comparison {
  double rel_norm_error = 0;  ///< ||got - ref|| / ||ref||
  double worst_ratio = 0;     ///< max |got - ref| / (atol + rtol |ref|): 1 is the limit
  std::size_t worst = 0;      ///< flat index of that element
  double got_value = 0, ref_value = 0;
  bool finite = true;  ///< false when got holds NaN or Inf where ref does not
  std::size_t size_mismatch = 0;
};

inline Comparison compare(const std::vector<float>& got, const std::vector<float>& ref, double atol, double rtol) {
  Comparison c;
  if (got.size() != ref.size()) {
    c.size_mismatch = got.size() + 1;
    c.finite = false;
    return c;
  }
  double diff2 = 0, ref2 = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], r = ref[i];
    const double d = std::fabs(g - r);
    if (!std::isfinite(g) && std::isfinite(r)) c.finite = false;
    diff2 += d * d;
    ref2 += r * r;
    const double ratio = std::isfinite(d) ? d / (atol + rtol * std::fabs(r)) : INFINITY;
    if (!(ratio <= c.worst_ratio)) {  // also catches NaN
      c.worst_ratio = std::isnan(ratio) ? INFINITY : ratio;
      c.worst = i;
      c.got_value = g;
      c.ref_value = r;
    }
  }
  c.rel_norm_error = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  if (!std::isfinite(c.rel_norm_error)) c.finite = false;
  return c;
}

/// Passes when ||got - ref|| / ||ref|| <= max_rel_norm and every element is
/// within atol + rtol * |ref|; otherwise says what tensor_matches() says
/// (tests/support/tensor_check.hpp): the tensor and its shape, expected and actual
/// at the first wrong elements and at the worst, the relative error in norm where
/// that is what failed, and the slip that explains them (a transpose, a sign, a
/// factor, a term, an index off by one, elements never written) where one does.
/// Give the axes names where the caller knows them: {{"m", M}, {"n", N}}.
inline ::testing::AssertionResult close_enough(const std::string& what, const std::vector<float>& got,
                                               const std::vector<float>& ref, const TensorShape& shape, double atol,
                                               double rtol, double max_rel_norm,
                                               const std::vector<testkit::KnownSlip>& slips = {}) {
  const Comparison c = compare(got, ref, atol, rtol);
  if (c.size_mismatch)
    return ::testing::AssertionFailure() << what << ": " << got.size() << " values, expected " << ref.size()
                                         << " (shape " << shape.str() << ")";
  if (c.finite && c.worst_ratio <= 1.0 && c.rel_norm_error <= max_rel_norm) return ::testing::AssertionSuccess();
  std::vector<std::string> notes;
  if (!(c.rel_norm_error <= max_rel_norm)) {
    std::ostringstream s;
    s << "the whole tensor: ||actual - expected|| / ||expected|| = " << c.rel_norm_error << ", limit " << max_rel_norm;
    if (c.finite && c.worst_ratio <= 1.0)
      s << " (every element is within its own bound, yet together they are off: a rounding error larger than "
           "FP32's at many elements, a lower precision or a worse summation order?)";
    notes.push_back(s.str());
  }
  return ::testing::AssertionFailure() << testkit::describe_mismatch(what, shape, got, ref,
                                                                     testkit::Tolerance{atol, rtol}, slips, notes);
}

/// The same with the axes unnamed: {s.M, s.N}.
inline ::testing::AssertionResult close_enough(const std::string& what, const std::vector<float>& got,
                                               const std::vector<float>& ref, const std::vector<int>& shape,
                                               double atol, double rtol, double max_rel_norm) {
  return close_enough(what, got, ref, TensorShape(shape), atol, rtol, max_rel_norm);
}

/// Tolerance of an FP32 sum of K products of values in [-1, 1], two summation orders
/// apart: sequential summation errs by about u K / 4 (u = 6e-8, unit roundoff),
/// and 2e-7 K is ~14 times that. rtol 1e-4 covers the large elements.
inline double sum_atol(int K) { return 1e-6 + 2e-7 * K; }
constexpr double kSumRtol = 1e-4;
/// Relative error of the whole result: float32 arithmetic lands near 1e-6 for K ~ 1000.
constexpr double kSumRelNorm = 1e-5;

}  // namespace course::gputest
