// The checks of Task 3.3 (a layer split over slices of the batch gives what the layer gives on the
// whole batch), taking the code under test as an argument: the task tests pass the lesson's
// SlicedLayer, the slips catalog (slips_test.cpp) a learner's wrong copy, so both meet the very same
// messages.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "01_fc_softmax/network.hpp"
#include "03_openmp/shard.hpp"
#include "stage03_support.hpp"

namespace course::s03test {

// One layer of `token` on input shape `in`, sliced R ways, against the same layer unsliced:
// outputs and input gradients bit for bit (each example is computed by the same code),
// parameter gradients within rtol (the partial sums are added in another order).
//
// `slice(copies, in)` makes the layer under test from R copies of one layer (a SlicedLayer, or a
// learner's copy of it).
template <typename Slice>
void check_layer(const Slice& slice, const std::string& token, Shape3 in, const LayerFactory<float>& make, int R, int B) {
  SCOPED_TRACE(token + " on " + in.str() + ", " + std::to_string(R) + " slices of a batch of " + std::to_string(B));
  const LayerSpec spec = parse_arch(token).layers.at(0);
  std::vector<std::unique_ptr<Layer<float>>> copies;
  for (int t = 0; t < R; ++t) copies.push_back(make(spec, in, 1));
  const std::unique_ptr<Layer<float>> layer = slice(std::move(copies), in);
  Layer<float>& sliced = *layer;
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
  // copied from copy 0), and the parameter gradient summed wrongly: slice 0's alone (the other
  // copies' partial sums never added into copy 0's), slice 0's twice (the sum over t from 0, where
  // copy 0's partial is already there), or without the last non-empty slice.
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
  // Each slice's partial sum, from a layer of copy 0's weights on that slice's rows alone.
  const int slices = std::min(B, R);
  std::vector<std::vector<std::vector<double>>> partial;  // [slice][param] -> the gradient
  for (int t = 0; t < slices; ++t) {
    const Shard s = shard_of(B, R, t);
    std::unique_ptr<Layer<float>> part = make(spec, in, 1);
    random_weights(part->params(), 51);
    std::vector<float> ys(static_cast<std::size_t>(s.size()) * out), dxs(static_cast<std::size_t>(s.size()) * in.size());
    part->forward(x.data() + s.begin * in.size(), ys.data(), s.size());
    part->backward(x.data() + s.begin * in.size(), ys.data(), dy.data() + s.begin * out, dxs.data(), s.size());
    partial.emplace_back();
    for (Param<float>* q : part->params()) partial.back().push_back(values(q->grad.ptr(), q->grad.size()));
  }
  const auto summed = [&](std::size_t p, const std::vector<double>& weight) {
    std::vector<double> g(partial[0][p].size(), 0.0);
    for (int t = 0; t < slices; ++t)
      for (std::size_t i = 0; i < g.size(); ++i) g[i] += weight[t] * partial[t][p][i];
    return g;
  };
  for (std::size_t p = 0; p < want.size(); ++p) {
    std::vector<testkit::KnownSlip> slips;
    if (R > 1 && B > first.size())
      slips.push_back({"slice 0's gradient alone (the other copies' partial sums never added into copy 0's)",
                       values(first_slice->params()[p]->grad.ptr(), want[p]->grad.size())});
    std::vector<double> twice(slices, 1.0), last_left_out(slices, 1.0);
    twice[0] = 2;
    last_left_out[slices - 1] = 0;
    slips.push_back({"copy 0's partial sum added twice (g_0 += g_t for t from 0, where g_0 already holds its own)",
                     summed(p, twice)});
    if (slices > 1)
      slips.push_back({"the last non-empty slice's partial sum left out (t < min(B, R) - 1 where t < min(B, R) belongs)",
                       summed(p, last_left_out)});
    EXPECT_TRUE(close(want[p]->name + " gradient summed over the slices, against the whole batch's",
                      testkit::parameter_shape(want[p]->grad.shape), mine[p]->grad.ptr(), want[p]->grad.ptr(), 1e-5,
                      slips));
  }
}

/// Every layer check of Task 3.3, in the order of the task's tests.
template <typename Slice>
void check_sliced_layers(const Slice& slice) {
  for (int R = 1; R <= 4; ++R) {
    check_layer(slice, "fc7", {3, 2, 2}, make_dense_or_activation<float>, R, 5);
    check_layer(slice, "relu", {3, 2, 2}, make_dense_or_activation<float>, R, 5);
    check_layer(slice, "tanh", {6, 1, 1}, make_dense_or_activation<float>, R, 5);
  }
  for (int R = 1; R <= 4; ++R) {
    check_layer(slice, "conv4k3p1", {2, 6, 6}, make_cnn_layer<float>, R, 5);
    check_layer(slice, "conv3k3s2", {2, 7, 7}, make_cnn_layer<float>, R, 5);
    check_layer(slice, "pool2", {2, 6, 6}, make_cnn_layer<float>, R, 5);
    check_layer(slice, "flatten", {2, 3, 3}, make_cnn_layer<float>, R, 5);
  }
  check_layer(slice, "fc4", {5, 1, 1}, make_dense_or_activation<float>, 4, 2);
  check_layer(slice, "conv2k3p1", {1, 5, 5}, make_cnn_layer<float>, 4, 3);
  check_layer(slice, "pool2", {1, 4, 4}, make_cnn_layer<float>, 3, 1);
}

}  // namespace course::s03test
