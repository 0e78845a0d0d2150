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
#include "common/gpu/cuda_check.hpp"
#include "common/core/rng.hpp"
#include "common/core/tensor.hpp"
#include "conv_shapes.hpp"
#include "tensor_check.hpp"

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

/// Every element of got against ref: |got - ref| <= atol + rtol * |ref|, and no NaN.
/// On failure, tensor_matches()'s message (tests/support/tensor_check.hpp): the tensor and
/// its shape, expected and actual at the first wrong elements and at the worst, and the slip
/// that explains them where one does (a transpose, a sign, a factor, a term, an index off by
/// one, elements never written, where the wrong ones lie). Name the axes where the caller
/// knows them ({{"n", B}, {"c", C}, {"h", H}, {"w", W}}); `slips` are mistakes the test knows
/// and computes (the values each would give).
template <typename G, typename R>
::testing::AssertionResult close(const std::string& what, const std::vector<G>& got, const std::vector<R>& ref,
                                 const TensorShape& shape, double atol, double rtol,
                                 const std::vector<testkit::KnownSlip>& slips = {}) {
  if (got.size() != ref.size())
    return ::testing::AssertionFailure() << what << ": " << got.size() << " values, expected " << ref.size()
                                         << " (shape " << shape.str() << ")";
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got[i]), r = static_cast<double>(ref[i]);
    if (!(std::fabs(g - r) <= atol + rtol * std::fabs(r)))
      return ::testing::AssertionFailure()
             << testkit::describe_mismatch(what, shape, got, ref, testkit::Tolerance{atol, rtol}, slips);
  }
  return ::testing::AssertionSuccess();
}

/// The same with the axes unnamed.
template <typename G, typename R>
::testing::AssertionResult close(const std::string& what, const std::vector<G>& got, const std::vector<R>& ref,
                                 const std::vector<int>& shape, double atol, double rtol) {
  return close(what, got, ref, TensorShape(shape), atol, rtol);
}

// Shapes of a conv layer's tensors, their axes named (tests/support/conv_shapes.hpp).
using testkit::bias_shape;
using testkit::input_shape;
using testkit::output_shape;
using testkit::weight_shape;

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
