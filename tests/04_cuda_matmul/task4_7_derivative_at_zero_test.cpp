// Task 4.7: ReLU and leaky ReLU on the GPU at exactly 0, where the derivative is a convention.
//
// The same convention as stage 01 (activations.hpp, Task1_2_DerivativeAtZero): PyTorch's,
// relu'(0) = 0 and leaky'(0) = the negative slope; the gradient passes unchanged only where
// x > 0, and -0.0 counts as 0. Task4_7_ActivationsGpu compares with stage 01 at 0 too, but
// only against stage 01's answer: this test states the answer itself.
#include <gtest/gtest.h>

#include <cfloat>
#include <vector>

#include "01_fc_softmax/activations.hpp"
#include "04_cuda_matmul/mlp_kernels.hpp"
#include "gpu_testkit.hpp"

using namespace course;
using namespace course::gputest;

namespace {

// +0, -0, and the smallest normal floats on either side (x > 0 decides, not x >= some epsilon).
const std::vector<float> kX = {0.f, -0.f, FLT_MIN, -FLT_MIN};
const std::vector<float> kDy = {1.5f, -2.5f, 3.f, -4.f};

struct Result {
  std::vector<float> y, dx;
};

Result run_gpu(Activation f) {
  const long n = static_cast<long>(kX.size());
  DeviceBuffer<float> x = to_device(kX), y = poisoned<float>(kX.size()), dy = to_device(kDy),
                      dx = poisoned<float>(kX.size());
  activation_forward_gpu(f, x.get(), y.get(), n, static_cast<float>(kLeakySlope));
  activation_backward_gpu(f, x.get(), y.get(), dy.get(), dx.get(), n, static_cast<float>(kLeakySlope));
  return {to_host(y), to_host(dx)};
}

}  // namespace

TEST(Task4_7_DerivativeAtZero, ReluPassesNoGradientAtZero) {
  SKIP_WITHOUT_GPU();
  const Result r = run_gpu(Activation::ReLU);
  EXPECT_EQ(r.y[0], 0.f) << "relu(0)";
  EXPECT_EQ(r.y[1], 0.f) << "relu(-0.0)";
  EXPECT_EQ(r.dx[0], 0.f) << "relu'(0) must be 0, as in PyTorch (the gradient passes only where x > 0): dy = "
                          << kDy[0] << " gave dx = " << r.dx[0];
  EXPECT_EQ(r.dx[1], 0.f) << "relu'(-0.0) must be 0 (-0.0 is not > 0): dy = " << kDy[1] << " gave dx = "
                          << r.dx[1];
  EXPECT_EQ(r.y[2], FLT_MIN) << "relu of the smallest positive normal float";
  EXPECT_EQ(r.dx[2], kDy[2]) << "relu' of the smallest positive normal float must be 1";
  EXPECT_EQ(r.y[3], 0.f) << "relu of minus the smallest normal float";
  EXPECT_EQ(r.dx[3], 0.f) << "relu' of minus the smallest normal float must be 0";
}

TEST(Task4_7_DerivativeAtZero, LeakyPassesTheNegativeSlopeAtZero) {
  SKIP_WITHOUT_GPU();
  const Result r = run_gpu(Activation::LeakyReLU);
  const float slope = static_cast<float>(kLeakySlope);
  EXPECT_EQ(r.y[0], 0.f) << "leaky(0)";
  EXPECT_EQ(r.y[1], 0.f) << "leaky(-0.0)";
  const float tol = 4 * FLT_EPSILON;
  EXPECT_NEAR(r.dx[0], slope * kDy[0], tol) << "leaky'(0) must be the negative slope " << kLeakySlope
                                            << ", as in PyTorch (the slope applies wherever x <= 0)";
  EXPECT_NEAR(r.dx[1], slope * kDy[1], tol) << "leaky'(-0.0) must be the negative slope " << kLeakySlope;
  EXPECT_EQ(r.y[2], FLT_MIN) << "leaky of the smallest positive normal float";
  EXPECT_EQ(r.dx[2], kDy[2]) << "leaky' of the smallest positive normal float must be 1";
  EXPECT_NEAR(r.dx[3], slope * kDy[3], tol) << "leaky' of minus the smallest normal float must be the slope";
}
