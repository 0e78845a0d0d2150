// Task 8.6: the last dense layer and the loss in one kernel, forward and backward,
// against stage 01's dense layer, loss and dense backward in double: the summed
// loss, the correct count, the predictions, and the gradients dW, db (added over
// the kernel's slices) and dx.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "01_fc_softmax/dense.hpp"
#include "01_fc_softmax/loss.hpp"
#include "01_fc_softmax/train.hpp"
#include "08_fused/fused_kernels.hpp"
#include "course_test.hpp"
#include "s08_support.hpp"

using namespace course;
using namespace course::s08test;

namespace {

struct HeadCase {
  int B, IN, K;
  FusedLoss loss;
  bool dx;
  std::string describe() const {
    return "batch " + std::to_string(B) + ", " + std::to_string(IN) + " -> " + std::to_string(K) +
           (loss == FusedLoss::Mse ? ", mse" : ", cross-entropy") + (dx ? "" : ", no dx");
  }
};

void check_head(const HeadCase& c, bool train) {
  const std::string context = c.describe() + (train ? "" : ", forward only");
  const std::vector<float> hx = gputest::random_floats(static_cast<std::size_t>(c.B) * c.IN, 151),
                           hw = gputest::random_floats(static_cast<std::size_t>(c.K) * c.IN, 152),
                           hb = gputest::random_floats(static_cast<std::size_t>(c.K), 153);
  const std::vector<int> labels = testkit::random_labels(c.B, c.K, 154);
  // The kernel runs before the reference, so that with every hole open (the exercise proof)
  // Task 8.6's own code fails first, not stage 01's tasks the reference is made of.
  const DeviceBuffer<float> gx = gputest::to_device(hx), gw = gputest::to_device(hw), gb = gputest::to_device(hb);
  const DeviceBuffer<int> glabels = gputest::to_device(labels);
  DeviceBuffer<double> loss_sum = gputest::to_device(std::vector<double>{0.0});
  DeviceBuffer<unsigned long long> gcorrect = gputest::to_device(std::vector<unsigned long long>{0});
  DeviceBuffer<int> gpredicted = gputest::to_device(std::vector<int>(static_cast<std::size_t>(c.B), -1));
  const int blocks = (c.B + kHeadRows - 1) / kHeadRows;
  DeviceBuffer<float> gdw = poisoned<float>(static_cast<std::size_t>(blocks) * hw.size());
  DeviceBuffer<float> gdb = poisoned<float>(static_cast<std::size_t>(blocks) * hb.size());
  DeviceBuffer<float> gdx = poisoned<float>(c.dx ? hx.size() : 0);
  const HeadArgs a = plan_softmax_head(c.B, c.IN, c.K, c.loss, gx.get(), gw.get(), gb.get(), glabels.get(),
                                       loss_sum.get(), gcorrect.get(), gpredicted.get(), train, gdw.get(), gdb.get(),
                                       c.dx ? gdx.get() : nullptr);
  ASSERT_EQ(a.blocks, blocks) << context << ": blocks planned (left), ceil(B / " << kHeadRows << ") (right)";
  softmax_head_gpu(a);
  // The reference: stage 01's layer, loss and backward.
  const std::vector<double> x = to_double(hx), w = to_double(hw);
  std::vector<double> z(static_cast<std::size_t>(c.B) * c.K), probs(z.size()), dz(z.size());
  dense_forward(x.data(), w.data(), to_double(hb).data(), z.data(), c.B, c.IN, c.K);
  const double mean_loss = loss_forward_backward(c.loss == FusedLoss::Mse ? "mse" : "cross-entropy", z.data(),
                                                 labels.data(), probs.data(), dz.data(), c.B, c.K);
  std::vector<double> dw(hw.size()), db(hb.size()), dx(hx.size());
  dense_backward(x.data(), w.data(), dz.data(), dw.data(), db.data(), dx.data(), c.B, c.IN, c.K);
  long correct = 0, near_ties = 0;
  std::vector<int> predicted(static_cast<std::size_t>(c.B));
  std::vector<bool> near_tie(static_cast<std::size_t>(c.B), false);  // two logits within the float rounding of each other
  for (int n = 0; n < c.B; ++n) {
    const double* zn = z.data() + static_cast<long>(n) * c.K;
    const int best = argmax(zn, c.K);
    predicted[static_cast<std::size_t>(n)] = best;
    correct += best == labels[static_cast<std::size_t>(n)];
    for (int k = 0; k < c.K; ++k)
      if (k != best && zn[best] - zn[k] < 1e-4) near_tie[static_cast<std::size_t>(n)] = true;
    near_ties += near_tie[static_cast<std::size_t>(n)];
  }

  const double got_loss = to_host(loss_sum)[0];
  EXPECT_NEAR(got_loss, mean_loss * c.B, 1e-5 * c.B + 1e-5 * std::fabs(mean_loss * c.B))
      << context << ": summed loss (first), stage 01's mean loss times B (second)";
  const std::vector<int> got_predicted = to_host(gpredicted);
  int differ = 0;
  std::string which;  // the first rows that differ
  for (int n = 0; n < c.B; ++n)
    if (!near_tie[static_cast<std::size_t>(n)] &&
        got_predicted[static_cast<std::size_t>(n)] != predicted[static_cast<std::size_t>(n)] && differ++ < 4)
      which += "\n    at [" + std::to_string(n) + "]: expected " +
               std::to_string(predicted[static_cast<std::size_t>(n)]) + ", actual " +
               std::to_string(got_predicted[static_cast<std::size_t>(n)]);
  EXPECT_EQ(differ, 0) << context << ": predictions [n=" << c.B << "] (the first arg-max of the logits) away from "
                       << "near-ties: " << differ << " differ" << which;
  const long got_correct = static_cast<long>(to_host(gcorrect)[0]);
  EXPECT_LE(std::labs(got_correct - correct), near_ties)
      << context << ": correct count " << got_correct << ", stage 01's " << correct << " (" << near_ties
      << " rows are near-ties, which may go either way)";
  if (!train) return;
  EXPECT_TRUE(close("dW (" + context + ")", sum_slices(to_host(gdw), a.blocks, hw.size()), dw,
                    {{"k", c.K}, {"i", c.IN}}, sum_atol(c.B)));
  EXPECT_TRUE(
      close("db (" + context + ")", sum_slices(to_host(gdb), a.blocks, hb.size()), db, {{"k", c.K}}, sum_atol(c.B)));
  if (c.dx) {
    EXPECT_TRUE(close("dx (" + context + ")", to_host(gdx), dx, {{"n", c.B}, {"i", c.IN}}, sum_atol(c.K)));
  }
}

std::vector<HeadCase> head_cases() {
  return {{64, 100, 10, FusedLoss::CrossEntropy, true},   // fc2 of cnn
          {64, 128, 10, FusedLoss::CrossEntropy, true},   // fc3 of the mlp
          {64, 784, 10, FusedLoss::CrossEntropy, false},  // flatten,fc10: the head is the first layer
          {1, 7, 3, FusedLoss::CrossEntropy, true},
          {37, 50, 10, FusedLoss::Mse, true},             // a last block of 5 rows
          {64, 33, 17, FusedLoss::CrossEntropy, true}};
}

}  // namespace

TEST(Task8_6_SoftmaxHead, TrainingStepMatchesStage01) {
  SKIP_WITHOUT_GPU();
  for (const HeadCase& c : head_cases()) check_head(c, true);
}

TEST(Task8_6_SoftmaxHead, EvaluationMatchesStage01) {
  SKIP_WITHOUT_GPU();
  for (const HeadCase& c : head_cases()) check_head(c, false);
}
