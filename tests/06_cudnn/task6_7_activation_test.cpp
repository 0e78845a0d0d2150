// Task 6.7: cuDNN's ReLU, sigmoid and tanh, forward and backward, against stage
// 01's activation_forward and activation_backward.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "01_fc_softmax/activations.hpp"
#include "06_cudnn/activation_cudnn.hpp"
#include "course_test.hpp"
#include "s06_support.hpp"

using namespace course;
using namespace course::s06test;

namespace {

// FP32 sigmoid and tanh against double, a few units in the last place: 2e-6
// absolute and relative. Inputs keep away from ReLU's kink at 0.
void check_activation(Activation f) {
  S06_SKIP_WITHOUT_GPU();
  const std::string name = activation_name(f);
  TestGpu gpu;
  const int B = 3, C = 4, H = 5, W = 6;
  const long n = static_cast<long>(B) * C * H * W;
  TensorDescriptor t;
  test_nchw(t, B, C, H, W);
  std::vector<double> x = testkit::random_away_from_zero(n, 71);
  for (double& v : x) v *= 4;  // reach the flat tails of sigmoid and tanh too
  x = as_float_values(x);
  const auto dy = as_float_values(testkit::random_vector(n, 72));
  cudnnActivationMode_t mode{};
  ASSERT_TRUE(cudnn_activation_mode(f, &mode)) << name << " has a cuDNN mode";
  ActivationDescriptor desc;
  describe_activation(desc, mode);
  const auto dev_x = to_device(x), dev_dy = to_device(dy);
  auto y = filled(n, -99.f), dx = filled(n, -99.f);
  activation_forward_cudnn(gpu.h(), desc, t, dev_x.get(), y.get());
  const auto got_y = to_host(y);
  const auto y_float = to_device(got_y);  // backward reads the forward pass's y, as the engine's does
  activation_backward_cudnn(gpu.h(), desc, t, dev_x.get(), y_float.get(), dev_dy.get(), dx.get());
  const auto got_dx = to_host(dx);

  std::vector<double> want_y(n), want_dx(n);
  activation_forward(f, x.data(), want_y.data(), n);
  activation_backward(f, x.data(), want_y.data(), dy.data(), want_dx.data(), n);
  const TensorShape shape{{"n", B}, {"c", C}, {"h", H}, {"w", W}};
  EXPECT_TRUE(all_close(name + " forward", got_y, want_y, shape, 2e-6, 2e-6));
  EXPECT_TRUE(all_close(name + " backward", got_dx, want_dx, shape, 2e-6, 2e-6));
}

}  // namespace

TEST(Task6_7_Activation, ReLU) { check_activation(Activation::ReLU); }
TEST(Task6_7_Activation, Sigmoid) { check_activation(Activation::Sigmoid); }
TEST(Task6_7_Activation, Tanh) { check_activation(Activation::Tanh); }

// cuDNN's legacy API has no leaky ReLU and no softplus: the engine must know,
// and run stage 04's kernels for them.
TEST(Task6_7_Activation, LeakyReluAndSoftplusHaveNoCudnnMode) {
  cudnnActivationMode_t mode = CUDNN_ACTIVATION_IDENTITY;
  EXPECT_FALSE(cudnn_activation_mode(Activation::LeakyReLU, &mode))
      << "cuDNN has no leaky ReLU; it gave mode " << ::testing::PrintToString(mode);
  EXPECT_FALSE(cudnn_activation_mode(Activation::Softplus, &mode))
      << "cuDNN has no softplus; it gave mode " << ::testing::PrintToString(mode);
  ASSERT_TRUE(cudnn_activation_mode(Activation::ReLU, &mode));
  EXPECT_EQ(mode, CUDNN_ACTIVATION_RELU);
  ASSERT_TRUE(cudnn_activation_mode(Activation::Sigmoid, &mode));
  EXPECT_EQ(mode, CUDNN_ACTIVATION_SIGMOID);
  ASSERT_TRUE(cudnn_activation_mode(Activation::Tanh, &mode));
  EXPECT_EQ(mode, CUDNN_ACTIVATION_TANH);
}
