// The practice's network on stage 01: sigmoid outputs trained with MSE (--output sigmoid
// --loss mse), leaky ReLU with another slope (--leaky-slope), and the MAE the engine reports.
// The gradient of the MSE through the sigmoid, dL/dz = 2 (a - t) a (1 - a) / (B K), is
// checked against central differences, and against the formula itself.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "01_fc_softmax/cpu_engine.hpp"
#include "01_fc_softmax/loss.hpp"
#include "01_fc_softmax/network.hpp"
#include "course_test.hpp"

using namespace course;

namespace {

// Random biases (He init leaves them 0) exercise db; the labels and inputs are seeded.
void randomize_biases(Network<double>& net) {
  for (auto* p : net.params())
    if (p->name.find("bias") != std::string::npos) p->value.data = testkit::random_vector(p->value.size(), 3);
}

}  // namespace

// The whole network, every parameter and the input: dense layers, tanh, leaky ReLU of
// slope 0.1, the sigmoid output and the MSE against one-hot targets.
TEST(Stage01_SigmoidOutput, GradientThroughSigmoidAndMse) {
  const int B = 5, K = 3;
  const Shape3 input{6, 1, 1};
  Network<double> net(with_output_activation(parse_arch("fc8,tanh,fc6,leaky0.1,fc3"), "sigmoid"), input, K);
  net.init(21);
  randomize_biases(net);
  auto x = testkit::random_vector(std::size_t(B) * input.size(), 22);
  const auto labels = testkit::random_labels(B, K, 23);

  auto loss = [&] {
    const double* a = net.forward(x.data(), B);
    std::vector<double> scratch(B * K);
    return mse_forward_backward(a, labels.data(), scratch.data(), B, K);
  };
  std::vector<double> da(B * K), dx(x.size());
  const double* a = net.forward(x.data(), B);
  for (int i = 0; i < B * K; ++i) ASSERT_TRUE(a[i] > 0 && a[i] < 1) << "the outputs are the sigmoid's, in (0, 1)";
  mse_forward_backward(a, labels.data(), da.data(), B, K);
  net.backward(da.data(), B, dx.data());

  GradCheckOptions opt;
  opt.tolerance = 1e-5;
  opt.tiny = 1e-5;
  for (auto* p : net.params()) {
    const std::vector<double> analytic = p->grad.data;
    EXPECT_GRADIENT_OK(check_gradient("d" + p->name, p->value.ptr(), p->value.shape, analytic.data(), loss, opt));
  }
  EXPECT_GRADIENT_OK(check_gradient("dinput", x.data(), {B, 6}, dx.data(), loss, opt));
}

// dL/dz of the last dense layer is 2 (a - t) a (1 - a) / (B K): the bias gradient of that
// layer is its sum over the batch.
TEST(Stage01_SigmoidOutput, GradientIsTheFormula) {
  const int B = 4, K = 3;
  const Shape3 input{5, 1, 1};
  Network<double> net(parse_arch("fc4,relu,fc3,sigmoid"), input, K);
  net.init(31);
  randomize_biases(net);
  const auto x = testkit::random_vector(std::size_t(B) * input.size(), 32);
  const auto labels = testkit::random_labels(B, K, 33);
  const double* a = net.forward(x.data(), B);
  std::vector<double> da(B * K);
  mse_forward_backward(a, labels.data(), da.data(), B, K);
  net.backward(da.data(), B);

  std::vector<double> want(K, 0.0), without_sigmoid(K, 0.0);
  for (int n = 0; n < B; ++n)
    for (int k = 0; k < K; ++k) {
      const double ank = a[n * K + k], t = k == labels[n] ? 1.0 : 0.0;
      want[k] += 2 * (ank - t) * ank * (1 - ank) / (B * K);
      without_sigmoid[k] += 2 * (ank - t) / (B * K);
    }
  const std::vector<double> got = net.params()[3]->grad.data;  // fc2.bias
  ASSERT_EQ(net.params()[3]->name, "fc2.bias");
  EXPECT_TRUE(testkit::tensor_matches("dL/db of fc2 = sum_n 2 (a - t) a (1 - a) / (B K)", {{"k", K}}, got, want,
                                      testkit::Tolerance{1e-15, 1e-12},
                                      {{"2 (a - t) / (B K): the sigmoid's derivative left out", without_sigmoid}}));
}

// The layer of a spec carries its slope: leaky0.1 multiplies negative inputs by 0.1.
TEST(Stage01_SigmoidOutput, LeakyLayerRunsItsSlope) {
  Network<double> net(parse_arch("fc2,leaky0.1,fc2"), {2, 1, 1}, 2);
  EXPECT_EQ(net.layers()[1]->token(), "leaky0.1");
  EXPECT_EQ(net.layers()[1]->name(), "leaky1");
  const double x[2] = {-3.0, 2.0};
  double y[2], dy[2] = {1.0, 1.0}, dx[2];
  net.layers()[1]->forward(x, y, 1);
  net.layers()[1]->backward(x, y, dy, dx, 1);
  EXPECT_DOUBLE_EQ(y[0], -0.3);
  EXPECT_DOUBLE_EQ(y[1], 2.0);
  EXPECT_DOUBLE_EQ(dx[0], 0.1);
  EXPECT_DOUBLE_EQ(dx[1], 1.0);
}

// The engine: refuses a sigmoid output with cross-entropy, trains the practice's network
// with MSE on a small set, and reports the MAE of the sigmoid outputs.
TEST(Stage01_SigmoidOutput, EngineTrainsAndReportsTheMae) {
  const Dataset train = make_synthetic(600, {1, 8, 8}, 3, 41);
  const Dataset test = make_synthetic(200, {1, 8, 8}, 3, 42);
  EngineConfig cfg;
  cfg.arch = with_output_activation(with_leaky_slope(parse_arch("fc16,leaky,fc8,leaky,fc3"), 0.1), "sigmoid");
  cfg.input = train.shape;
  cfg.classes = 3;
  cfg.batch = 32;
  cfg.lr = 0.5;
  cfg.momentum = 0.9;
  cfg.seed = 43;
  EXPECT_THROW(CpuEngine{cfg}, std::invalid_argument) << "a sigmoid output with cross-entropy";
  cfg.loss = "mse";
  CpuEngine engine(cfg);
  EXPECT_TRUE(engine.reports_mae());
  const EpochStats before = engine.evaluate(test, nullptr);
  EpochStats first, last;
  for (int epoch = 0; epoch < 4; ++epoch) (epoch == 0 ? first : last) = engine.train_epoch(train, epoch, {});
  const EpochStats after = engine.evaluate(test, nullptr);
  const double mae_before = before.abs_error_sum / before.seen, mae_after = after.abs_error_sum / after.seen;
  EXPECT_GT(mae_before, 0.0);
  EXPECT_LT(mae_before, 1.0) << "sigmoid outputs against 0/1 targets differ by less than 1";
  EXPECT_LT(mae_after, mae_before) << "the MAE of the test set did not fall";
  EXPECT_LT(last.abs_error_sum / last.seen, first.abs_error_sum / first.seen) << "the training MAE did not fall";
  EXPECT_GT(static_cast<double>(after.correct) / after.seen, 0.8) << "test accuracy after 4 epochs";
  // The MAE of a batch is at least its MSE (|d| >= d^2 for |d| <= 1): a cheap sanity check of the two sums.
  EXPECT_GE(after.abs_error_sum, after.loss_sum);
}
