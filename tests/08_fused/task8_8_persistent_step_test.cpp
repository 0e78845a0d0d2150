// Task 8.8: the persistent kernel runs the phases of a step in order, every block
// done with one phase before any starts the next, and the whole training step in
// it gives the bits of the same step as separate kernels (the CUDA graph).
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "08_fused/fused_step.hpp"
#include "08_fused/fused_kernels.hpp"
#include "common/data/data.hpp"
#include "common/core/rng.hpp"
#include "cnn_comparison.hpp"
#include "s08_support.hpp"

using namespace course;
using namespace course::s08test;

// Two phases: a gather of 8 rows of 1000 values (32 blocks), then an update whose
// gradient is the gathered batch (32 blocks too). Launched on 3 blocks, each block
// runs 10 or 11 virtual blocks of each phase: an update that started before the
// other blocks had gathered their rows would read stale values.
TEST(Task8_8_PersistentStep, EachPhaseSeesEverythingThePhaseBeforeWrote) {
  SKIP_WITHOUT_GPU();
  constexpr int kExamples = 40, kBatch = 8;
  constexpr long long kD = 1000;
  const std::vector<float> images = gputest::random_floats(static_cast<std::size_t>(kExamples * kD), 181);
  std::vector<int> labels(kExamples), order(kExamples);
  std::iota(labels.begin(), labels.end(), 0);
  std::iota(order.begin(), order.end(), 0);
  Rng rng(182, 1);
  for (int i = kExamples - 1; i > 0; --i) std::swap(order[static_cast<std::size_t>(i)], order[rng.below(static_cast<std::uint64_t>(i + 1))]);
  const DeviceBuffer<float> d_images = gputest::to_device(images);
  const DeviceBuffer<int> d_labels = gputest::to_device(labels), d_order = gputest::to_device(order);
  DeviceBuffer<int> step = gputest::to_device(std::vector<int>{2});  // batch 2 of the epoch: rows 16 to 23 of the order
  DeviceBuffer<float> x = poisoned<float>(kBatch * kD);
  DeviceBuffer<int> y = gputest::to_device(std::vector<int>(kBatch, -1));
  DeviceBuffer<float> w = gputest::to_device(std::vector<float>(kBatch * kD, 0.f)), v = gputest::to_device(std::vector<float>(kBatch * kD, 0.f));
  const DeviceBuffer<float> hyper = gputest::to_device(std::vector<float>{0.5f, 0.9f});
  const DeviceBuffer<SgdTensor> tensors = gputest::to_device(std::vector<SgdTensor>{{0, kBatch * kD, x.get(), 1}});

  std::vector<FusedPhase> phases(2);
  phases[0].kind = PhaseKind::Gather;
  phases[0].gather = GatherArgs{d_images.get(), d_labels.get(), d_order.get(), step.get(), kBatch, kBatch, kD,
                                x.get(), y.get(), static_cast<int>((kBatch * kD + kFusedThreads - 1) / kFusedThreads)};
  phases[1].kind = PhaseKind::Sgd;  // planned by hand, so that this test needs no other task than 8.8
  phases[1].sgd = SgdArgs{w.get(), v.get(), tensors.get(), 1, kBatch * kD, hyper.get(), step.get(),
                          static_cast<int>((kBatch * kD + kFusedThreads - 1) / kFusedThreads), nullptr, nullptr, 0};
  const DeviceBuffer<FusedPhase> d_phases = gputest::to_device(phases);
  persistent_step_gpu(d_phases.get(), 2, 3, 0);

  const std::vector<float> got_w = to_host(w), got_x = to_host(x);
  const std::vector<int> got_y = to_host(y);
  // What batch b of the order would put in x, y and w (w = -lr x, lr 0.5, from w = v = 0).
  auto batch = [&](int b, std::vector<float>* xs, std::vector<int>* ys, std::vector<float>* ws) {
    for (int r = 0; r < kBatch; ++r) {
      const int e = order[static_cast<std::size_t>(b * kBatch + r)];
      ys->push_back(e);
      for (long long d = 0; d < kD; ++d) {
        xs->push_back(images[static_cast<std::size_t>(e * kD + d)]);
        ws->push_back(-0.5f * xs->back());
      }
    }
  };
  std::vector<float> want_x, want_w;
  std::vector<int> want_y;
  batch(2, &want_x, &want_y, &want_w);
  std::vector<testkit::KnownSlip> x_slips, w_slips;
  for (int other : {1, 3}) {  // the step counter read before or after it moved
    std::vector<float> ox, ow;
    std::vector<int> oy;
    batch(other, &ox, &oy, &ow);
    const std::string what = "the batch of step " + std::to_string(other);
    x_slips.push_back({what, {ox.begin(), ox.end()}});
    w_slips.push_back({"an update from " + what, {ow.begin(), ow.end()}});
  }
  const TensorShape rows{{"row", kBatch}, {"d", static_cast<int>(kD)}};
  const testkit::Tolerance exact{0, 0};  // the same values (-0 and 0 alike)
  EXPECT_TRUE(testkit::tensor_matches("y, the labels of batch 2 (label e for example e)", {{"row", kBatch}}, got_y,
                                      want_y, exact));
  EXPECT_TRUE(
      testkit::tensor_matches("x, the examples of batch 2 gathered in phase 1", rows, got_x, want_x, exact, x_slips));
  EXPECT_TRUE(
      testkit::tensor_matches("w after phase 2's update (w = -lr x, lr 0.5): a block that updated before "
                              "the gather was done reads stale x",
                              rows, got_w, want_w, exact, w_slips));
  EXPECT_EQ(to_host(step)[0], 3) << "the step counter, 2 before: the update advances it once";
}

// The whole step in one persistent kernel against the CUDA graph: the same device
// functions on the same partial sums in the same order, so two epochs of cnn (15
// full batches of 64 and a last one of 40 each) end with the same bits.
TEST(Task8_8_PersistentStep, TrainsTheSameBitsAsTheGraph) {
  SKIP_WITHOUT_GPU();
  const Dataset train = make_synthetic(1000, {1, 28, 28}, 10, 191);
  const EngineConfig cfg = testkit::comparison_config(named_model_spec("cnn"), {1, 28, 28}, 64, 0.05);
  const std::unique_ptr<GpuEngine> graph_owned = make_fused_engine(cfg, FusedOptions{true, false}),
                                   persistent_owned = make_fused_engine(cfg, FusedOptions{false, true});
  GpuEngine &graph = *graph_owned, &persistent = *persistent_owned;
  ASSERT_TRUE(fused_step(persistent).persistent_enabled()) << "FusedOptions{false, true} asked for the persistent kernel";
  EXPECT_EQ(fused_step(persistent).kernels_per_step(), 1) << "kernels launched per step by the persistent kernel";
  EXPECT_GT(fused_step(persistent).persistent_grid(), 0) << "blocks of the persistent kernel's grid";
  for (int epoch = 0; epoch < 2; ++epoch) {
    const EpochStats a = graph.train_epoch(train, epoch, {});
    const EpochStats b = persistent.train_epoch(train, epoch, {});
    EXPECT_EQ(a.correct, b.correct) << "epoch " << epoch << ": correct count of the graph (left), the persistent "
                                    << "kernel (right)";
    EXPECT_NEAR(a.loss_sum, b.loss_sum, 1e-9 * a.loss_sum)
        << "epoch " << epoch << ": loss sum of the graph (first), the persistent kernel (second) (summed with atomics)";
  }
  testkit::expect_same_parameters(persistent.get_parameters(), graph.get_parameters(),
                                  "after 2 epochs in the persistent kernel (expected: the graph's)");
}
