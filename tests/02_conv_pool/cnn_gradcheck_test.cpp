// A whole small CNN, end to end: conv (padded, and strided), ReLU, max-pool,
// flatten, dense, softmax cross-entropy. Every parameter and the input are
// checked through stage 01's Network with stage 02's layers.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "02_conv_pool/cnn.hpp"
#include "course_test.hpp"
#include "network_gradcheck.hpp"

using namespace course;

TEST(Stage02_CnnGradient, EveryParameterAndTheInput) {
  const int B = 3, K = 5;
  const Shape3 input{2, 9, 8};  // non-square, two channels
  // conv 2->4 3x3 pad 1 -> relu -> pool 2 -> conv 4->3 3x3 stride 2 -> tanh -> pool 3 s1 p1 (overlapping) -> fc5
  Network<double> net(parse_arch("conv4k3p1,relu,pool2,conv3k3s2p1,tanh,pool3s1p1,flatten,fc5"), input, K,
                      make_cnn_layer<double>);
  net.init(23);
  // He init leaves biases at zero; random biases exercise db (and move ReLU inputs off zero).
  for (auto* p : net.params())
    if (p->name.find("bias") != std::string::npos) p->value.data = testkit::random_vector(p->value.size(), 4, -0.5, 0.5);
  auto x = testkit::random_vector(std::size_t(B) * input.size(), 24);
  const auto labels = testkit::random_labels(B, K, 25);

  GradCheckOptions opt;
  opt.tolerance = 1e-5;  // smooth at these inputs; rounding through five layers reaches a few 1e-7 on small entries
  testkit::expect_network_gradients_ok(net, x, labels, B, K, {B, input.c, input.h, input.w}, opt);
}
