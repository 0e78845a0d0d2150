// Task 1.7: the training loop and evaluation, on the built-in synthetic set.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "01_fc_softmax/train.hpp"
#include "course_test.hpp"
#include "tensor_check.hpp"

using namespace course;

namespace {
// He-style initial weights drawn here rather than by he_init(), so these tests
// check the training loop alone (Task 1.5 has its own tests).
void init_weights(Network<float>& net, std::uint64_t seed) {
  Rng rng(seed);
  for (auto* p : net.params())
    if (p->name.find("weight") != std::string::npos)
      rng.fill_normal(p->value.ptr(), p->value.size(), std::sqrt(2.0 / p->value.shape[1]));
}

Network<float> make_net(const EngineConfig& cfg) {
  Network<float> net(cfg.arch, cfg.input, cfg.classes);
  init_weights(net, cfg.seed);
  return net;
}

EngineConfig small_mlp(const Dataset& d) {
  EngineConfig cfg;
  cfg.arch = parse_arch("fc32,relu,fc" + std::to_string(d.classes));
  cfg.input = d.shape;
  cfg.classes = d.classes;
  cfg.batch = 32;
  cfg.lr = 0.05;
  cfg.momentum = 0.9;
  cfg.seed = 5;
  return cfg;
}
}  // namespace

TEST(Task1_7_Training, LossFallsAndAccuracyRises) {
  const Dataset train = make_synthetic(1000, {1, 28, 28}, 10, 1);
  const Dataset test = make_synthetic(300, {1, 28, 28}, 10, 2);
  const EngineConfig cfg = small_mlp(train);
  Network<float> net = make_net(cfg);
  const EpochStats before = evaluate(net, test, cfg, nullptr);
  std::vector<std::vector<float>> initial;
  for (auto* p : net.params()) initial.push_back(p->value.data);
  double first_loss = 0, last_loss = 0;
  for (int epoch = 0; epoch < 3; ++epoch) {
    const EpochStats s = train_epoch(net, train, cfg, epoch, {});
    ASSERT_EQ(s.seen, train.size()) << "examples seen in epoch " << epoch << ": an epoch visits every training "
                                    << "example once";
    (epoch == 0 ? first_loss : last_loss) = s.loss_sum / s.seen;
  }
  // A parameter the loop never steps keeps its initial values: say which, before the symptoms.
  for (std::size_t i = 0; i < initial.size(); ++i)
    EXPECT_TRUE(net.params()[i]->value.data != initial[i])
        << net.params()[i]->name << " is unchanged after 3 epochs: the SGD step never reaches it (sgd_update on "
        << "every parameter of net.params(), after net.backward)";
  EXPECT_LT(last_loss, 0.5 * first_loss) << "the mean training loss did not fall to half: epoch 0 " << first_loss
                                         << ", epoch 2 " << last_loss;
  const EpochStats after = evaluate(net, test, cfg, nullptr);
  const double accuracy_before = double(before.correct) / before.seen, accuracy = double(after.correct) / after.seen;
  EXPECT_GT(accuracy, accuracy_before + 0.3) << "test accuracy did not rise by 0.3 from " << accuracy_before;
  EXPECT_GT(accuracy, 0.8) << "test accuracy after 3 epochs";
}

TEST(Task1_7_Training, SameSeedSameLossCurve) {
  const Dataset train = make_synthetic(400, {1, 28, 28}, 10, 1);
  std::vector<double> curves[2];
  for (auto& curve : curves) {
    const EngineConfig cfg = small_mlp(train);
    Network<float> net = make_net(cfg);
    for (int epoch = 0; epoch < 2; ++epoch)
      train_epoch(net, train, cfg, epoch, [&](long, double loss_sum) { curve.push_back(loss_sum); });
  }
  ASSERT_FALSE(curves[0].empty()) << "train_epoch never called on_batch (once per batch, with the running loss sum)";
  ASSERT_EQ(curves[0].size(), curves[1].size());
  EXPECT_TRUE(testkit::tensor_matches("running loss sums of a second run from the same seed, against the first",
                                      {{"batch", static_cast<int>(curves[0].size())}}, curves[1], curves[0],
                                      testkit::kExact));
}

