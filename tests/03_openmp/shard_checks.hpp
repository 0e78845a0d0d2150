// The checks of Task 3.1 (every replica runs forward and backward on its own shard of the batch),
// taking the code under test as an argument: the task tests pass the lesson's
// forward_backward_shards, the slips catalog (slips_test.cpp) a learner's wrong copy, so both meet
// the very same messages. run(replicas, x, labels, B, loss) -> one ShardResult per replica.
//
// Replica t must end up with exactly what one network gives on the rows of shard t alone: the
// same code on the same numbers, so the gradients are compared bit for bit.
#pragma once

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "01_fc_softmax/loss.hpp"
#include "01_fc_softmax/train.hpp"
#include "03_openmp/replica.hpp"
#include "03_openmp/shard.hpp"
#include "stage03_support.hpp"

namespace course::s03test {

// What one network of `spec` with `weights` gives on the n images from row `x_row` of a batch
// with the n labels from row `label_row`: its correct predictions, its mean loss and its
// gradients (in params() order).
struct ShardReference {
  long correct = 0;
  float loss = 0;
  std::vector<std::vector<float>> grads;
};

inline ShardReference reference_on(const std::string& spec, Shape3 input, const LayerFactory<float>& make,
                                   const std::vector<NamedTensor>& weights, const Dataset& batch, int x_row,
                                   int label_row, int n) {
  Network<float> ref(parse_arch(spec), input, kClasses, make);
  for (std::size_t p = 0; p < weights.size(); ++p) ref.params()[p]->value.data = weights[p].tensor.data;
  const float* logits = ref.forward(batch.image(x_row), n);
  ShardReference r;
  for (int i = 0; i < n; ++i) r.correct += argmax(logits + i * kClasses, kClasses) == batch.labels[label_row + i];
  std::vector<float> probs(static_cast<std::size_t>(n) * kClasses), dlogits(probs.size());
  r.loss = loss_forward_backward(std::string("cross-entropy"), logits, batch.labels.data() + label_row, probs.data(),
                                 dlogits.data(), n, kClasses);
  ref.backward(dlogits.data(), n);
  for (Param<float>* p : ref.params()) r.grads.push_back(p->grad.data);
  return r;
}

// Checks `run` (forward_backward_shards, or a learner's copy) on a batch of B examples with R replicas.
template <typename Run>
void check_shards(const Run& run, const std::string& spec, Shape3 input, const LayerFactory<float>& make, int R, int B) {
  SCOPED_TRACE(spec + " with " + std::to_string(R) + " replicas, batch " + std::to_string(B));
  TestReplicas<float> r(spec, input, R, make, 21);
  const Dataset batch = make_synthetic(B, input, kClasses, 22);
  const std::vector<NamedTensor> before = parameters_of(r.master);
  std::vector<std::vector<NamedTensor>> own;  // each replica's own weights, before the call
  for (int t = 0; t < R; ++t) {
    own.emplace_back();
    for (Param<float>* p : r.set.replicas[t]->params) own.back().push_back({p->name, p->value});
  }

  const std::vector<ShardResult> results = run(r.set.replicas, batch.images.data(), batch.labels.data(), B, "cross-entropy");

  ASSERT_EQ(results.size(), static_cast<std::size_t>(R)) << "one ShardResult per replica";
  int covered = 0;
  for (int t = 0; t < R; ++t) {
    const Shard s = shard_of(B, R, t);
    const ShardResult& got = results[t];
    const std::string shard = "shard " + std::to_string(t) + " (rows " + std::to_string(s.begin) + " to " +
                              std::to_string(s.end) + " of " + std::to_string(B) + ")";
    EXPECT_EQ(got.size, s.size()) << "the size of " << shard;
    covered += got.size;
    if (s.size() == 0) continue;
    // The reference: one network with the master's weights, on the shard's rows alone; and what
    // the slips give: the replica's own weights (never copied from the master), the first rows of
    // the batch (x, or x and the labels, not advanced to the shard's first row).
    const ShardReference want = reference_on(spec, input, make, before, batch, s.begin, s.begin, s.size());
    const ShardReference own_weights = reference_on(spec, input, make, own[t], batch, s.begin, s.begin, s.size());
    const ShardReference first_images = reference_on(spec, input, make, before, batch, 0, s.begin, s.size());
    const ShardReference first_rows = reference_on(spec, input, make, before, batch, 0, 0, s.size());
    const int early = t * s.size();  // where shard t starts if every shard were as large as this one
    const ShardReference early_rows = reference_on(spec, input, make, before, batch, early, early, s.size());
    EXPECT_EQ(got.correct, want.correct) << "correct predictions of " << shard;
    const std::string own_slip = "replica " + std::to_string(t) + "'s own weights (copy_weights from the master never ran)",
                      images_slip = "the batch's first images with the shard's labels (x not advanced to the shard's "
                                    "first row)",
                      rows_slip = "the batch's first rows (x and labels not advanced to the shard's first row)",
                      early_slip = "rows from t * n_t = " + std::to_string(early) + " (shard t starts at " +
                                   "shard_of(B, R, t).begin = " + std::to_string(s.begin) +
                                   ": the shards before it are not all as large as this one)";
    const auto loss_sum = [&](const ShardReference& ref) { return static_cast<double>(ref.loss) * s.size(); };
    std::vector<testkit::KnownSlip> loss_slips = {{"the shard's mean loss, not times its size", {double(want.loss)}}};
    if (t > 0)
      loss_slips.insert(loss_slips.end(), {{own_slip, {loss_sum(own_weights)}},
                                           {images_slip, {loss_sum(first_images)}},
                                           {rows_slip, {loss_sum(first_rows)}},
                                           {early_slip, {loss_sum(early_rows)}}});
    EXPECT_TRUE(testkit::scalar_matches("the loss sum of " + shard + " (its mean loss times its size)", got.loss_sum,
                                        loss_sum(want), testkit::kDoubleEq, loss_slips));
    const auto mine = r.set.replicas[t]->params;
    for (std::size_t p = 0; p < want.grads.size(); ++p) {
      const auto values = [](const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); };
      std::vector<testkit::KnownSlip> slips;
      if (t > 0)
        slips = {{own_slip, values(own_weights.grads[p])},
                 {images_slip, values(first_images.grads[p])},
                 {rows_slip, values(first_rows.grads[p])},
                 {early_slip, values(early_rows.grads[p])}};
      EXPECT_TRUE(close("replica " + std::to_string(t) + "'s " + mine[p]->name +
                            " gradient, which must be the gradient of the mean loss of " + shard + " alone",
                        testkit::parameter_shape(mine[p]->grad.shape), mine[p]->grad.ptr(), want.grads[p].data(), 0.0,
                        slips));
      EXPECT_TRUE(close("replica " + std::to_string(t) + "'s " + mine[p]->name +
                            " after the call: the master's weights (copied, and changed by nobody)",
                        testkit::parameter_shape(mine[p]->value.shape), mine[p]->value.ptr(), before[p].tensor.ptr(),
                        0.0, {{"its own weights (copy_weights from the master never ran)",
                               values(own[t][p].tensor.data)}}));
    }
  }
  EXPECT_EQ(covered, B) << "the shards must cover the batch";
}

