// The training step as one CUDA graph (lesson 06): the engine's given code that does it
// (common/gpu/step_capture.hpp, and the batch gather that follows the device's step counter,
// common/gpu/device_epoch.hpp), and the engine with and without the graph.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "cudnn_step_engine.hpp"
#include "common/data/data.hpp"
#include "common/gpu/device_epoch.hpp"
#include "common/gpu/step_capture.hpp"
#include "s06_support.hpp"
#include "tensor_check.hpp"

using namespace course;
using namespace course::s06test;

namespace {

// Ten examples of three values; example e holds 10e, 10e + 1, 10e + 2 and label e % 4.
constexpr int kExamples = 10, kD = 3, kBatch = 4;
const std::vector<int> kOrder = {7, 2, 9, 0, 5, 1, 8, 3, 6, 4};

struct TinySet {
  DeviceBuffer<float> images;
  DeviceBuffer<int> labels, order, step;
  DeviceBuffer<float> x;
  DeviceBuffer<int> y;
  TinySet() {
    std::vector<float> im(kExamples * kD);
    std::vector<int> lab(kExamples);
    for (int e = 0; e < kExamples; ++e) {
      for (int d = 0; d < kD; ++d) im[static_cast<std::size_t>(e * kD + d)] = static_cast<float>(10 * e + d);
      lab[static_cast<std::size_t>(e)] = e % 4;
    }
    images.upload(im);
    labels.upload(lab);
    order.upload(kOrder);
    step.upload(std::vector<int>{0});
    x.upload(std::vector<float>(kBatch * kD, -1.f));
    y.upload(std::vector<int>(kBatch, -1));
  }
  // The counter advanced; no loss slots.
  void end_step(cudaStream_t s) { end_training_step_gpu(step.get(), nullptr, nullptr, 0, s); }
  void gather(int B, cudaStream_t s) {
    gather_batch_at_device_step(images.get(), labels.get(), order.get(), step.get(), kBatch, B, kD, x.get(), y.get(), s);
  }
  // The first B rows of x and of y as batch `b` holds them: the examples at positions
  // b * kBatch + r of `order` (example e holds 10e, 10e + 1, 10e + 2 and label e % 4).
  static std::vector<double> batch_x(int b, int B, const std::vector<int>& order) {
    std::vector<double> v;
    for (int r = 0; r < B; ++r) {
      const std::size_t at = static_cast<std::size_t>(b * kBatch + r);
      const int e = at < order.size() ? order[at] : -1;
      for (int d = 0; d < kD; ++d) v.push_back(e < 0 ? NAN : 10.0 * e + d);
    }
    return v;
  }
  static std::vector<double> batch_y(int b, int B, const std::vector<int>& order) {
    std::vector<double> v;
    for (int r = 0; r < B; ++r) {
      const std::size_t at = static_cast<std::size_t>(b * kBatch + r);
      v.push_back(at < order.size() ? order[at] % 4 : NAN);
    }
    return v;
  }
  // Expects x and y to hold batch `b` (its first B rows); a wrong batch is named when it is
  // that of another step (the counter read at the wrong time) or taken unshuffled.
  void expect_batch(int b, int B, const std::string& when) {
    CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<float> all_x = x.download();
    const std::vector<int> all_y = y.download();
    const std::vector<float> got_x(all_x.begin(), all_x.begin() + B * kD);
    const std::vector<int> got_y(all_y.begin(), all_y.begin() + B);
    std::vector<int> unshuffled(kOrder.size());
    std::iota(unshuffled.begin(), unshuffled.end(), 0);
    std::vector<testkit::KnownSlip> x_slips, y_slips;
    for (int other : {b - 1, b + 1, 0}) {
      if (other < 0 || other == b || other * kBatch >= kExamples) continue;
      const std::string what = "the batch of step " + std::to_string(other) + " (the step counter read " +
                               (other < b ? "before it was advanced" : "after it was advanced") + ")";
      x_slips.push_back({what, batch_x(other, B, kOrder)});
      y_slips.push_back({what, batch_y(other, B, kOrder)});
    }
    x_slips.push_back({"the examples in stored order (order[] not applied)", batch_x(b, B, unshuffled)});
    y_slips.push_back({"the examples in stored order (order[] not applied)", batch_y(b, B, unshuffled)});
    EXPECT_TRUE(testkit::tensor_matches(when + ": x, the gathered examples of batch " + std::to_string(b),
                                        {{"row", B}, {"d", kD}}, got_x, batch_x(b, B, kOrder), testkit::Tolerance{0, 0},
                                        x_slips));
    EXPECT_TRUE(testkit::tensor_matches(when + ": y, the labels of batch " + std::to_string(b), {{"row", B}}, got_y,
                                        batch_y(b, B, kOrder), testkit::Tolerance{0, 0}, y_slips));
  }
  int counter() {
    CUDA_CHECK(cudaDeviceSynchronize());
    return step.download()[0];
  }
};

}  // namespace

TEST(Stage06_StepCapture, GatherFollowsTheDeviceStepCounter) {
  S06_SKIP_WITHOUT_GPU();
  TestGpu gpu;
  TinySet set;
  for (int b = 0; b < 3; ++b) {
    const int B = std::min(kBatch, kExamples - b * kBatch);  // 4, 4, then the last 2
    set.gather(B, gpu.stream());
    set.expect_batch(b, B, "batch " + std::to_string(b));
    set.end_step(gpu.stream());
    EXPECT_EQ(set.counter(), b + 1) << "end_training_step_gpu adds one";
  }
}

