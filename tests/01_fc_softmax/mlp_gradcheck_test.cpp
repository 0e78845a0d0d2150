// A whole 3-layer MLP, end to end: every parameter and the input, through
// dense layers, three different activations and softmax cross-entropy.
#include <gtest/gtest.h>

#include "01_fc_softmax/loss.hpp"
#include "01_fc_softmax/network.hpp"
#include "course_test.hpp"

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

  auto loss = [&] {
    const double* z = net.forward(x.data(), B);
    std::vector<double> probs(B * K);
    return softmax_cross_entropy_forward(z, labels.data(), probs.data(), B, K);
  };
  std::vector<double> probs(B * K), dz(B * K), dx(x.size());
  const double* z = net.forward(x.data(), B);
  softmax_cross_entropy_forward(z, labels.data(), probs.data(), B, K);
  softmax_cross_entropy_backward(probs.data(), labels.data(), dz.data(), B, K);
  net.backward(dz.data(), B, dx.data());

  // Some entries of dW here are ~1e-6, where the rounding noise of the central
  // difference (~1e-16 * |L| / eps = 1e-11) is already 1e-5 of the value: the
  // floor `tiny` = 1e-5 keeps such entries from failing on noise alone.
  GradCheckOptions opt;
  opt.tolerance = 1e-5;
  opt.tiny = 1e-5;
  for (auto* p : net.params()) {
    const std::vector<double> analytic = p->grad.data;  // the checker's forward passes leave grad alone
    EXPECT_GRADIENT_OK(check_gradient("d" + p->name, p->value.ptr(), p->value.shape, analytic.data(), loss, opt));
  }
  EXPECT_GRADIENT_OK(check_gradient("dinput", x.data(), {B, 10}, dx.data(), loss, opt));
}
