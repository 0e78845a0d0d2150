// Task 4.9: the SGD update with momentum on the device, against stage 01's sgd_update.
#include <gtest/gtest.h>

#include <vector>

#include "01_fc_softmax/sgd.hpp"
#include "04_cuda_matmul/mlp_kernels.hpp"
#include "gpu_testkit.hpp"

using namespace course;
using namespace course::gputest;

namespace {

// The rate and the momentum as the engine passes them: [2] in device memory.
DeviceBuffer<float> hyper_on_device(float lr, float momentum) { return to_device(std::vector<float>{lr, momentum}); }

}  // namespace

// Three steps with momentum, so the velocity carries over from step to step.
// Tolerance: the GPU fuses v = m v + g and w - lr v into FMAs (one rounding
// each instead of two); the difference stays within a few ulp.
TEST(Task4_9_SgdGpu, MomentumStepsMatchStage01) {
  SKIP_WITHOUT_GPU();
  for (const long n : {1L, 257L, 100000L}) {
    std::vector<float> w = random_floats(static_cast<std::size_t>(n), 91), v(static_cast<std::size_t>(n), 0.f);
    DeviceBuffer<float> dw = to_device(w), dv = to_device(v), dg(static_cast<std::size_t>(n));
    const DeviceBuffer<float> hyper = hyper_on_device(0.1f, 0.9f);
    std::vector<std::vector<float>> grads;
    for (int step = 0; step < 3; ++step) {
      grads.push_back(random_floats(static_cast<std::size_t>(n), 92 + step));
      dg.upload(grads.back());
      sgd_update_gpu(dw.get(), dg.get(), dv.get(), n, hyper.get());
    }
    const std::vector<float> w_gpu = to_host(dw), v_gpu = to_host(dv);
    for (const auto& g : grads) sgd_update(w.data(), g.data(), v.data(), n, 0.1f, 0.9f);
    const std::string tag = " after 3 steps, n = " + std::to_string(n);
    EXPECT_TRUE(close_enough("w" + tag, w_gpu, w, {{"i", static_cast<int>(n)}}, 1e-6, 1e-6, 1e-6));
    EXPECT_TRUE(close_enough("v" + tag, v_gpu, v, {{"i", static_cast<int>(n)}}, 1e-6, 1e-6, 1e-6));
  }
}

TEST(Task4_9_SgdGpu, PlainStepWithoutMomentum) {
  SKIP_WITHOUT_GPU();
  const std::vector<float> w = {1.f, -2.f, 0.5f}, g = {0.5f, -1.f, 4.f};
  DeviceBuffer<float> dw = to_device(w), dg = to_device(g), dv = to_device(std::vector<float>(3, 0.f));
  const DeviceBuffer<float> hyper = hyper_on_device(0.25f, 0.f);
  sgd_update_gpu(dw.get(), dg.get(), dv.get(), 3, hyper.get());
  const std::vector<float> got = to_host(dw);
  // w - lr g, element by element (w [i=3] = {1, -2, 0.5}, g = {0.5, -1, 4}, lr 0.25).
  EXPECT_FLOAT_EQ(got[0], 1.f - 0.125f) << "w[0] of [i=3] after one step: 1 - 0.25 x 0.5";
  EXPECT_FLOAT_EQ(got[1], -2.f + 0.25f) << "w[1] of [i=3] after one step: -2 - 0.25 x (-1)";
  EXPECT_FLOAT_EQ(got[2], 0.5f - 1.f) << "w[2] of [i=3] after one step: 0.5 - 0.25 x 4";
}
