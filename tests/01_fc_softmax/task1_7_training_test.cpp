// Task 1.7: the training loop and evaluation, on the built-in synthetic set.
#include <gtest/gtest.h>

#include <cmath>

#include "01_fc_softmax/train.hpp"
#include "course_test.hpp"

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
  double first_loss = 0, last_loss = 0;
  for (int epoch = 0; epoch < 3; ++epoch) {
    const EpochStats s = train_epoch(net, train, cfg, epoch, {});
    ASSERT_EQ(s.seen, train.size()) << "an epoch visits every training example once";
    (epoch == 0 ? first_loss : last_loss) = s.loss_sum / s.seen;
  }
  const EpochStats after = evaluate(net, test, cfg, nullptr);
  EXPECT_LT(last_loss, 0.5 * first_loss) << "training loss did not fall";
  EXPECT_GT(double(after.correct) / after.seen, double(before.correct) / before.seen + 0.3)
      << "test accuracy did not rise";
  EXPECT_GT(double(after.correct) / after.seen, 0.8);
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
  ASSERT_FALSE(curves[0].empty());
  EXPECT_EQ(curves[0], curves[1]) << "the same seed must give bit-identical losses";
}

TEST(Task1_7_Training, EvaluateRecordsEveryPrediction) {
  const Dataset test = make_synthetic(77, {1, 28, 28}, 10, 2);  // 77 = 2 full batches + 13
  const EngineConfig cfg = small_mlp(test);
  Network<float> net = make_net(cfg);
  std::vector<int> predictions;
  const EpochStats s = evaluate(net, test, cfg, &predictions);
  ASSERT_EQ(s.seen, 77);
  ASSERT_EQ(predictions.size(), 77u);
  long correct = 0;
  for (int i = 0; i < 77; ++i) correct += predictions[i] == test.labels[i];
  EXPECT_EQ(correct, s.correct);
  EXPECT_GT(s.loss_sum, 0.0);
}
