// A whole 3-layer MLP, end to end: every parameter and the input, through
// dense layers, three different activations and softmax cross-entropy.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "01_fc_softmax/network.hpp"
#include "course_test.hpp"
#include "network_gradcheck.hpp"

using namespace course;

TEST(Stage01_MlpGradient, EveryParameterAndTheInput) {
  const int B = 4, K = 4;
  const Shape3 input{1, 2, 5};
  Network<double> net(parse_arch("fc8,tanh,fc6,leaky,fc5,sigmoid,fc4"), input, K);
  net.init(17);
  // He init draws small weights and zero biases; random biases exercise db too.
  for (auto* p : net.params())
    if (p->name.find("bias") != std::string::npos) p->value.data = testkit::random_vector(p->value.size(), 3);
  auto x = testkit::random_vector(std::size_t(B) * input.size(), 18);
  const auto labels = testkit::random_labels(B, K, 19);

  // Some entries of dW here are ~1e-6, where the rounding noise of the central
  // difference (~1e-16 * |L| / eps = 1e-11) is already 1e-5 of the value: the
  // floor `tiny` = 1e-5 keeps such entries from failing on noise alone.
  GradCheckOptions opt;
  opt.tolerance = 1e-5;
  opt.tiny = 1e-5;
  testkit::expect_network_gradients_ok(net, x, labels, B, K, {B, 10}, opt);
}
