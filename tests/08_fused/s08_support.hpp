// Helpers shared by the stage 08 tests: the CPU reference of a fused conv block
// (stages 01 and 02's layers in double, one after another), device buffers, and
// the sums the update would make of the kernels' partial sums.
//
// Tolerances, per element, |got - ref| <= atol + rtol |ref| (gputest::sum_atol
// and kSumRtol, tests/04_cuda_matmul/gpu_testkit.hpp): the references are
// stages 01 and 02's functions in double on the same float inputs, so the bound
// covers the GPU's float rounding of a sum of n products of values in [-1, 1]:
// atol = 1e-6 + 2e-7 n (about 14 times the expected error of a float sum of n
// terms, which grows like u n / 4 with u = 6e-8), rtol = 1e-4. n is what each
// output sums: C K^2 (+ 1 for the bias) for the conv forward, F K^2 for its
// input gradient, B Hq Wq (one term per pool window) for its weight and bias
// gradients, IN for a dense forward, B for a dense weight gradient, OUT for a
// dense input gradient. A wrong index or a missing term moves an output by
// about the size of one product: far outside.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "../04_cuda_matmul/gpu_testkit.hpp"
#include "01_fc_softmax/activations.hpp"
#include "02_conv_pool/conv.hpp"
#include "02_conv_pool/pool.hpp"
#include "08_fused/fused_kernels.hpp"
#include "08_fused/fused_plan.hpp"
#include "common/gpu/cuda_check.hpp"

namespace course::s08test {

using gputest::kSumRtol;
using gputest::poisoned;
using gputest::sum_atol;
using gputest::to_host;

/// Blocks a kernel aims for in the tests: about an H100's 132 multiprocessors, twice.
constexpr int kTargetBlocks = 264;

/// stage 01's Activation of a FusedAct other than None.
inline Activation activation_of(FusedAct a) {
  switch (a) {
    case FusedAct::LeakyReLU: return Activation::LeakyReLU;
    case FusedAct::Sigmoid: return Activation::Sigmoid;
    case FusedAct::Tanh: return Activation::Tanh;
    case FusedAct::Softplus: return Activation::Softplus;
    default: return Activation::ReLU;
  }
}

inline std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }
inline std::vector<float> to_float(const std::vector<double>& v) { return {v.begin(), v.end()}; }

/// The sum over s of partials[s][j], in double: what the update makes of `slices` partial sums.
inline std::vector<float> sum_slices(const std::vector<float>& partials, int slices, std::size_t count) {
  std::vector<double> sum(count, 0.0);
  for (int s = 0; s < slices; ++s)
    for (std::size_t j = 0; j < count; ++j) sum[j] += partials[static_cast<std::size_t>(s) * count + j];
  return to_float(sum);
}

/// One fused dense layer test case (tasks 8.4 and 8.5): x [B, IN] -> y [B, OUT], then `act`;
/// `dx`: whether backward computes the input gradient too (the first layer's needs none).
struct DenseCase {
  int B, IN, OUT;
  FusedAct act;
  bool dx = true;
  std::string describe() const {
    return "batch " + std::to_string(B) + ", " + std::to_string(IN) + " -> " + std::to_string(OUT) + " + " +
           fused_act_name(act) + (dx ? "" : ", no dx");
  }
};

/// One fused conv block test case.
struct ConvBlockCase {
  int B;
  int C, H, W, F, K, P, Q;
  FusedAct act;
  ConvBlockShape shape() const { return make_conv_block_shape(C, H, W, F, K, P, Q, act); }
  std::string describe() const { return "batch " + std::to_string(B) + ", " + course::describe(shape()); }
};

/// The shapes every conv block test runs: the conv layers of `cnn` and `cnn-deep`,
/// channels from 1 to 64, sizes from 5 to 32 (odd ones too, whose last conv row and
/// column the pool drops), kernels 1, 3 and 5, padding up to 2, every activation, no
/// pool, batches 1 to 64.
inline std::vector<ConvBlockCase> conv_block_cases() {
  //       B   C   H   W   F  K  P  Q  act
  return {{64, 1, 28, 28, 16, 3, 1, 2, FusedAct::ReLU},       // conv1 of cnn
          {64, 16, 14, 14, 32, 3, 1, 2, FusedAct::ReLU},      // conv2 of cnn
          {64, 32, 7, 7, 32, 3, 1, 2, FusedAct::ReLU},        // conv3 of cnn-deep: 7 -> 3
          {64, 3, 32, 32, 16, 3, 1, 2, FusedAct::ReLU},       // conv1 of cnn-deep on CIFAR-10's 3x32x32
          {64, 64, 8, 8, 64, 3, 1, 2, FusedAct::ReLU},        // 64 channels and filters
          {1, 64, 32, 32, 8, 3, 1, 2, FusedAct::ReLU},        // 64 channels of 32x32, batch 1
          {2, 5, 13, 11, 7, 5, 2, 2, FusedAct::Tanh},         // 5x5 on odd sizes
          {3, 4, 9, 9, 6, 1, 0, 2, FusedAct::LeakyReLU},      // 1x1 on an odd size
          {4, 3, 10, 7, 5, 3, 1, 1, FusedAct::Sigmoid},       // no pool
          {2, 2, 6, 5, 3, 3, 2, 2, FusedAct::ReLU},           // padding 2: the conv output outgrows the input
          {5, 6, 5, 5, 20, 5, 0, 1, FusedAct::Softplus},      // the smallest size: one output per plane
          {1, 17, 15, 17, 33, 3, 1, 2, FusedAct::None}};      // no activation; 33 filters, 17 channels: partial groups
}

