// Task 6.3: the algorithms chosen by measurement run, deterministically, in the
// workspace they asked for; one workspace serves every layer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "../02_conv_pool/conv_cases.hpp"
#include "06_cudnn/conv_algorithms.hpp"
#include "course_test.hpp"
#include "s06_support.hpp"

using namespace course;
using namespace course::s06test;
using reference::ConvCase;

namespace {

// Runs the three chosen algorithms with plain cuDNN calls (not Tasks 6.4 and
// 6.5) in a workspace of exactly a.workspace_bytes(), twice; returns y, dx and dW of both runs.
struct Outputs {
  std::vector<double> y, dx, dW;
};
Outputs run_chosen(const TestGpu& gpu, const ConvDescriptors& d, const ConvAlgorithms& a, const ConvCase& c) {
  const ConvGeometry& g = c.g;
  const auto x = to_device(testkit::random_vector(c.B * g.in_size(), 1)), W = to_device(testkit::random_vector(g.weight_size(), 2)),
             dy = to_device(testkit::random_vector(c.B * g.out_size(), 3));
  auto y = filled(c.B * g.out_size(), -7.f), dx = filled(c.B * g.in_size(), -7.f), dW = filled(g.weight_size(), -7.f);
  DeviceBuffer<unsigned char> ws(std::max<std::size_t>(a.workspace_bytes(), 1));
  const float one = 1.f, zero = 0.f;
  CUDNN_CHECK(cudnnConvolutionForward(gpu.h().cudnn, &one, d.x, x.get(), d.w, W.get(), d.conv, a.forward, ws.get(),
                                      a.workspace_bytes(), &zero, d.y, y.get()));
  CUDNN_CHECK(cudnnConvolutionBackwardData(gpu.h().cudnn, &one, d.w, W.get(), d.y, dy.get(), d.conv, a.backward_data,
                                           ws.get(), a.workspace_bytes(), &zero, d.x, dx.get()));
  CUDNN_CHECK(cudnnConvolutionBackwardFilter(gpu.h().cudnn, &one, d.x, x.get(), d.y, dy.get(), d.conv,
                                             a.backward_filter, ws.get(), a.workspace_bytes(), &zero, d.w, dW.get()));
  return {to_host(y), to_host(dx), to_host(dW)};
}

}  // namespace

TEST(Task6_3_Algorithms, ChosenAlgorithmsRunDeterministicallyInTheirWorkspace) {
  S06_SKIP_WITHOUT_GPU();
  TestGpu gpu;
  const ConvCase cases[] = {{64, ConvGeometry{1, 28, 28, 16, 3, 1, 1}}, {64, ConvGeometry{16, 14, 14, 32, 3, 1, 1}},
                            reference::kK5Pad2Stride2, reference::kK3Pad0Stride3, reference::kK1Stride2};
  for (const ConvCase& c : cases) {
    const std::string what = reference::describe(c);
    ConvDescriptors d;
    test_conv_descriptors(d, c.g, c.B);
    const ConvAlgorithms a = choose_conv_algorithms(gpu.h(), d);
    // What each algorithm needs, as cuDNN states it, fits in what was recorded.
    EXPECT_GE(a.forward_bytes, workspace_of(gpu.h(), d, a.forward)) << what << ", forward " << algorithm_name(a.forward);
    EXPECT_GE(a.backward_data_bytes, workspace_of(gpu.h(), d, a.backward_data))
        << what << ", backward-data " << algorithm_name(a.backward_data);
    EXPECT_GE(a.backward_filter_bytes, workspace_of(gpu.h(), d, a.backward_filter))
        << what << ", backward-filter " << algorithm_name(a.backward_filter);
    EXPECT_GE(a.forward_ms, 0.f) << what << ": the measured time is recorded";
    cudnnMathType_t math{};
    CUDNN_CHECK(cudnnGetConvolutionMathType(d.conv, &math));
    EXPECT_EQ(math, CUDNN_FMA_MATH) << what << ": the descriptor must carry the chosen results' math type";
    // Algorithms 0 of backward data and filter add with atomics: never chosen.
    EXPECT_NE(a.backward_data, CUDNN_CONVOLUTION_BWD_DATA_ALGO_0) << what << ": a non-deterministic algorithm";
    EXPECT_NE(a.backward_filter, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0) << what << ": a non-deterministic algorithm";
    EXPECT_NE(a.backward_filter, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3) << what << ": a non-deterministic algorithm";
    // They run in exactly that much workspace, and twice give the same bits.
    // Twice the same bits (as values: -0 and 0 alike): the second run against the first.
    const Outputs first = run_chosen(gpu, d, a, c), second = run_chosen(gpu, d, a, c);
    const testkit::Tolerance same{0, 0};
    EXPECT_TRUE(testkit::tensor_matches(
        what + ": y of forward " + algorithm_name(a.forward) + ", run 2 (expected: run 1; not deterministic?)",
        output_shape(c.B, c.g), second.y, first.y, same));
    EXPECT_TRUE(testkit::tensor_matches(what + ": dx of backward-data " + algorithm_name(a.backward_data) +
                                            ", run 2 (expected: run 1; not deterministic?)",
                                        input_shape(c.B, c.g), second.dx, first.dx, same));
    EXPECT_TRUE(testkit::tensor_matches(what + ": dW of backward-filter " + algorithm_name(a.backward_filter) +
                                            ", run 2 (expected: run 1; not deterministic?)",
                                        weight_shape(c.g), second.dW, first.dW, same));
  }
}

