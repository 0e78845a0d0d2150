// Task 6.8: the loss from cuDNN's log-softmax and the small kernel, against
// stage 01's softmax_cross_entropy_forward and _backward.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "01_fc_softmax/loss.hpp"
#include "01_fc_softmax/train.hpp"
#include "06_cudnn/loss_cudnn.hpp"
#include "course_test.hpp"
#include "s06_support.hpp"

using namespace course;
using namespace course::s06test;

namespace {

struct LossOut {
  std::vector<double> dlogits;
  double loss_sum = 0;
  unsigned long long correct = 0;
  std::vector<int> predictions;
};

// Runs log_softmax_cudnn and nll_from_log_softmax_gpu on B rows of K logits.
// The sums start from a non-zero value: the kernel adds to them, it does not overwrite.
LossOut run_gpu_loss(const TestGpu& gpu, const std::vector<double>& logits, const std::vector<int>& labels, int B,
                     int K, double start_sum, unsigned long long start_correct) {
  TensorDescriptor rows;
  test_nchw(rows, B, K, 1, 1);
  const auto z = to_device(logits);
  auto log_probs = filled(logits.size(), -99.f), dlogits = filled(logits.size(), -99.f);
  DeviceBuffer<int> y, predictions(static_cast<std::size_t>(B));
  y.upload(labels);
  DeviceBuffer<double> loss_sum;
  loss_sum.upload(std::vector<double>{start_sum});
  DeviceBuffer<unsigned long long> correct;
  correct.upload(std::vector<unsigned long long>{start_correct});
  log_softmax_cudnn(gpu.h(), rows, z.get(), log_probs.get());
  nll_from_log_softmax_gpu(log_probs.get(), y.get(), B, K, dlogits.get(), loss_sum.get(), correct.get(),
                           predictions.get(), gpu.stream());
  LossOut out;
  out.dlogits = to_host(dlogits);
  out.loss_sum = loss_sum.download()[0];
  out.correct = correct.download()[0];
  out.predictions = predictions.download();
  return out;
}

void check_loss(int B, int K, double spread, std::uint64_t seed) {
  S06_SKIP_WITHOUT_GPU();
  const std::string what = "batch " + std::to_string(B) + " of " + std::to_string(K) + " classes, logits in +-" +
                           std::to_string(spread);
  TestGpu gpu;
  std::vector<double> z = testkit::random_vector(static_cast<std::size_t>(B) * K, seed);
  for (double& v : z) v *= spread;
  z = as_float_values(z);
  const std::vector<int> labels = testkit::random_labels(B, K, seed + 1);
  const LossOut got = run_gpu_loss(gpu, z, labels, B, K, 100.0, 5);

  std::vector<double> probs(z.size()), want_dlogits(z.size());
  const double mean_loss = softmax_cross_entropy_forward(z.data(), labels.data(), probs.data(), B, K);
  softmax_cross_entropy_backward(probs.data(), labels.data(), want_dlogits.data(), B, K);
  unsigned long long want_correct = 0;
  std::vector<int> want_predictions(static_cast<std::size_t>(B));
  for (int n = 0; n < B; ++n) {
    const int best = argmax(z.data() + static_cast<long>(n) * K, K);
    want_correct += best == labels[static_cast<std::size_t>(n)];
    want_predictions[static_cast<std::size_t>(n)] = best;
  }
  EXPECT_TRUE(testkit::tensor_matches("predictions (the first arg-max of each row), " + what, {{"n", B}},
                                      got.predictions, want_predictions, testkit::Tolerance{0, 0}));
  // Each row's loss is a float log-sum-exp: ~1e-6 of its size; the sum is kept in double.
  EXPECT_NEAR(got.loss_sum - 100.0, mean_loss * B, 2e-6 * B * std::max(1.0, mean_loss))
      << what << ": loss sum added to the 100 it started from (first), stage 01's (second)";
  EXPECT_EQ(got.correct - 5, want_correct) << what << ": correct count added to the 5 it started from (left)";
  EXPECT_TRUE(all_close("dlogits, " + what, got.dlogits, want_dlogits, {{"n", B}, {"k", K}}, 1e-7 / B + 1e-8, 1e-5));
}

}  // namespace

TEST(Task6_8_SoftmaxLoss, MatchesStage01) { check_loss(37, 10, 3.0, 81); }
TEST(Task6_8_SoftmaxLoss, FullBatchOfTheCnn) { check_loss(64, 10, 5.0, 82); }
TEST(Task6_8_SoftmaxLoss, ThreeClasses) { check_loss(5, 3, 2.0, 83); }

// Logits of +-80: e^80 overflows no float once the maximum is subtracted, and a
// confidently wrong row costs about 160, a large finite loss, not Inf or NaN.
TEST(Task6_8_SoftmaxLoss, LargeLogitsStayFinite) {
  S06_SKIP_WITHOUT_GPU();
  TestGpu gpu;
  const std::vector<double> z = {80, -80, 0, -80, 80, 0};
  const LossOut got = run_gpu_loss(gpu, z, {1, 1}, 2, 3, 0.0, 0);
  EXPECT_TRUE(std::isfinite(got.loss_sum)) << "loss sum " << got.loss_sum;
  EXPECT_NEAR(got.loss_sum, 160.0, 1e-3) << "loss sum: row 0 is wrong by 160 nats, row 1 right";
  EXPECT_EQ(got.correct, 1u) << "correct count: row 1 is right, row 0 wrong";
  EXPECT_NEAR(got.dlogits[0], 0.5, 1e-6) << "dlogits[0][0] of [n=2, k=3]: (p - y) / B with p = 1, y = 0, B = 2";
  EXPECT_NEAR(got.dlogits[1], -0.5, 1e-6) << "dlogits[0][1] of [n=2, k=3]: (p - y) / B with p = 0, y = 1, B = 2";
  for (std::size_t i = 0; i < got.dlogits.size(); ++i)
    EXPECT_TRUE(std::isfinite(got.dlogits[i]))
        << "dlogits[" << i / 3 << "][" << i % 3 << "] of [n=2, k=3] is " << got.dlogits[i];
}
