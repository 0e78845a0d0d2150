// Task 8.7: one update for every tensor at once, each with its own number of
// partial sums, against stage 01's sgd_update on the summed gradient. The learning
// rate and the momentum come from device memory, and the step counter moves by one.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "01_fc_softmax/sgd.hpp"
#include "08_fused/fused_kernels.hpp"
#include "s08_support.hpp"

using namespace course;
using namespace course::s08test;

namespace {

struct Slot {
  long long count;
  int slices;
};

}  // namespace

TEST(Task8_7_MultiTensorSgd, UpdatesEveryTensorFromItsSlicesLikeStage01) {
  SKIP_WITHOUT_GPU();
  // Tensors of 144, 16, 4608, 1 and 1000 values with 64, 64, 1, 3 and 8 slices: the
  // shapes of conv and dense weights and biases, a single value, a tensor that spans
  // several blocks; the offsets in a flat buffer as an engine lays them out.
  const std::vector<Slot> slots = {{144, 64}, {16, 64}, {4608, 1}, {1, 3}, {1000, 8}};
  long long total = 0;
  for (const Slot& s : slots) total += s.count;
  const std::vector<float> w0 = gputest::random_floats(static_cast<std::size_t>(total), 161);
  const std::vector<float> v0 = gputest::random_floats(static_cast<std::size_t>(total), 162);
  DeviceBuffer<float> w = gputest::to_device(w0), v = gputest::to_device(v0);
  std::vector<DeviceBuffer<float>> partials;
  std::vector<std::vector<float>> host_partials;
  std::vector<SgdTensor> table;
  long long offset = 0;
  for (std::size_t t = 0; t < slots.size(); ++t) {
    host_partials.push_back(gputest::random_floats(static_cast<std::size_t>(slots[t].count * slots[t].slices), 170 + t));
    partials.push_back(gputest::to_device(host_partials.back()));
    table.push_back({offset, slots[t].count, partials.back().get(), slots[t].slices});
    offset += slots[t].count;
  }
  const DeviceBuffer<SgdTensor> tensors = gputest::to_device(table);
  const float lr = 0.05f, momentum = 0.9f;
  const DeviceBuffer<float> hyper = gputest::to_device(std::vector<float>{lr, momentum});
  DeviceBuffer<int> step = gputest::to_device(std::vector<int>{41});
  const SgdArgs a = plan_sgd_multi_tensor(w.get(), v.get(), tensors.get(), static_cast<int>(table.size()), total,
                                          hyper.get(), step.get());
  sgd_multi_tensor_gpu(a);

  // Stage 01's update on the gradients the slices add up to (in slice order, in float, as the kernel adds them).
  std::vector<float> want_w = w0, want_v = v0;
  for (std::size_t t = 0; t < slots.size(); ++t) {
    const long long n = slots[t].count;
    std::vector<float> g(static_cast<std::size_t>(n), 0.f);
    for (int s = 0; s < slots[t].slices; ++s)
      for (long long j = 0; j < n; ++j) g[static_cast<std::size_t>(j)] += host_partials[t][static_cast<std::size_t>(s * n + j)];
    sgd_update(want_w.data() + table[t].offset, g.data(), want_v.data() + table[t].offset, static_cast<long>(n), lr,
               momentum);
  }
  // Float against float in the same order: only the GPU's fused multiply-adds differ, in the last bit or two.
  // The flat buffer holds the tensors one after another: an index names the tensor by its offset.
  std::string layout = " (the flat buffer of tensors at offsets";
  for (std::size_t t = 0; t < slots.size(); ++t)
    layout += (t ? ", " : " ") + std::to_string(table[t].offset) + " (" + std::to_string(slots[t].count) + " values, " +
              std::to_string(slots[t].slices) + " slices)";
  layout += ")";
  const TensorShape flat{{"i", static_cast<int>(total)}};
  EXPECT_TRUE(gputest::close_enough("velocity" + layout, to_host(v), want_v, flat, 1e-6, 1e-6, 1.0));
  EXPECT_TRUE(gputest::close_enough("weights" + layout, to_host(w), want_w, flat, 1e-6, 1e-6, 1.0));
  EXPECT_EQ(to_host(step)[0], 42) << "the step counter, 41 before: the update advances it by one";
}

// The learning rate is read from device memory when the kernel runs: a new value
// there changes the next update without a new launch configuration.
TEST(Task8_7_MultiTensorSgd, ReadsTheLearningRateFromDeviceMemory) {
  SKIP_WITHOUT_GPU();
  DeviceBuffer<float> w = gputest::to_device(std::vector<float>(10, 1.f)), v = gputest::to_device(std::vector<float>(10, 0.f));
  const DeviceBuffer<float> g = gputest::to_device(std::vector<float>(10, 1.f));
  const DeviceBuffer<SgdTensor> tensors = gputest::to_device(std::vector<SgdTensor>{{0, 10, g.get(), 1}});
  DeviceBuffer<float> hyper = gputest::to_device(std::vector<float>{0.5f, 0.f});
  const SgdArgs a = plan_sgd_multi_tensor(w.get(), v.get(), tensors.get(), 1, 10, hyper.get(), nullptr);
  sgd_multi_tensor_gpu(a);
  std::vector<float> got = to_host(w);
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_FLOAT_EQ(got[i], 0.5f) << "w[" << i << "] of [i=10] after one update: 1 - lr 0.5 x g 1";
  hyper.upload(std::vector<float>{0.25f, 0.f});
  sgd_multi_tensor_gpu(a);
  got = to_host(w);
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_FLOAT_EQ(got[i], 0.25f) << "w[" << i << "] of [i=10] after the second update: 0.5 - lr 0.25 x g 1 (the new "
                                   << "rate, read from device memory; 0 would mean the old rate 0.5 was used)";
}