// The layers run one after another on one stream, so one buffer of the largest need serves all.
TEST(Task6_3_Algorithms, OneWorkspaceOfTheLargestNeed) {
  ConvAlgorithms a, b, c;
  a.forward_bytes = 100;
  a.backward_data_bytes = 40;
  b.backward_filter_bytes = 300;
  b.forward_bytes = 20;
  EXPECT_EQ(shared_workspace_bytes({a, b, c}), 300u);
  EXPECT_EQ(shared_workspace_bytes({c, a}), 100u);
  EXPECT_EQ(shared_workspace_bytes({c}), 0u) << "algorithms that need no workspace need no buffer";
  EXPECT_EQ(shared_workspace_bytes({}), 0u);
}

// The three rules of --conv-algos on conv2 of `cnn`: `direct` keeps to direct sums,
// `deterministic` (the default) and `fastest` choose from more. Every choice runs
// in the workspace it asked for and agrees with the direct algorithms to within a
// transform's rounding.
TEST(Task6_3_Algorithms, EachRuleChoosesWithinItsLimitsAndStillComputesTheConvolution) {
  S06_SKIP_WITHOUT_GPU();
  TestGpu gpu;
  const ConvCase c{64, ConvGeometry{16, 14, 14, 32, 3, 1, 1}};
  ConvDescriptors direct_d;
  test_conv_descriptors(direct_d, c.g, c.B);
  const ConvAlgorithms direct = choose_conv_algorithms(gpu.h(), direct_d, AlgoRule::Direct);
  EXPECT_TRUE(rounds_like_direct(direct.forward)) << algorithm_name(direct.forward);
  EXPECT_TRUE(rounds_like_direct(direct.backward_data)) << algorithm_name(direct.backward_data);
  EXPECT_TRUE(rounds_like_direct(direct.backward_filter)) << algorithm_name(direct.backward_filter);
  EXPECT_NE(direct.backward_data, CUDNN_CONVOLUTION_BWD_DATA_ALGO_0) << "a non-deterministic algorithm";
  EXPECT_NE(direct.backward_filter, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0) << "a non-deterministic algorithm";
  EXPECT_NE(direct.backward_filter, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3) << "a non-deterministic algorithm";
  const Outputs want = run_chosen(gpu, direct_d, direct, c);
  for (AlgoRule rule : {AlgoRule::Deterministic, AlgoRule::Fastest}) {
    ConvDescriptors d;
    test_conv_descriptors(d, c.g, c.B);
    const ConvAlgorithms a = choose_conv_algorithms(gpu.h(), d, rule);
    const std::string what = std::string("--conv-algos ") + algo_rule_name(rule);
    cudnnMathType_t math{};
    CUDNN_CHECK(cudnnGetConvolutionMathType(d.conv, &math));
    EXPECT_EQ(math, CUDNN_FMA_MATH) << what << " still keeps to FP32 FMA math";
    const Outputs got = run_chosen(gpu, d, a, c);
    auto near = [&](const std::vector<double>& x, const std::vector<double>& y, const std::string& algo,
                    const TensorShape& shape) {
      double worst = 0, scale = 0;
      for (std::size_t i = 0; i < x.size(); ++i) {
        worst = std::max(worst, std::abs(x[i] - y[i]));
        scale = std::max(scale, std::abs(x[i]));
      }
      EXPECT_LE(worst, 1e-2 * scale) << what << ": " << algo << " is off by " << worst << " of " << scale << "\n"
                                     << testkit::describe_mismatch(algo + " (expected: the direct algorithms')", shape,
                                                                   y, x, testkit::Tolerance{1e-2 * scale, 0});
    };
    near(want.y, got.y, "y of forward " + algorithm_name(a.forward), output_shape(c.B, c.g));
    near(want.dx, got.dx, "dx of backward-data " + algorithm_name(a.backward_data), input_shape(c.B, c.g));
    near(want.dW, got.dW, "dW of backward-filter " + algorithm_name(a.backward_filter), weight_shape(c.g));
  }
  for (AlgoRule rule : {AlgoRule::Direct, AlgoRule::Deterministic, AlgoRule::Fastest})
    EXPECT_EQ(parse_algo_rule(algo_rule_name(rule)), rule) << "parse_algo_rule(\"" << algo_rule_name(rule) << "\")";
  EXPECT_STREQ(algo_rule_name(AlgoRule::Deterministic), "deterministic");
  EXPECT_THROW(parse_algo_rule("exact"), std::invalid_argument);
  EXPECT_THROW(parse_algo_rule("winograd"), std::invalid_argument);
}