/// The same paths on small batches, for the compute-sanitizer runs (racecheck and
/// synccheck slow a kernel down by a hundred times and more): every kernel size, pool,
/// activation and partial group of the grid, at batches of 1 to 4.
inline std::vector<ConvBlockCase> conv_block_small_cases() {
  //      B   C   H   W   F  K  P  Q  act
  return {{2, 1, 12, 12, 16, 3, 1, 2, FusedAct::ReLU},
          {2, 16, 14, 14, 32, 3, 1, 2, FusedAct::ReLU},
          {2, 5, 13, 11, 7, 5, 2, 2, FusedAct::Tanh},
          {3, 4, 9, 9, 6, 1, 0, 2, FusedAct::LeakyReLU},
          {4, 3, 10, 7, 5, 3, 1, 1, FusedAct::Sigmoid},
          {2, 2, 6, 5, 3, 3, 2, 2, FusedAct::ReLU},
          {1, 17, 7, 9, 33, 3, 1, 2, FusedAct::None},
          {3, 6, 5, 5, 20, 5, 0, 1, FusedAct::Softplus}};
}

/// Random inputs of a conv block case, uniform in [-1, 1]: x, W, b, and dy = dL/dy.
struct ConvBlockInputs {
  std::vector<float> x, w, b, dy;
  ConvBlockInputs(const ConvBlockCase& c, std::uint64_t seed) {
    const ConvBlockShape s = c.shape();
    x = gputest::random_floats(static_cast<std::size_t>(c.B) * s.C * s.H * s.W, seed);
    w = gputest::random_floats(static_cast<std::size_t>(s.F) * s.C * s.K * s.K, seed + 1);
    b = gputest::random_floats(static_cast<std::size_t>(s.F), seed + 2);
    dy = gputest::random_floats(static_cast<std::size_t>(c.B) * s.F * s.Hq * s.Wq, seed + 3);
  }
};

/// Stages 01 and 02's layers, in double, on a conv block case: the conv, the
/// activation, the pool, forward and backward.
struct ConvBlockReference {
  std::vector<double> z, a, y;         ///< conv output, activation, block output
  std::vector<int> argmax;             ///< stage 02's: the cell's index in the Ho x Wo plane
  std::vector<unsigned char> window;   ///< the same as the fused kernels store it: dh Q + dw
  std::vector<double> gap;             ///< per output: its window's largest minus its second largest (inf for Q = 1)
  std::vector<double> dw, db, dx;      ///< the gradients, for dL/dy = dy

