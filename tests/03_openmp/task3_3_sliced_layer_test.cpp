// Task 3.3: loop-level parallelism: a layer split over slices of the batch gives what the layer
// gives on the whole batch (whole loop-level steps are in task3_3_loop_parallel_step_test.cpp,
// compiled beside this file). The layer checks live in sliced_layer_checks.hpp, shared with the
// slips catalog.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "01_fc_softmax/loss.hpp"
#include "03_openmp/sliced_layer.hpp"
#include "sliced_layer_checks.hpp"

using namespace course;
using namespace course::s03test;

namespace {
std::unique_ptr<Layer<float>> lesson_sliced_layer(std::vector<std::unique_ptr<Layer<float>>> copies, Shape3 in) {
  return std::make_unique<SlicedLayer<float>>(std::move(copies), in);
}
}  // namespace

TEST(Task3_3_SlicedLayer, DenseAndActivationsMatchTheWholeBatch) {
  for (int R = 1; R <= 4; ++R) {
    check_layer(lesson_sliced_layer, "fc7", {3, 2, 2}, make_dense_or_activation<float>, R, 5);
    check_layer(lesson_sliced_layer, "relu", {3, 2, 2}, make_dense_or_activation<float>, R, 5);
    check_layer(lesson_sliced_layer, "tanh", {6, 1, 1}, make_dense_or_activation<float>, R, 5);
  }
}

TEST(Task3_3_SlicedLayer, ConvPoolFlattenMatchTheWholeBatch) {
  for (int R = 1; R <= 4; ++R) {
    check_layer(lesson_sliced_layer, "conv4k3p1", {2, 6, 6}, make_cnn_layer<float>, R, 5);
    check_layer(lesson_sliced_layer, "conv3k3s2", {2, 7, 7}, make_cnn_layer<float>, R, 5);
    check_layer(lesson_sliced_layer, "pool2", {2, 6, 6}, make_cnn_layer<float>, R, 5);
    check_layer(lesson_sliced_layer, "flatten", {2, 3, 3}, make_cnn_layer<float>, R, 5);
  }
}

TEST(Task3_3_SlicedLayer, MoreSlicesThanExamples) {
  check_layer(lesson_sliced_layer, "fc4", {5, 1, 1}, make_dense_or_activation<float>, 4, 2);
  check_layer(lesson_sliced_layer, "conv2k3p1", {1, 5, 5}, make_cnn_layer<float>, 4, 3);
  check_layer(lesson_sliced_layer, "pool2", {1, 4, 4}, make_cnn_layer<float>, 3, 1);
}

TEST(Task3_3_SlicedLayer, GradientCheckOfASlicedCnn) {
  // The whole small CNN, every layer sliced 3 ways, in double precision: the
  // gradients of every parameter and of the input against central differences.
  const int B = 4;
  Network<double> net(parse_arch("conv3k3p1,relu,pool2,conv4k3p1,tanh,pool2,flatten,fc6,sigmoid,fc5"), {2, 8, 8}, 5,
                      sliced_layers<double>(make_cnn_layer<double>, 3));
  random_weights(net.params(), 61);
  auto x = testkit::random_away_from_zero(static_cast<std::size_t>(B) * 2 * 8 * 8, 62);
  const auto labels = testkit::random_labels(B, 5, 63);
  std::vector<double> probs(B * 5), dz(B * 5), dx(x.size());
  auto loss = [&] {
    const double* z = net.forward(x.data(), B);
    std::vector<double> p(B * 5);
    return softmax_cross_entropy_forward(z, labels.data(), p.data(), B, 5);
  };
  const double* z = net.forward(x.data(), B);
  softmax_cross_entropy_forward(z, labels.data(), probs.data(), B, 5);
  softmax_cross_entropy_backward(probs.data(), labels.data(), dz.data(), B, 5);
  net.backward(dz.data(), B, dx.data());
  GradCheckOptions opt;
  opt.tolerance = 1e-5;
  for (auto* p : net.params()) {
    const std::vector<double> analytic = p->grad.data;
    EXPECT_GRADIENT_OK(check_gradient("d" + p->name + " (sliced 3 ways)", p->value.ptr(), p->value.shape,
                                      analytic.data(), loss, opt));
  }
  EXPECT_GRADIENT_OK(check_gradient("dinput (sliced 3 ways)", x.data(), {B, 2, 8, 8}, dx.data(), loss, opt));
}