template <typename Run>
void check_unknown_loss_throws(const Run& run) {
  TestReplicas<float> r(kSmallMlp, kMlpInput, 3, make_dense_or_activation<float>, 21);
  const Dataset batch = make_synthetic(6, kMlpInput, kClasses, 22);
  try {
    run(r.set.replicas, batch.images.data(), batch.labels.data(), 6, "hinge");
    FAIL() << "an unknown loss must throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("hinge"), std::string::npos) << e.what();
  }
}

// --loss mse: every shard reports its absolute errors (loss_forward_backward's last argument),
// the sum over its rows of mean_k |a_k - onehot_k|, for the MAE the trainer shows.
template <typename Run>
void check_shards_report_absolute_errors(const Run& run) {
  const std::string spec = "fc24,relu,fc10,sigmoid";  // the practice's sigmoid outputs
  const int R = 3, B = 7;
  TestReplicas<float> r(spec, kMlpInput, R, make_dense_or_activation<float>, 21);
  const Dataset batch = make_synthetic(B, kMlpInput, kClasses, 22);
  const std::vector<NamedTensor> weights = parameters_of(r.master);
  const std::vector<ShardResult> results = run(r.set.replicas, batch.images.data(), batch.labels.data(), B, "mse");
  ASSERT_EQ(results.size(), static_cast<std::size_t>(R));
  for (int t = 0; t < R; ++t) {
    const Shard s = shard_of(B, R, t);
    Network<float> ref(parse_arch(spec), kMlpInput, kClasses, make_dense_or_activation<float>);
    for (std::size_t p = 0; p < weights.size(); ++p) ref.params()[p]->value.data = weights[p].tensor.data;
    const double want =
        absolute_error_sum(ref.forward(batch.image(s.begin), s.size()), batch.labels.data() + s.begin, s.size(), kClasses);
    EXPECT_TRUE(testkit::scalar_matches("abs_error_sum of shard " + std::to_string(t) + " with --loss mse",
                                        results[t].abs_error_sum, want, testkit::kExact,
                                        {{"left at 0: pass a double's address to loss_forward_backward and keep it in "
                                          "results[t]",
                                          {0.0}}}));
  }
}

/// Every check of Task 3.1's shard tests, in the order of the task's tests.
template <typename Run>
void check_forward_backward_shards(const Run& run) {
  for (int R = 1; R <= 4; ++R) check_shards(run, kSmallMlp, kMlpInput, make_dense_or_activation<float>, R, 7);
  for (int R = 1; R <= 4; ++R) check_shards(run, kSmallCnn, kCnnInput, make_cnn_layer<float>, R, 7);
  check_shards(run, kSmallMlp, kMlpInput, make_dense_or_activation<float>, 4, 2);  // shards 2 and 3 are empty
  check_shards(run, kSmallMlp, kMlpInput, make_dense_or_activation<float>, 3, 1);
  check_unknown_loss_throws(run);
  check_shards_report_absolute_errors(run);
}

}  // namespace course::s03test
