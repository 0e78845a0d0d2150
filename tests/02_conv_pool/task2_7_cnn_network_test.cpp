// Task 2.7: the layer factory that lets stage 01's Network, training loop and
// engine run CNNs. The first tests need only the factory; the training tests
// need every task of the stage (a failure there may name an earlier task).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "01_fc_softmax/cpu_engine.hpp"
#include "01_fc_softmax/train.hpp"
#include "02_conv_pool/cnn.hpp"
#include "course_test.hpp"
#include "engine_config.hpp"
#include "tensor_check.hpp"

using namespace course;

namespace {
struct LayerWant {
  std::string name, token;
  Shape3 out;
};
struct ParamWant {
  std::string name;
  std::vector<int> shape;
};

void expect_network(const std::string& spec, Shape3 input, const std::vector<LayerWant>& layers,
                    const std::vector<ParamWant>& params) {
  Network<float> net(parse_arch(spec), input, 10, make_cnn_layer<float>);
  const std::string of = " of the network " + spec + " on " + input.str();
  ASSERT_EQ(net.layers().size(), layers.size()) << "layers" << of;
  // "<what>: expected X, actual Y" for each property that differs.
  const auto same = [](const std::string& what, const std::string& actual, const std::string& expected) {
    if (actual == expected) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << what << ": expected " << expected << ", actual " << actual;
  };
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const Layer<float>& l = *net.layers()[i];
    const std::string layer = "layer " + std::to_string(i) + " (" + layers[i].token + ")" + of;
    EXPECT_TRUE(same("the name of " + layer, l.name(), layers[i].name));
    EXPECT_TRUE(same("the token of " + layer, l.token(), layers[i].token));
    EXPECT_TRUE(same("the output shape of " + layer, l.out_shape().str(), layers[i].out.str()));
  }
  const auto ps = net.params();
  ASSERT_EQ(ps.size(), params.size()) << "parameter tensors" << of;
  for (std::size_t i = 0; i < params.size(); ++i) {
    EXPECT_TRUE(same("the name of parameter " + std::to_string(i) + of, ps[i]->name, params[i].name));
    EXPECT_TRUE(same("the shape of " + params[i].name + of, TensorShape(ps[i]->value.shape).str(),
                     TensorShape(params[i].shape).str()));
  }
}

// The course's `cnn` on C x S x S input (S a multiple of 4): names, shapes, parameters. The padded
// 3x3 convs keep S x S, each pool2 halves it, so the flatten has 32 * (S/4)^2 values.
void expect_cnn_network(int C, int S) {
  const int flat = 32 * (S / 4) * (S / 4);
  expect_network(named_model_spec("cnn"), {C, S, S},
                 {{"conv1", "conv16k3p1", {16, S, S}},
                  {"relu1", "relu", {16, S, S}},
                  {"pool1", "pool2", {16, S / 2, S / 2}},
                  {"conv2", "conv32k3p1", {32, S / 2, S / 2}},
                  {"relu2", "relu", {32, S / 2, S / 2}},
                  {"pool2", "pool2", {32, S / 4, S / 4}},
                  {"flatten1", "flatten", {flat, 1, 1}},
                  {"fc1", "fc100", {100, 1, 1}},
                  {"relu3", "relu", {100, 1, 1}},
                  {"fc2", "fc10", {10, 1, 1}}},
                 {{"conv1.weight", {16, C, 3, 3}},
                  {"conv1.bias", {16}},
                  {"conv2.weight", {32, 16, 3, 3}},
                  {"conv2.bias", {32}},
                  {"fc1.weight", {100, flat}},
                  {"fc1.bias", {100}},
                  {"fc2.weight", {10, 100}},
                  {"fc2.bias", {10}}});
}
}  // namespace

// The course's `cnn` on Fashion-MNIST-shaped input: the flatten has 32 * 7 * 7 = 1568 values.
TEST(Task2_7_CnnNetwork, BuildsTheCnnModel) { expect_cnn_network(1, 28); }

// The same spec on CIFAR-shaped 3x32x32 input, and a spec with strides and padded pools.
TEST(Task2_7_CnnNetwork, BuildsOtherInputsAndStrides) {
  expect_cnn_network(3, 32);
  expect_network("conv6k5p2s2,tanh,pool3s2p1,conv4k1,flatten,fc10", {2, 11, 9},
                 {{"conv1", "conv6k5p2s2", {6, 6, 5}},
                  {"tanh1", "tanh", {6, 6, 5}},
                  {"pool1", "pool3s2p1", {6, 3, 3}},
                  {"conv2", "conv4k1", {4, 3, 3}},
                  {"flatten1", "flatten", {36, 1, 1}},
                  {"fc1", "fc10", {10, 1, 1}}},
                 {{"conv1.weight", {6, 2, 5, 5}},
                  {"conv1.bias", {6}},
                  {"conv2.weight", {4, 6, 1, 1}},
                  {"conv2.bias", {4}},
                  {"fc1.weight", {10, 36}},
                  {"fc1.bias", {10}}});
}

