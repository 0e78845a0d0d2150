// Task 4.8: softmax cross-entropy and MSE on the device (loss sum, gradient,
// correct count, predictions) against stage 01's loss.hpp and argmax.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "01_fc_softmax/loss.hpp"
#include "01_fc_softmax/train.hpp"
#include "04_cuda_matmul/mlp_kernels.hpp"
#include "course_test.hpp"
#include "gpu_testkit.hpp"
#include "tensor_check.hpp"

using namespace course;
using namespace course::gputest;

namespace {

// What the loss kernels leave on the device, copied back.
struct LossResult {
  double loss_sum = 0;
  unsigned long long correct = 0;
  std::vector<int> predictions;
  std::vector<float> dlogits;
};

enum class Loss { CrossEntropy, Mse };

LossResult run_gpu(Loss which, const std::vector<float>& logits, const std::vector<int>& labels, int B, int K,
                   bool want_gradient = true) {
  DeviceBuffer<float> z = to_device(logits), dz(logits.size());
  DeviceBuffer<int> y = to_device(labels), pred(static_cast<std::size_t>(B));
  DeviceBuffer<double> loss_sum(1);
  DeviceBuffer<unsigned long long> correct(1);
  CUDA_CHECK(cudaMemset(loss_sum.get(), 0, sizeof(double)));
  CUDA_CHECK(cudaMemset(correct.get(), 0, sizeof(unsigned long long)));
  float* grad = want_gradient ? dz.get() : nullptr;
  if (which == Loss::CrossEntropy)
    softmax_cross_entropy_gpu(z.get(), y.get(), B, K, grad, loss_sum.get(), correct.get(), pred.get());
  else
    mse_gpu(z.get(), y.get(), B, K, grad, loss_sum.get(), correct.get(), pred.get());
  LossResult r;
  r.loss_sum = to_host(loss_sum)[0];
  r.correct = to_host(correct)[0];
  r.predictions = to_host(pred);
  if (want_gradient) r.dlogits = to_host(dz);
  return r;
}

// Stage 01's predictions and correct count for the same logits.
void expect_same_predictions(const LossResult& r, const std::vector<float>& logits, const std::vector<int>& labels,
                             int B, int K) {
  long correct = 0;
  std::vector<int> want(static_cast<std::size_t>(B));
  for (int n = 0; n < B; ++n) {
    want[static_cast<std::size_t>(n)] = argmax(logits.data() + static_cast<long>(n) * K, K);
    correct += want[static_cast<std::size_t>(n)] == labels[static_cast<std::size_t>(n)];
  }
  EXPECT_TRUE(testkit::tensor_matches("predictions (the first arg-max of each row of logits), B = " + std::to_string(B),
                                      {{"n", B}}, r.predictions, want, testkit::Tolerance{0, 0}));
  EXPECT_EQ(static_cast<long>(r.correct), correct)
      << "correct count, B = " << B << ": the GPU counted " << r.correct << ", stage 01's argmax gives " << correct;
}

}  // namespace

TEST(Task4_8_LossGpu, SoftmaxCrossEntropyMatchesStage01) {
  SKIP_WITHOUT_GPU();
  for (const int B : {1, 37, 256}) {
    const int K = 10;
    const std::vector<float> logits = random_floats(static_cast<std::size_t>(B) * K, 81 + B, -5.0, 5.0);
    const std::vector<int> labels = testkit::random_labels(B, K, 82 + B);
    const LossResult r = run_gpu(Loss::CrossEntropy, logits, labels, B, K);

    std::vector<float> probs(logits.size()), dz(logits.size());
    const float mean = softmax_cross_entropy_forward(logits.data(), labels.data(), probs.data(), B, K);
    softmax_cross_entropy_backward(probs.data(), labels.data(), dz.data(), B, K);
    EXPECT_NEAR(r.loss_sum / B, mean, 1e-5 * std::fabs(mean) + 1e-6) << "mean loss, B = " << B;
    EXPECT_TRUE(
        close_enough("dlogits, B = " + std::to_string(B), r.dlogits, dz, {{"n", B}, {"k", K}}, 1e-8, 1e-5, 1e-5));
    expect_same_predictions(r, logits, labels, B, K);
  }
}

