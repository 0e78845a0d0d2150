// Task 3.3: loop-level parallelism: a layer split over slices of the batch
// gives what the layer gives on the whole batch; then whole loop-level steps
// against stage 01 (MLP) and stage 02 (CNN).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "01_fc_softmax/cpu_engine.hpp"
#include "01_fc_softmax/loss.hpp"
#include "03_openmp/omp_engine.hpp"
#include "03_openmp/sliced_layer.hpp"
#include "stage03_support.hpp"

using namespace course;
using namespace course::s03test;

namespace {

// One layer of `token` on input shape `in`, sliced R ways, against the same layer unsliced:
// outputs and input gradients bit for bit (each example is computed by the same code),
// parameter gradients within rtol (the partial sums are added in another order).
void check_layer(const std::string& token, Shape3 in, const LayerFactory<float>& make, int R, int B) {
  SCOPED_TRACE(token + " on " + in.str() + ", " + std::to_string(R) + " slices of a batch of " + std::to_string(B));
  const LayerSpec spec = parse_arch(token).layers.at(0);
  SlicedLayer<float> sliced = [&] {
    std::vector<std::unique_ptr<Layer<float>>> copies;
    for (int t = 0; t < R; ++t) copies.push_back(make(spec, in, 1));
    return SlicedLayer<float>(std::move(copies), in);
  }();
  std::unique_ptr<Layer<float>> plain = make(spec, in, 1);
  random_weights(sliced.params(), 51);
  random_weights(plain->params(), 51);
  const long out = plain->out_shape().size();
  const auto xd = testkit::random_away_from_zero(static_cast<std::size_t>(B) * in.size(), 52);
  const auto dyd = testkit::random_vector(static_cast<std::size_t>(B) * out, 53);
  const std::vector<float> x(xd.begin(), xd.end()), dy(dyd.begin(), dyd.end());
  std::vector<float> y(dy.size()), dx(x.size()), y_ref(dy.size()), dx_ref(x.size());

  sliced.forward(x.data(), y.data(), B);
  sliced.backward(x.data(), y.data(), dy.data(), dx.data(), B);
  plain->forward(x.data(), y_ref.data(), B);
  plain->backward(x.data(), y_ref.data(), dy.data(), dx_ref.data(), B);

  // What the slips give: the copies t > 0 computing with the weights they were built with (never
  // copied from copy 0), and the parameter gradient of slice 0 alone (the other copies' partial
  // sums never added into copy 0's).
  const Shard first = shard_of(B, R, 0);
  std::unique_ptr<Layer<float>> fresh = make(spec, in, 1), first_slice = make(spec, in, 1);
  random_weights(first_slice->params(), 51);
  std::vector<float> y_fresh(dy.size()), dx_fresh(x.size()), y_first(static_cast<std::size_t>(first.size()) * out);
  fresh->forward(x.data(), y_fresh.data(), B);
  fresh->backward(x.data(), y_fresh.data(), dy.data(), dx_fresh.data(), B);
  std::copy(y_ref.begin(), y_ref.begin() + first.size() * out, y_fresh.begin());  // slice 0 is copy 0's: right
  std::copy(dx_ref.begin(), dx_ref.begin() + first.size() * in.size(), dx_fresh.begin());
  first_slice->forward(x.data(), y_first.data(), first.size());
  std::vector<float> dx_first(static_cast<std::size_t>(first.size()) * in.size());
  first_slice->backward(x.data(), y_first.data(), dy.data(), dx_first.data(), first.size());

  const auto values = [](const float* v, std::size_t n) { return std::vector<double>(v, v + n); };
  const TensorShape out_shape{{"n", B}, {"f", static_cast<int>(out)}}, in_shape{{"n", B}, {"f", static_cast<int>(in.size())}};
  std::vector<testkit::KnownSlip> y_slips, dx_slips;
  if (R > 1 && !plain->params().empty()) {
    const std::string own = "the copies t > 0 computing with the weights they were built with (each must take copy "
                            "0's weights at every forward)";
    y_slips.push_back({own, values(y_fresh.data(), y_fresh.size())});
    dx_slips.push_back({own, values(dx_fresh.data(), dx_fresh.size())});
  }
  EXPECT_TRUE(close(token + " output, sliced against whole", out_shape, y.data(), y_ref.data(), 0.0, y_slips));
  EXPECT_TRUE(close(token + " input gradient, sliced against whole", in_shape, dx.data(), dx_ref.data(), 0.0, dx_slips));
  const auto mine = sliced.params(), want = plain->params();
  ASSERT_EQ(mine.size(), want.size());
  for (std::size_t p = 0; p < want.size(); ++p) {
    std::vector<testkit::KnownSlip> slips;
    if (R > 1 && B > first.size())
      slips.push_back({"slice 0's gradient alone (the other copies' partial sums never added into copy 0's)",
                       values(first_slice->params()[p]->grad.ptr(), want[p]->grad.size())});
    EXPECT_TRUE(close(want[p]->name + " gradient summed over the slices, against the whole batch's",
                      testkit::parameter_shape(want[p]->grad.shape), mine[p]->grad.ptr(), want[p]->grad.ptr(), 1e-5,
                      slips));
  }
}

}  // namespace

TEST(Task3_3_SlicedLayer, DenseAndActivationsMatchTheWholeBatch) {
  for (int R = 1; R <= 4; ++R) {
    check_layer("fc7", {3, 2, 2}, make_dense_or_activation<float>, R, 5);
    check_layer("relu", {3, 2, 2}, make_dense_or_activation<float>, R, 5);
    check_layer("tanh", {6, 1, 1}, make_dense_or_activation<float>, R, 5);
  }
}

TEST(Task3_3_SlicedLayer, ConvPoolFlattenMatchTheWholeBatch) {
  for (int R = 1; R <= 4; ++R) {
    check_layer("conv4k3p1", {2, 6, 6}, make_cnn_layer<float>, R, 5);
    check_layer("conv3k3s2", {2, 7, 7}, make_cnn_layer<float>, R, 5);
    check_layer("pool2", {2, 6, 6}, make_cnn_layer<float>, R, 5);
    check_layer("flatten", {2, 3, 3}, make_cnn_layer<float>, R, 5);
  }
}

TEST(Task3_3_SlicedLayer, MoreSlicesThanExamples) {
  check_layer("fc4", {5, 1, 1}, make_dense_or_activation<float>, 4, 2);
  check_layer("conv2k3p1", {1, 5, 5}, make_cnn_layer<float>, 4, 3);
  check_layer("pool2", {1, 4, 4}, make_cnn_layer<float>, 3, 1);
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

// ---- whole steps through the loop-level engine ------------------------------------------------

TEST(Task3_3_LoopParallelStep, MlpMatchesStage01) {
  expect_step_matches_one_thread<LoopParallelEngine>(named_model_spec("mlp"), make_dense_or_activation<float>);
}

TEST(Task3_3_LoopParallelStep, CnnMatchesStage02) {
  expect_step_matches_one_thread<LoopParallelEngine>(named_model_spec("cnn"), make_cnn_layer<float>);
}
