// Task 3.1: every replica runs forward and backward on its own shard of the batch.
//
// Replica t must end up with exactly what one network gives on the rows of
// shard t alone: the same code on the same numbers, so the gradients are
// compared bit for bit.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "01_fc_softmax/loss.hpp"
#include "01_fc_softmax/train.hpp"
#include "03_openmp/data_parallel.hpp"
#include "03_openmp/shard.hpp"
#include "stage03_support.hpp"

using namespace course;
using namespace course::s03test;

namespace {

// Checks forward_backward_shards on a batch of B examples with R replicas.
void check_shards(const std::string& spec, Shape3 input, const LayerFactory<float>& make, int R, int B) {
  SCOPED_TRACE(spec + " with " + std::to_string(R) + " replicas, batch " + std::to_string(B));
  TestReplicas<float> r(spec, input, R, make, 21);
  const Dataset batch = make_synthetic(B, input, kClasses, 22);
  const std::vector<NamedTensor> before = parameters_of(r.master);

  const std::vector<ShardResult> results =
      forward_backward_shards(r.set.replicas, batch.images.data(), batch.labels.data(), B, "cross-entropy");

  ASSERT_EQ(results.size(), static_cast<std::size_t>(R));
  int covered = 0;
  for (int t = 0; t < R; ++t) {
    const Shard s = shard_of(B, R, t);
    const ShardResult& got = results[t];
    EXPECT_EQ(got.size, s.size()) << "shard " << t;
    covered += got.size;
    if (s.size() == 0) continue;
    // The reference: one network with the master's weights, on the shard's rows alone.
    Network<float> ref(parse_arch(spec), input, kClasses, make);
    for (std::size_t p = 0; p < before.size(); ++p) ref.params()[p]->value.data = before[p].tensor.data;
    const float* logits = ref.forward(batch.image(s.begin), s.size());
    long correct = 0;
    for (int n = 0; n < s.size(); ++n) correct += argmax(logits + n * kClasses, kClasses) == batch.labels[s.begin + n];
    std::vector<float> probs(static_cast<std::size_t>(s.size()) * kClasses), dlogits(probs.size());
    const float loss = loss_forward_backward(std::string("cross-entropy"), logits, batch.labels.data() + s.begin,
                                             probs.data(), dlogits.data(), s.size(), kClasses);
    ref.backward(dlogits.data(), s.size());
    EXPECT_EQ(got.correct, correct) << "correct predictions of shard " << t;
    EXPECT_DOUBLE_EQ(got.loss_sum, static_cast<double>(loss) * s.size()) << "loss sum of shard " << t;
    const auto mine = r.set.replicas[t]->params;
    const auto want = ref.params();
    for (std::size_t p = 0; p < want.size(); ++p) {
      EXPECT_TRUE(close("shard " + std::to_string(t) + " " + want[p]->name + " gradient", mine[p]->grad.ptr(),
                        want[p]->grad.ptr(), want[p]->grad.shape, 0.0))
          << "replica " << t << " must hold the gradient of its own shard's mean loss";
      EXPECT_TRUE(close("replica " + std::to_string(t) + " " + want[p]->name, mine[p]->value.ptr(),
                        before[p].tensor.ptr(), want[p]->value.shape, 0.0))
          << "replica " << t << " must compute with the master's weights (and nobody may change them)";
    }
  }
  EXPECT_EQ(covered, B) << "the shards must cover the batch";
}

}  // namespace

TEST(Task3_1_Shards, EachReplicaHoldsItsShardsGradientMlp) {
  for (int R = 1; R <= 4; ++R) check_shards(kSmallMlp, kMlpInput, make_dense_or_activation<float>, R, 7);
}

TEST(Task3_1_Shards, EachReplicaHoldsItsShardsGradientCnn) {
  for (int R = 1; R <= 4; ++R) check_shards(kSmallCnn, kCnnInput, make_cnn_layer<float>, R, 7);
}

TEST(Task3_1_Shards, MoreReplicasThanExamples) {
  check_shards(kSmallMlp, kMlpInput, make_dense_or_activation<float>, 4, 2);  // shards 2 and 3 are empty
  check_shards(kSmallMlp, kMlpInput, make_dense_or_activation<float>, 3, 1);
}

TEST(Task3_1_Shards, UnknownLossIsAnErrorNotACrash) {
  TestReplicas<float> r(kSmallMlp, kMlpInput, 3, make_dense_or_activation<float>, 21);
  const Dataset batch = make_synthetic(6, kMlpInput, kClasses, 22);
  try {
    forward_backward_shards(r.set.replicas, batch.images.data(), batch.labels.data(), 6, "hinge");
    FAIL() << "an unknown loss must throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("hinge"), std::string::npos) << e.what();
  }
}