// Logits of +-1000 overflow e^z unless the row maximum is subtracted first.
TEST(Task4_8_LossGpu, SoftmaxCrossEntropyStableForHugeLogits) {
  SKIP_WITHOUT_GPU();
  const std::vector<float> logits = {1000.f, -1000.f, 0.f, -1000.f, -1000.f, 1000.f};
  const std::vector<int> labels = {1, 2};
  const LossResult r = run_gpu(Loss::CrossEntropy, logits, labels, 2, 3);
  ASSERT_TRUE(std::isfinite(r.loss_sum)) << "loss sum = " << r.loss_sum;
  EXPECT_NEAR(r.loss_sum, 2000.0, 1e-2) << "loss sum: example 0 pays 2000 nats, example 1 none";
  for (std::size_t i = 0; i < r.dlogits.size(); ++i)
    EXPECT_TRUE(std::isfinite(r.dlogits[i]))
        << "dlogits[" << i / 3 << "][" << i % 3 << "] of shape [n=2, k=3] is " << r.dlogits[i];
  EXPECT_NEAR(r.dlogits[0], 0.5f, 1e-6f) << "dlogits[0][0] of [n=2, k=3]: (p - y) / B with p = 1, y = 0, B = 2";
  EXPECT_NEAR(r.dlogits[1], -0.5f, 1e-6f) << "dlogits[0][1] of [n=2, k=3]: (p - y) / B with p = 0, y = 1, B = 2";
  EXPECT_EQ(r.correct, 1u) << "correct count: example 1 is right, example 0 wrong";
}

// Evaluation passes no gradient buffer: the sums and predictions must not change.
TEST(Task4_8_LossGpu, NullGradientForEvaluation) {
  SKIP_WITHOUT_GPU();
  const int B = 50, K = 10;
  const std::vector<float> logits = random_floats(static_cast<std::size_t>(B) * K, 83, -3.0, 3.0);
  const std::vector<int> labels = testkit::random_labels(B, K, 84);
  const LossResult with = run_gpu(Loss::CrossEntropy, logits, labels, B, K, true);
  const LossResult without = run_gpu(Loss::CrossEntropy, logits, labels, B, K, false);
  EXPECT_NEAR(without.loss_sum, with.loss_sum, 1e-6 * std::fabs(with.loss_sum))
      << "loss sum without a gradient buffer against the loss sum with one";
  EXPECT_EQ(without.correct, with.correct) << "correct count without a gradient buffer against with one";
  EXPECT_TRUE(testkit::tensor_matches("predictions without a gradient buffer (expected: those with one)", {{"n", B}},
                                      without.predictions, with.predictions, testkit::Tolerance{0, 0}));
}

TEST(Task4_8_LossGpu, MeanSquaredErrorMatchesStage01) {
  SKIP_WITHOUT_GPU();
  for (const int B : {1, 37}) {
    const int K = 10;
    const std::vector<float> outputs = random_floats(static_cast<std::size_t>(B) * K, 85 + B, -1.0, 2.0);
    const std::vector<int> labels = testkit::random_labels(B, K, 86 + B);
    const LossResult r = run_gpu(Loss::Mse, outputs, labels, B, K);

    std::vector<float> dz(outputs.size());
    const float mean = mse_forward_backward(outputs.data(), labels.data(), dz.data(), B, K);
    EXPECT_NEAR(r.loss_sum / B, mean, 1e-5 * std::fabs(mean) + 1e-7) << "mean loss, B = " << B;
    EXPECT_TRUE(
        close_enough("dlogits, B = " + std::to_string(B), r.dlogits, dz, {{"n", B}, {"k", K}}, 1e-8, 1e-5, 1e-5));
    expect_same_predictions(r, outputs, labels, B, K);
  }
}
