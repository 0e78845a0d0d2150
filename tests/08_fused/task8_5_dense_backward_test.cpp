// Task 8.5: the dense layer's backward pass (the activation's slope, the weight and
// bias gradients in slices of kDenseRowsPerSlice examples, the input gradient) against
// stage 01's activation_backward and dense_backward in double. The kernel gets the
// reference's output y, from which it reads the slope.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "01_fc_softmax/activations.hpp"
#include "01_fc_softmax/dense.hpp"
#include "08_fused/fused_kernels.hpp"
#include "s08_support.hpp"

using namespace course;
using namespace course::s08test;

namespace {

void check_dense_backward(const DenseCase& c) {
  const std::string context = c.describe();
  const std::vector<float> hx = gputest::random_floats(static_cast<std::size_t>(c.B) * c.IN, 141),
                           hw = gputest::random_floats(static_cast<std::size_t>(c.OUT) * c.IN, 142),
                           hb = gputest::random_floats(static_cast<std::size_t>(c.OUT), 143),
                           hdy = gputest::random_floats(static_cast<std::size_t>(c.B) * c.OUT, 144);
  // The plan comes before the reference, so that with every hole open (the exercise proof)
  // Task 8.5's own code fails first, not stage 01's tasks the reference is made of; y, which
  // the reference computes, is copied in after it.
  const DeviceBuffer<float> gx = gputest::to_device(hx), gw = gputest::to_device(hw), gdy = gputest::to_device(hdy);
  DeviceBuffer<float> gy(hdy.size());
  const int slices = (c.B + kDenseRowsPerSlice - 1) / kDenseRowsPerSlice;
  DeviceBuffer<float> gdw = poisoned<float>(static_cast<std::size_t>(slices) * hw.size());
  DeviceBuffer<float> gdb = poisoned<float>(static_cast<std::size_t>(slices) * hb.size());
  DeviceBuffer<float> gdx = poisoned<float>(c.dx ? hx.size() : 0);
  const DenseBackwardArgs a = plan_dense_backward(c.B, c.IN, c.OUT, c.act, gx.get(), gw.get(), gy.get(), gdy.get(),
                                                  gdw.get(), gdb.get(), c.dx ? gdx.get() : nullptr);
  ASSERT_EQ(a.slices, slices) << context << ": slices of the weight gradient planned (left), ceil(B / "
                              << kDenseRowsPerSlice << ") (right)";
  // The reference: forward for z and y, then stage 01's backward.
  const std::vector<double> x = to_double(hx), w = to_double(hw), dy = to_double(hdy);
  std::vector<double> z(hdy.size()), y(hdy.size()), dz(hdy.size());
  dense_forward(x.data(), w.data(), to_double(hb).data(), z.data(), c.B, c.IN, c.OUT);
  y = z;
  dz = dy;
  if (c.act != FusedAct::None) {
    activation_forward(activation_of(c.act), z.data(), y.data(), static_cast<long>(z.size()));
    activation_backward(activation_of(c.act), z.data(), y.data(), dy.data(), dz.data(), static_cast<long>(z.size()));
  }
  std::vector<double> dw(hw.size()), db(hb.size()), dx(hx.size());
  dense_backward(x.data(), w.data(), dz.data(), dw.data(), db.data(), dx.data(), c.B, c.IN, c.OUT);

  gy.upload(to_float(y).data(), y.size());
  dense_backward_gpu(a);
  EXPECT_TRUE(close("dW (" + context + ")", sum_slices(to_host(gdw), a.slices, hw.size()), dw,
                    {{"o", c.OUT}, {"i", c.IN}}, sum_atol(c.B)));
  EXPECT_TRUE(
      close("db (" + context + ")", sum_slices(to_host(gdb), a.slices, hb.size()), db, {{"o", c.OUT}}, sum_atol(c.B)));
  if (c.dx) {
    EXPECT_TRUE(close("dx (" + context + ")", to_host(gdx), dx, {{"n", c.B}, {"i", c.IN}}, sum_atol(c.OUT)));
  }
}

}  // namespace

TEST(Task8_5_DenseBackward, MatchesStage01) {
  SKIP_WITHOUT_GPU();
  for (const DenseCase& c : std::vector<DenseCase>{{64, 1568, 100, FusedAct::ReLU, true},
                                                   {64, 784, 256, FusedAct::ReLU, false},
                                                   {64, 288, 128, FusedAct::Sigmoid, true},
                                                   {1, 5, 3, FusedAct::None, true},
                                                   {37, 300, 70, FusedAct::Tanh, true},
                                                   {130, 33, 65, FusedAct::Softplus, true},  // three slices, the last of 2
                                                   {64, 100, 10, FusedAct::LeakyReLU, true}})
    check_dense_backward(c);
}
