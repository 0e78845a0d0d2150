// Task 8.8: the persistent kernel runs the phases of a step in order, every block
// done with one phase before any starts the next, and the whole training step in
// it gives the bits of the same step as separate kernels (the CUDA graph).
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "08_fused/fused_engine.hpp"
#include "08_fused/fused_kernels.hpp"
#include "common/data.hpp"
#include "common/rng.hpp"
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
  for (int r = 0; r < kBatch; ++r) {
    const int e = order[static_cast<std::size_t>(2 * kBatch + r)];
    EXPECT_EQ(got_y[static_cast<std::size_t>(r)], e) << "label of row " << r;
    long wrong = 0;
    for (long long d = 0; d < kD; ++d) {
      const float want = images[static_cast<std::size_t>(e * kD + d)];
      wrong += got_x[static_cast<std::size_t>(r * kD + d)] != want || got_w[static_cast<std::size_t>(r * kD + d)] != -0.5f * want;
    }
    EXPECT_EQ(wrong, 0) << "row " << r << " (example " << e << "): values gathered or updated wrongly (w = -lr x)";
  }
  EXPECT_EQ(to_host(step)[0], 3) << "the update advances the step counter once";
}

// The whole step in one persistent kernel against the CUDA graph: the same device
// functions on the same partial sums in the same order, so two epochs of cnn (15
// full batches of 64 and a last one of 40 each) end with the same bits.
TEST(Task8_8_PersistentStep, TrainsTheSameBitsAsTheGraph) {
  SKIP_WITHOUT_GPU();
  const Dataset train = make_synthetic(1000, {1, 28, 28}, 10, 191);
  EngineConfig cfg;
  cfg.arch = parse_arch(named_model_spec("cnn"));
  cfg.input = {1, 28, 28};
  cfg.classes = 10;
  cfg.batch = 64;
  cfg.lr = 0.05;
  cfg.seed = 7;
  FusedEngine graph(cfg, FusedOptions{true, false}), persistent(cfg, FusedOptions{false, true});
  ASSERT_TRUE(persistent.persistent_enabled());
  EXPECT_EQ(persistent.kernels_per_step(), 1);
  EXPECT_GT(persistent.persistent_grid(), 0);
  for (int epoch = 0; epoch < 2; ++epoch) {
    const EpochStats a = graph.train_epoch(train, epoch, {});
    const EpochStats b = persistent.train_epoch(train, epoch, {});
    EXPECT_EQ(a.correct, b.correct) << "epoch " << epoch;
    EXPECT_NEAR(a.loss_sum, b.loss_sum, 1e-9 * a.loss_sum) << "epoch " << epoch << " (summed with atomics)";
  }
  const auto p = graph.get_parameters(), q = persistent.get_parameters();
  ASSERT_EQ(p.size(), q.size());
  for (std::size_t i = 0; i < p.size(); ++i) {
    std::size_t differ = 0;
    for (std::size_t k = 0; k < p[i].tensor.size(); ++k) differ += p[i].tensor.data[k] != q[i].tensor.data[k];
    EXPECT_EQ(differ, 0u) << p[i].name << ": " << differ << " of " << p[i].tensor.size() << " values differ";
  }
}
