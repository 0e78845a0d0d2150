// Task 4.7: every activation, forward and backward, against stage 01's on the same values.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "01_fc_softmax/activations.hpp"
#include "04_cuda_matmul/mlp_kernels.hpp"
#include "gpu_testkit.hpp"

using namespace course;
using namespace course::gputest;

namespace {

const Activation kAll[] = {Activation::ReLU, Activation::LeakyReLU, Activation::Sigmoid, Activation::Tanh,
                           Activation::Softplus};

// 1000 values in [-4, 4) away from 0, exact zeros (both sides use x > 0, so the
// kink is decided the same way), and large values where e^x overflows a float
// unless the formula avoids it. 1037 values: not a multiple of the block size.
std::vector<float> test_inputs() {
  std::vector<float> x = random_away_from_zero(1000, 71, -4.0, 4.0);
  for (float v : {0.f, -0.f, 30.f, -30.f, 100.f, -100.f, 1e-3f, -1e-3f}) x.push_back(v);
  const std::vector<float> more = random_floats(29, 72, -20.0, 20.0);
  x.insert(x.end(), more.begin(), more.end());
  return x;
}

// float functions on two processors: expf, tanhf and log1pf are within 2 ulp on
// the GPU and the C library's within 1; 1e-5 relative is ~80 ulp of slack.
constexpr double kAtol = 1e-6, kRtol = 1e-5;

// Leaky ReLU's default slope, as every stage passes it unless a spec says otherwise.
constexpr float kSlope = static_cast<float>(kLeakySlope);

/// got against stage 01's ref, element by element, within the tolerances above.
::testing::AssertionResult matches_stage01(const std::string& what, const std::vector<float>& got,
                                           const std::vector<float>& ref) {
  return close_enough(what, got, ref, {{"i", static_cast<int>(ref.size())}}, kAtol, kRtol, kRtol);
}

/// y and dx of activation f on the GPU: its forward pass on x, then its backward pass from dy.
struct GpuPasses {
  std::vector<float> y, dx;
};
GpuPasses gpu_passes(Activation f, const std::vector<float>& x, const std::vector<float>& dy, float slope) {
  const long n = static_cast<long>(x.size());
  DeviceBuffer<float> dev_x = to_device(x), dev_y(x.size()), dev_dy = to_device(dy), dx(x.size());
  activation_forward_gpu(f, dev_x.get(), dev_y.get(), n, slope);
  activation_backward_gpu(f, dev_x.get(), dev_y.get(), dev_dy.get(), dx.get(), n, slope);
  return {to_host(dev_y), to_host(dx)};
}

}  // namespace

TEST(Task4_7_ActivationsGpu, ForwardMatchesStage01) {
  SKIP_WITHOUT_GPU();
  const std::vector<float> x = test_inputs();
  const long n = static_cast<long>(x.size());
  for (Activation f : kAll) {
    DeviceBuffer<float> dx_in = to_device(x), y(x.size());
    activation_forward_gpu(f, dx_in.get(), y.get(), n, kSlope);
    const std::vector<float> got = to_host(y);
    std::vector<float> ref(x.size());
    activation_forward(f, x.data(), ref.data(), n);
    EXPECT_TRUE(matches_stage01(std::string(activation_name(f)) + " forward", got, ref));
  }
}

TEST(Task4_7_ActivationsGpu, BackwardMatchesStage01) {
  SKIP_WITHOUT_GPU();
  const std::vector<float> x = test_inputs();
  const std::vector<float> dy = random_floats(x.size(), 73);
  const long n = static_cast<long>(x.size());
  for (Activation f : kAll) {
    // Both sides get the same y (the GPU's forward, so that the GPU code runs
    // first), and only the backward passes are compared.
    const GpuPasses got = gpu_passes(f, x, dy, kSlope);
    std::vector<float> ref(x.size());
    activation_backward(f, x.data(), got.y.data(), dy.data(), ref.data(), n);
    EXPECT_TRUE(matches_stage01(std::string(activation_name(f)) + " backward", got.dx, ref));
  }
}

// --leaky-slope: the slope is the kernels' argument, not the constant 0.01.
TEST(Task4_7_ActivationsGpu, LeakySlopeIsTheArgument) {
  SKIP_WITHOUT_GPU();
  const std::vector<float> x = test_inputs();
  const std::vector<float> dy = random_floats(x.size(), 74);
  const long n = static_cast<long>(x.size());
  for (const float slope : {0.1f, 0.3f}) {
    const GpuPasses got = gpu_passes(Activation::LeakyReLU, x, dy, slope);
    std::vector<float> ref_y(x.size()), ref_dx(x.size());
    activation_forward(Activation::LeakyReLU, x.data(), ref_y.data(), n, slope);
    activation_backward(Activation::LeakyReLU, x.data(), ref_y.data(), dy.data(), ref_dx.data(), n, slope);
    const std::string what = "leaky, slope " + std::to_string(slope) + " (the kernels' argument, not kLeakySlope)";
    EXPECT_TRUE(matches_stage01(what + " forward", got.y, ref_y));
    EXPECT_TRUE(matches_stage01(what + " backward", got.dx, ref_dx));
  }
}