  ConvBlockReference(const ConvBlockCase& c, const ConvBlockInputs& in, bool backward) {
    const ConvBlockShape s = c.shape();
    const ConvGeometry g{s.C, s.H, s.W, s.F, s.K, s.P, 1};
    const std::size_t conv_out = static_cast<std::size_t>(c.B) * s.F * s.Ho * s.Wo;
    const std::size_t out = static_cast<std::size_t>(c.B) * s.F * s.Hq * s.Wq;
    z.resize(conv_out);
    conv2d_forward(to_double(in.x).data(), to_double(in.w).data(), to_double(in.b).data(), z.data(), c.B, g);
    a = z;
    if (s.act != FusedAct::None) activation_forward(activation_of(s.act), z.data(), a.data(), static_cast<long>(z.size()));
    const PoolGeometry pg{s.F, s.Ho, s.Wo, s.Q, s.Q, 0};
    y.resize(out);
    argmax.resize(out);
    maxpool_forward(a.data(), y.data(), argmax.data(), c.B, pg);
    window.resize(out);
    gap.assign(out, INFINITY);
    for (std::size_t o = 0; o < out; ++o) {
      const int qw = static_cast<int>(o % s.Wq), qh = static_cast<int>(o / s.Wq % s.Hq);
      const long plane = static_cast<long>(o / (static_cast<std::size_t>(s.Hq) * s.Wq));
      const int ih = argmax[o] / s.Wo, iw = argmax[o] % s.Wo;
      window[o] = static_cast<unsigned char>((ih - qh * s.Q) * s.Q + (iw - qw * s.Q));
      for (int dh = 0; dh < s.Q; ++dh)
        for (int dw = 0; dw < s.Q; ++dw) {
          const int cell = (qh * s.Q + dh) * s.Wo + qw * s.Q + dw;
          if (cell != argmax[o]) gap[o] = std::min(gap[o], y[o] - a[static_cast<std::size_t>(plane) * s.Ho * s.Wo + cell]);
        }
    }
    if (!backward) return;
    std::vector<double> dyd = to_double(in.dy), da(conv_out), dz(conv_out);
    maxpool_backward(dyd.data(), argmax.data(), da.data(), c.B, pg);
    dz = da;
    if (s.act != FusedAct::None)
      activation_backward(activation_of(s.act), z.data(), a.data(), da.data(), dz.data(), static_cast<long>(dz.size()));
    dw.resize(static_cast<std::size_t>(s.F) * s.C * s.K * s.K);
    db.resize(static_cast<std::size_t>(s.F));
    dx.resize(static_cast<std::size_t>(c.B) * s.C * s.H * s.W);
    conv2d_backward_weight(to_double(in.x).data(), dz.data(), dw.data(), db.data(), c.B, g);
    conv2d_backward_input(dz.data(), to_double(in.w).data(), dx.data(), c.B, g);
  }
};

/// Why stage 08 does not fuse `spec` on examples of `input` (plan_fused_layers's message), or "" when it fuses it.
inline std::string fusion_refusal(const std::string& spec, Shape3 input) {
  try {
    plan_fused_layers(parse_arch(spec), input, 10);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

/// Passes when got is within atol + rtol |ref| of ref everywhere (stage 04's check, whose
/// message is tensor_matches()'s: the named shape, expected and actual at the first wrong
/// elements and the worst, and the slip that explains them where one does). Name the axes:
/// {{"n", B}, {"c", F}, {"h", Hq}, {"w", Wq}}.
inline ::testing::AssertionResult close(const std::string& what, const std::vector<float>& got,
                                        const std::vector<double>& ref, const TensorShape& shape, double atol,
                                        double rtol = kSumRtol, const std::vector<testkit::KnownSlip>& slips = {}) {
  return gputest::close_enough(what, got, to_float(ref), shape, atol, rtol, 1.0, slips);
}

/// close(), and on a mismatch the same comparison again with the slips `slips_of()` computes (only
/// then: a slip's values may cost a reference of their own), so that the message names the mistake.
template <typename Slips>
::testing::AssertionResult close_or_diagnosed(const std::string& what, const std::vector<float>& got,
                                              const std::vector<double>& ref, const TensorShape& shape, double atol,
                                              Slips&& slips_of) {
  ::testing::AssertionResult ok = close(what, got, ref, shape, atol);
  if (ok) return ok;
  return close(what, got, ref, shape, atol, kSumRtol, slips_of());
}

}  // namespace course::s08test

/// The three shape-grid tests of a conv block kernel that takes a target block count (tasks 8.1
/// and 8.3): check(case, target_blocks) on every shape of conv_block_cases() at kTargetBlocks and at
/// 1 (many examples per block), and on conv_block_small_cases() with both, for the sanitizer runs.
#define S08_CONV_BLOCK_GRID_TESTS(Suite, check)                                                         \
  TEST(Suite, MatchesStage02OverTheShapeGrid) {                                                         \
    SKIP_WITHOUT_GPU();                                                                                 \
    for (const ::course::s08test::ConvBlockCase& c : ::course::s08test::conv_block_cases())             \
      check(c, ::course::s08test::kTargetBlocks);                                                       \
  }                                                                                                     \
  TEST(Suite, MatchesStage02WithManyExamplesPerBlock) {                                                 \
    SKIP_WITHOUT_GPU();                                                                                 \
    for (const ::course::s08test::ConvBlockCase& c : ::course::s08test::conv_block_cases()) check(c, 1); \
  }                                                                                                     \
  TEST(Suite, MatchesStage02OnSmallShapes) {                                                            \
    SKIP_WITHOUT_GPU();                                                                                 \
    for (const ::course::s08test::ConvBlockCase& c : ::course::s08test::conv_block_small_cases())       \
      for (int target : {::course::s08test::kTargetBlocks, 1}) check(c, target);                        \
  }
