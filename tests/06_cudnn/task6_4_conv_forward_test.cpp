// Task 6.4: cuDNN's convolution forward (plus bias) against stage 02's
// conv2d_forward, for every shape of stage 02's gradient checks and every
// algorithm cuDNN offers for each shape.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../02_conv_pool/conv_cases.hpp"
#include "02_conv_pool/conv.hpp"
#include "06_cudnn/conv_cudnn.hpp"
#include "course_test.hpp"
#include "s06_support.hpp"

using namespace course;
using namespace course::s06test;

namespace {

// float against double: each output sums C_in * K * K <= 100 products of values in
// [-1, 1], so FP32 rounding stays near 1e-6; the FFT and Winograd algorithms
// transform their inputs and round a little more. 1e-4 of the output scale
// holds all of them with room; a wrong index or a flipped kernel is off by O(1).
// (FFT and Winograd get the looser kAbsTransformed: abs_tolerance(), s06_support.hpp.)
constexpr double kAbs = 1e-4, kRel = 1e-4;

// y of B examples on g, for every forward algorithm cuDNN offers (the caller skips without a GPU).
void check_forward(int B, const ConvGeometry& g) {
  const std::string what = reference::describe({B, g});
  TestGpu gpu;
  ConvDescriptors d;
  test_conv_descriptors(d, g, B);
  const auto x = as_float_values(testkit::random_vector(B * g.in_size(), 11));
  const auto W = as_float_values(testkit::random_vector(g.weight_size(), 12));
  const auto b = as_float_values(testkit::random_vector(g.C_out, 13));
  const auto dx = to_device(x), dW = to_device(W), db = to_device(b);
  const auto algorithms = forward_algorithms(gpu.h(), d);
  ASSERT_FALSE(algorithms.empty()) << what << ": cuDNN offers no FP32 forward algorithm";
  std::vector<double> want;
  for (const auto& r : algorithms) {
    ConvAlgorithms a;
    a.forward = r.algo;
    a.forward_bytes = workspace_of(gpu.h(), d, r.algo);
    DeviceBuffer<unsigned char> ws(std::max<std::size_t>(a.forward_bytes, 1));
    auto y = filled(B * g.out_size(), -12345.f);  // every output must be written
    conv_forward_cudnn(gpu.h(), d, a, {ws.get(), a.forward_bytes}, dx.get(), dW.get(), db.get(), y.get());
    const std::vector<double> got = to_host(y);
    if (want.empty()) {  // stage 02's layer, in double, on the same float inputs (after the GPU: Task 6.4 fails first)
      want.resize(got.size());
      conv2d_forward(x.data(), W.data(), b.data(), want.data(), B, g);
    }
    EXPECT_TRUE(all_close("y of " + what + ", forward algorithm " + algorithm_name(r.algo), got, want,
                          output_shape(B, g), abs_tolerance(r.algo, kAbs) * scale_of(want), kRel));
  }
}

}  // namespace

// One test per shape of stage 02's gradient checks, and `cnn`'s conv layers at batch 64
// (S06_CONV_LAYER_TESTS, s06_support.hpp).
S06_CONV_LAYER_TESTS(Task6_4_ConvForward, check_forward)

// Stage 02's hand example (tests/02_conv_pool): a 3x3 image, a 2x2 filter, bias
// 0.5, no padding: 1*1 + 2*2 + 3*4 + 4*5 + 0.5 = 37.5 at the top left. A
// flipped kernel (CUDNN_CONVOLUTION) would give 23.5 there.
TEST(Task6_4_ConvForward, CrossCorrelationLikeStage02) {
  S06_SKIP_WITHOUT_GPU();
  TestGpu gpu;
  const ConvGeometry g{1, 3, 3, 1, 2, 0, 1};
  ConvDescriptors d;
  test_conv_descriptors(d, g, 1);
  const auto x = to_device({1, 2, 3, 4, 5, 6, 7, 8, 9}), W = to_device({1, 2, 3, 4}), b = to_device({0.5});
  auto y = filled(4, -1.f);
  ConvAlgorithms a;  // implicit GEMM: needs no workspace
  conv_forward_cudnn(gpu.h(), d, a, {}, x.get(), W.get(), b.get(), y.get());
  // Exact: small integers and halves. The same sums with the kernel flipped (CUDNN_CONVOLUTION)
  // give 23.5, 33.5, 53.5, 63.5.
  EXPECT_TRUE(testkit::tensor_matches(
      "y of stage 02's hand example", {{"h", 2}, {"w", 2}}, to_host(y), std::vector<double>{37.5, 47.5, 67.5, 77.5},
      testkit::Tolerance{0, 0},
      {{"a flipped kernel (CUDNN_CONVOLUTION instead of CUDNN_CROSS_CORRELATION)", {23.5, 33.5, 53.5, 63.5}}}));
}