TEST(Task1_7_Training, EvaluateRecordsEveryPrediction) {
  const Dataset test = make_synthetic(77, {1, 28, 28}, 10, 2);  // 77 = 2 full batches + 13
  const EngineConfig cfg = small_mlp(test);
  Network<float> net = make_net(cfg);
  std::vector<int> predictions;
  const EpochStats s = evaluate(net, test, cfg, &predictions);
  ASSERT_EQ(s.seen, 77) << "examples seen by evaluate()";
  ASSERT_EQ(predictions.size(), 77u) << "predictions recorded by evaluate()";
  long correct = 0;
  for (int i = 0; i < 77; ++i) correct += predictions[i] == test.labels[i];
  EXPECT_EQ(correct, s.correct) << "the correct count evaluate() returned, against its own predictions";

  // The reference: the same forward passes, batch by batch in order, read here.
  const Batcher batcher(test, cfg.batch, cfg.seed, 0, /*shuffle=*/false);
  std::vector<float> x(static_cast<std::size_t>(cfg.batch) * test.shape.size()), probs(cfg.batch * 10), dz(probs.size());
  std::vector<int> y(static_cast<std::size_t>(cfg.batch)), want(77);
  double loss_sum = 0, sum_of_means = 0;
  for (int b = 0, seen = 0; b < batcher.num_batches(); ++b) {
    const int B = batcher.gather(b, x.data(), y.data());
    const float* logits = net.forward(x.data(), B);
    for (int n = 0; n < B; ++n) want[seen + n] = argmax(logits + n * 10, 10);
    const float mean = loss_forward_backward(cfg.loss, logits, y.data(), probs.data(), dz.data(), B, 10);
    loss_sum += double(mean) * B;
    sum_of_means += mean;
    seen += B;
  }
  EXPECT_TRUE(testkit::labels_match("predictions of evaluate() on 77 examples in batches of 32", {{"example", 77}},
                                    predictions, want));
  EXPECT_TRUE(testkit::scalar_matches("loss_sum of evaluate() on 77 examples in batches of 32", s.loss_sum, loss_sum,
                                      testkit::Tolerance{0, 1e-6},
                                      {{"adding each batch's mean loss, not mean x batch size", {sum_of_means}}}));
}

// --loss mse: the loops pass &stats.abs_error_sum to loss_forward_backward, so that the
// trainer can show the mean absolute error (MAE) of the outputs beside the loss.
TEST(Task1_7_Training, MseAddsUpTheAbsoluteErrors) {
  const Dataset data = make_synthetic(77, {1, 28, 28}, 10, 3);
  EngineConfig cfg = small_mlp(data);
  cfg.loss = "mse";
  cfg.arch = parse_arch("fc32,relu,fc10,sigmoid");  // outputs in (0, 1), as --output sigmoid gives
  // The reference: every example's mean_k |a_k - onehot_k| on the initial weights, read here.
  Network<float> ref = make_net(cfg);
  const float* outputs = ref.forward(data.images.data(), data.size());
  const double want = absolute_error_sum(outputs, data.labels.data(), data.size(), 10);

  Network<float> net = make_net(cfg);
  const EpochStats evaluated = evaluate(net, data, cfg, nullptr);
  EXPECT_TRUE(testkit::scalar_matches("abs_error_sum of evaluate() with --loss mse on 77 examples",
                                      evaluated.abs_error_sum, want, testkit::Tolerance{0, 1e-6},
                                      {{"left at 0: pass &stats.abs_error_sum to loss_forward_backward", {0.0}}}));
  // One batch of all 77: train_epoch sees them on the initial weights too (in another order).
  cfg.batch = data.size();
  const EpochStats trained = train_epoch(net, data, cfg, 0, {});
  EXPECT_TRUE(testkit::scalar_matches("abs_error_sum of train_epoch() with --loss mse, one batch of 77",
                                      trained.abs_error_sum, want, testkit::Tolerance{0, 1e-6},
                                      {{"left at 0: pass &stats.abs_error_sum to loss_forward_backward", {0.0}}}));
}