// The end of a step copies the running loss into slot s % count, s the counter before it adds one:
// the slot the host waits on for step s (DeviceLossSlots).
TEST(Stage06_StepCapture, TheStepsEndCopiesTheLossIntoTheCountersSlot) {
  S06_SKIP_WITHOUT_GPU();
  TestGpu gpu;
  TinySet set;
  constexpr int kSlots = 3;
  DeviceBuffer<double> loss, slots;
  slots.upload(std::vector<double>(kSlots, -1.0));
  std::vector<double> want(kSlots, -1.0);
  for (int s = 0; s < 5; ++s) {
    const double running = 1.5 * (s + 1);
    loss.upload(std::vector<double>{running});
    end_training_step_gpu(set.step.get(), loss.get(), slots.get(), kSlots, gpu.stream());
    want[static_cast<std::size_t>(s % kSlots)] = running;
    EXPECT_EQ(set.counter(), s + 1) << "after the end of step " << s;
    EXPECT_EQ(slots.download(), want) << "after the end of step " << s << ": its loss belongs in slot " << s % kSlots;
  }
}

// Capturing runs nothing; each replay runs the whole step, which reads the
// counter when it runs, so replay k gathers batch k.
TEST(Stage06_StepCapture, EachReplayTakesTheNextBatch) {
  S06_SKIP_WITHOUT_GPU();
  TestGpu gpu;
  TinySet set;
  StepCapture graph;
  EXPECT_FALSE(graph.ready()) << "a StepCapture nothing was captured into";
  graph.capture(gpu.stream(), [&] {
    set.gather(kBatch, gpu.stream());
    set.end_step(gpu.stream());
  });
  ASSERT_TRUE(graph.ready()) << "StepCapture::capture() returned without a graph";
  EXPECT_EQ(graph.nodes(), 2u) << "nodes of the graph: a gather and a counter increment";
  EXPECT_EQ(set.counter(), 0) << "the step counter after the capture: a capture records the work; it must not run it";
  for (int b = 0; b < 2; ++b) {
    graph.replay(gpu.stream());
    set.expect_batch(b, kBatch, "replay " + std::to_string(b));
    EXPECT_EQ(set.counter(), b + 1) << "the step counter after replay " << b;
  }
}

// A step that fails while being captured leaves no graph and a usable stream.
TEST(Stage06_StepCapture, FailedCaptureLeavesTheStreamUsable) {
  S06_SKIP_WITHOUT_GPU();
  TestGpu gpu;
  TinySet set;
  StepCapture graph;
  EXPECT_THROW(graph.capture(gpu.stream(),
                             [&] {
                               set.gather(kBatch, gpu.stream());
                               throw std::runtime_error("a layer failed");
                             }),
               std::runtime_error);
  EXPECT_FALSE(graph.ready()) << "a failed capture left a graph";
  EXPECT_THROW(graph.replay(gpu.stream()), std::logic_error);
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
  CUDA_CHECK(cudaStreamIsCapturing(gpu.stream(), &status));
  EXPECT_EQ(status, cudaStreamCaptureStatusNone) << "the stream was left capturing";
  set.gather(kBatch, gpu.stream());  // and it still runs work
  set.expect_batch(0, kBatch, "after the failed capture");
}

// The graph changes how the step is launched, not what it computes: the same
// kernels in the same order with the same (deterministic) algorithms, so two
// epochs give bit-identical parameters. The set has 15 full batches of 64 and
// a last one of 40, which runs uncaptured.
TEST(Stage06_StepCapture, EngineGivesTheSameParametersWithAndWithoutTheGraph) {
  S06_SKIP_WITHOUT_GPU();
  const Dataset train = make_synthetic(1000, {1, 28, 28}, 10, 101);
  EngineConfig cfg;
  cfg.arch = parse_arch(named_model_spec("cnn"));
  cfg.input = {1, 28, 28};
  cfg.classes = 10;
  cfg.batch = 64;
  cfg.lr = 0.05;
  cfg.seed = 7;
  CudnnStepEngine with_graph(cfg, true), without(cfg, false);
  for (int epoch = 0; epoch < 2; ++epoch) {
    const EpochStats a = with_graph.train_epoch(train, epoch, {});
    const EpochStats b = without.train_epoch(train, epoch, {});
    EXPECT_EQ(a.correct, b.correct) << "epoch " << epoch << ": correct count with the graph (left), without (right)";
    EXPECT_NEAR(a.loss_sum, b.loss_sum, 1e-9 * b.loss_sum)
        << "epoch " << epoch
        << ": loss sum with the graph (first), without (second) (summed with atomics: order may differ)";
  }
  EXPECT_EQ(with_graph.graph_replays(), 30) << "replays in 2 epochs: 15 full batches an epoch, each one replay";
  EXPECT_GT(with_graph.graph_nodes(), 20u)
      << "nodes of the graph: the whole step: gather, every layer both ways, loss, update";
  EXPECT_EQ(without.graph_replays(), 0) << "replays of the engine built without the graph";
  testkit::expect_same_parameters(with_graph.get_parameters(), without.get_parameters(),
                                  "after 2 epochs with the graph (expected: the plain run's)");
}
