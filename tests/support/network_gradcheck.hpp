// A whole network's gradients checked end to end: every parameter's and the
// input's, for softmax cross-entropy, against central differences. The
// network is stage 01's Network<double>, with whichever layers it was built from.
#pragma once

#include <string>
#include <vector>

#include "01_fc_softmax/loss.hpp"
#include "01_fc_softmax/network.hpp"
#include "course_test.hpp"

namespace course::testkit {

/// Checks the backward pass of `net` on the B examples `x` (shaped `x_shape`
/// for the input's check) with `labels` over K classes: the gradient of every
/// parameter and of the input against central differences of the loss, with `opt`.
inline void expect_network_gradients_ok(Network<double>& net, std::vector<double>& x, const std::vector<int>& labels,
                                        int B, int K, const std::vector<int>& x_shape, const GradCheckOptions& opt) {
  const std::size_t outputs = static_cast<std::size_t>(B) * static_cast<std::size_t>(K);
  auto loss = [&] {
    const double* z = net.forward(x.data(), B);
    std::vector<double> probs(outputs);
    return softmax_cross_entropy_forward(z, labels.data(), probs.data(), B, K);
  };
  std::vector<double> probs(outputs), dz(outputs), dx(x.size());
  const double* z = net.forward(x.data(), B);
  softmax_cross_entropy_forward(z, labels.data(), probs.data(), B, K);
  softmax_cross_entropy_backward(probs.data(), labels.data(), dz.data(), B, K);
  net.backward(dz.data(), B, dx.data());
  for (auto* p : net.params()) {
    const std::vector<double> analytic = p->grad.data;  // the checker's forward passes leave grad alone
    EXPECT_GRADIENT_OK(check_gradient("d" + p->name, p->value.ptr(), p->value.shape, analytic.data(), loss, opt));
  }
  EXPECT_GRADIENT_OK(check_gradient("dinput", x.data(), x_shape, dx.data(), loss, opt));
}

}  // namespace course::testkit
