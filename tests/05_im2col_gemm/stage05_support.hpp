// Helpers shared by the stage 05 tests, on top of stage 04's gpu_testkit.hpp: the
// GEMM/unroll variants every conv test runs, a conv context with its workspace,
// and a comparison that prints the tensor, the worst error and where it is.
//
// Tolerances are stated as |got - ref| <= atol + rtol * |ref| per element. The
// references are stage 02's CPU functions run in double on the same (float)
// inputs, so the bound covers only the GPU's float rounding: sums of up to a
// few hundred products of values in [-1, 1] carry errors of order 1e-6.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "../04_cuda_matmul/gpu_testkit.hpp"
#include "04_cuda_matmul/gemm.hpp"
#include "05_im2col_gemm/conv_gpu.hpp"
#include "05_im2col_gemm/split_k.hpp"
#include "common/cuda_check.hpp"
#include "common/rng.hpp"
#include "common/tensor.hpp"

namespace course::s05test {

/// Tolerance of the layer tests against stage 02 (conv forward and gradients).
constexpr double kLayerAtol = 1e-5;
constexpr double kLayerRtol = 1e-4;

/// n floats uniform in [lo, hi), drawn from (seed).
inline std::vector<float> random_floats(std::size_t n, std::uint64_t seed, double lo = -1.0, double hi = 1.0) {
  Rng rng(seed, 21);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng.uniform(lo, hi));
  return v;
}

inline std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// Device copies, poisoned outputs and host copies: stage 04's test kit (to_host waits for
// the GPU, so an error of an earlier launch throws in the test that caused it).
using gputest::poisoned;
using gputest::to_device;
using gputest::to_host;

/// "[1, 2, 0, 3]" for flat index i of a tensor of `shape`.
inline std::string index_string(std::size_t i, const std::vector<int>& shape) {
  std::vector<int> idx(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    idx[d] = static_cast<int>(i % static_cast<std::size_t>(shape[d]));
    i /= static_cast<std::size_t>(shape[d]);
  }
  return TensorT<int>::shape_to_string(idx);
}

/// Every element of got against ref: |got - ref| <= atol + rtol * |ref|, and no NaN.
/// On failure: the tensor, the worst element (by its excess over the bound), and the count.
template <typename G, typename R>
::testing::AssertionResult close(const std::string& what, const std::vector<G>& got, const std::vector<R>& ref,
                                 const std::vector<int>& shape, double atol, double rtol) {
  if (got.size() != ref.size())
    return ::testing::AssertionFailure() << what << ": " << got.size() << " values, expected " << ref.size();
  std::size_t bad = 0, worst = 0;
  double worst_ratio = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got[i]), r = static_cast<double>(ref[i]);
    const double bound = atol + rtol * std::fabs(r);
    const double err = std::fabs(g - r);
    const double ratio = std::isnan(err) ? INFINITY : (bound > 0 ? err / bound : (err > 0 ? INFINITY : 0.0));
    if (!(err <= bound)) ++bad;
    if (!(ratio <= worst_ratio)) worst_ratio = ratio, worst = i;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  std::ostringstream s;
  s.precision(9);
  s << what << ": " << bad << " of " << got.size() << " values outside atol " << atol << " + rtol " << rtol
    << " * |ref|; worst at " << index_string(worst, shape) << ": got " << static_cast<double>(got[worst])
    << ", expected " << static_cast<double>(ref[worst]) << " (error "
    << std::fabs(static_cast<double>(got[worst]) - static_cast<double>(ref[worst])) << ")";
  return ::testing::AssertionFailure() << s.str();
}

/// One way to run the conv GEMMs: the kernel and the unroll every conv test goes through.
struct ConvVariant {
  int gemm_kernel;
  Unroll unroll;
  std::string name() const { return gemm_kernel_name(gemm_kernel) + ", unroll " + unroll_name(unroll); }
};

/// The stage's own GEMM and cuBLAS, each with both unrolls.
inline std::vector<ConvVariant> conv_variants() {
  return {{kBestGemm, Unroll::Batch}, {kBestGemm, Unroll::Image}, {kGemmCublas, Unroll::Batch},
          {kGemmCublas, Unroll::Image}};
}

/// A ConvContext with its own workspace (and split-K streams, up to `split_k` chunks)
/// for batches of up to B on g. The workspace is poisoned, so a read of scratch
/// the code did not write first shows up as NaN.
struct ConvRig {
  std::unique_ptr<SplitKGemm> split_k;
  DeviceBuffer<float> workspace;
  ConvContext ctx;
  ConvRig(const ConvVariant& v, int B, const ConvGeometry& g, int split_k_max = kDefaultSplitK) {
    ctx.gemm_kernel = v.gemm_kernel;
    ctx.unroll = v.unroll;
    if (split_k_max > 1) {
      split_k = std::make_unique<SplitKGemm>(split_k_max);
      ctx.split_k = split_k.get();
    }
    workspace = poisoned<float>(conv_workspace_floats(ctx, B, g));
    ctx.workspace = workspace.get();
    ctx.workspace_floats = workspace.size();
  }
};

}  // namespace course::s05test