// He initialisation of a conv layer uses fan_in = C_in * K * K, and the weights
// are drawn in model order from Rng(seed): conv1.weight first.
TEST(Task2_7_CnnNetwork, HeInitUsesConvFanIn) {
  Network<float> net(parse_arch(named_model_spec("cnn")), {1, 28, 28}, 10, make_cnn_layer<float>);
  EXPECT_EQ(net.layers()[0]->fan_in(), 1 * 3 * 3) << "conv1's fan_in, C_in * K * K";
  EXPECT_EQ(net.layers()[3]->fan_in(), 16 * 3 * 3) << "conv2's fan_in, C_in * K * K";
  net.init(42);
  // conv1.weight must be the first 144 draws of Rng(42) with sd sqrt(2 / 9); what it is when fan_in
  // leaves out the kernel (C_in) or counts the outputs (C_out * K * K):
  const auto draws = [](double fan_in) {
    std::vector<float> w(16 * 9);
    Rng(42).fill_normal(w.data(), w.size(), std::sqrt(2.0 / fan_in));
    return std::vector<double>(w.begin(), w.end());
  };
  const std::vector<double> want = draws(9);
  EXPECT_TRUE(testkit::tensor_matches("conv1.weight after init(42): the first 144 draws of Rng(42), sd sqrt(2 / 9)",
                                      testkit::parameter_shape(net.params()[0]->value.shape),
                                      net.params()[0]->value.data, want, testkit::kExact,
                                      {{"fan_in = C_in = 1 (the K*K taps left out)", draws(1)},
                                       {"fan_in = C_out*K*K = 144 (the outputs counted)", draws(144)}}));
}

// Stage 02 on the MLP is stage 01: the same seed gives bit-identical losses and
// parameters after some training steps.
TEST(Task2_7_CnnNetwork, MlpMatchesStage01BitForBit) {
  const Dataset train = make_synthetic(320, {1, 28, 28}, 10, 3);
  const EngineConfig cfg = testkit::sgd_config(named_model_spec("mlp"), train.shape, 32, 0.05);
  Network<float> stage01(cfg.arch, cfg.input, cfg.classes);
  Network<float> stage02(cfg.arch, cfg.input, cfg.classes, make_cnn_layer<float>);
  stage01.init(cfg.seed);
  stage02.init(cfg.seed);
  std::vector<double> losses01, losses02;
  train_epoch(stage01, train, cfg, 0, [&](long, double loss) { losses01.push_back(loss); });
  train_epoch(stage02, train, cfg, 0, [&](long, double loss) { losses02.push_back(loss); });
  ASSERT_EQ(losses01.size(), 10u);
  ASSERT_EQ(losses02.size(), 10u) << "stage 02's network: batches seen in one epoch of 320 examples in batches of 32";
  EXPECT_TRUE(testkit::tensor_matches("stage 02's running loss sums of the MLP, against stage 01's", {{"batch", 10}},
                                      losses02, losses01, testkit::kExact));
  const auto p01 = stage01.params(), p02 = stage02.params();
  ASSERT_EQ(p01.size(), p02.size());
  for (std::size_t i = 0; i < p01.size(); ++i) {
    EXPECT_EQ(p01[i]->name, p02[i]->name);
    EXPECT_TRUE(testkit::tensor_matches("stage 02's " + p01[i]->name + " after 10 steps, against stage 01's",
                                        testkit::parameter_shape(p01[i]->value.shape), p02[i]->value.data,
                                        p01[i]->value.data, testkit::kExact));
  }
}

// Stage 01's training loop trains a CNN: on the synthetic set the loss falls
// and the test accuracy rises well above chance (10%). Small pictures keep it quick
// (a learner's save reruns it): 14x14 gave 97% after 3 epochs, the loss 2.27 -> 0.28.
TEST(Task2_7_CnnTraining, LossFallsAndAccuracyRises) {
  const Dataset train = make_synthetic(512, {1, 14, 14}, 10, 1);
  const Dataset test = make_synthetic(256, {1, 14, 14}, 10, 2);
  const EngineConfig cfg =
      testkit::sgd_config("conv8k3p1,relu,pool2,conv16k3p1,relu,pool2,flatten,fc10", train.shape, 32, 0.02);
  CpuEngine engine(cfg, make_cnn_layer<float>);
  const EpochStats before = engine.evaluate(test, nullptr);
  double first_loss = 0, last_loss = 0;
  for (int epoch = 0; epoch < 3; ++epoch) {
    const EpochStats s = engine.train_epoch(train, epoch, {});
    ASSERT_EQ(s.seen, train.size());
    (epoch == 0 ? first_loss : last_loss) = s.loss_sum / s.seen;
  }
  const EpochStats after = engine.evaluate(test, nullptr);
  const double acc_before = double(before.correct) / before.seen, acc_after = double(after.correct) / after.seen;
  EXPECT_LT(last_loss, 0.5 * first_loss) << "the CNN's mean training loss did not fall to half: epoch 0 " << first_loss
                                         << ", epoch 2 " << last_loss << " (Tasks 2.1 to 2.7 and stage 01 all take part)";
  EXPECT_GT(acc_after, acc_before + 0.3) << "the CNN's test accuracy did not rise by 0.3 from " << acc_before;
  EXPECT_GT(acc_after, 0.8) << "the CNN's test accuracy after 3 epochs";
}
