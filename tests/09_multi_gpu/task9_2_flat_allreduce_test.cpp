// Task 9.2: the weighted sum over the ranks with one ncclAllReduce, and the flat schedule.
//
// One GPU checks what one rank can: the weight multiplies in place, it is read
// from device memory when the all-reduce runs, and weight 1 leaves the bits as
// they are. Two GPUs (skipped with fewer) check the sum itself.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "09_multi_gpu/communicator.hpp"
#include "09_multi_gpu/flat_allreduce.hpp"
#include "s09_support.hpp"
#include "tensor_check.hpp"

using namespace course;
using namespace course::s09test;

namespace {

void set_weight(DeviceBuffer<float>& w, float value) { CUDA_CHECK(cudaMemcpy(w.get(), &value, sizeof value, cudaMemcpyHostToDevice)); }

// k v, as the all-reduce of one rank with weight k must leave it (exactly: a product by a power of two).
std::vector<float> times(float k, const std::vector<float>& v) {
  std::vector<float> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = k * v[i];
  return out;
}

// The values of v as a known slip's values.
std::vector<double> wide(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// One rank alone on one GPU, with the weighted-sum op of Task 9.2 made on a weight in device
// memory (set_weight() changes it later) and a stream; the op and the stream are released when it goes.
struct OneRankWeightedSum {
  Communicator comm{new_unique_id(), 0, 1, 60};
  DeviceBuffer<float> weight{1};
  ncclRedOp_t op{};
  cudaStream_t stream = nullptr;

  explicit OneRankWeightedSum(float first_weight) {
    set_weight(weight, first_weight);
    op = create_weighted_sum(comm.get(), weight.get());
    CUDA_CHECK(cudaStreamCreate(&stream));
  }
  ~OneRankWeightedSum() {
    ncclRedOpDestroy(op, comm.get());
    cudaStreamDestroy(stream);
  }
  OneRankWeightedSum(const OneRankWeightedSum&) = delete;
  OneRankWeightedSum& operator=(const OneRankWeightedSum&) = delete;

  /// v after this rank's all-reduce (allreduce_weighted), done in `values` on the device.
  std::vector<float> all_reduced(DeviceBuffer<float>& values, const std::vector<float>& v) {
    values.upload(v);
    allreduce_weighted(values.get(), v.size(), op, comm.get(), stream);
    CUDA_CHECK(cudaStreamSynchronize(stream));
    return values.download();
  }
};

}  // namespace

TEST(Task9_2_WeightedAllReduce, OneRankMultipliesByTheWeightReadWhenItRuns) {
  S09_SKIP_WITHOUT_GPUS(1);
  OneRankWeightedSum rank(0.5f);
  const std::vector<float> v = random_values(10007, 1);  // not a multiple of anything NCCL likes
  DeviceBuffer<float> values;
  std::vector<float> got = rank.all_reduced(values, v);
  const TensorShape shape{{"i", static_cast<int>(v.size())}};
  const testkit::Tolerance exact{0, 0};
  ASSERT_TRUE(testkit::tensor_matches("values after the all-reduce of one rank with weight 0.5", shape, got,
                                      times(0.5f, v), exact, {{"the weight not applied (a plain sum)", wide(v)}}));

  // The same op, a new weight: it is read from device memory when the collective runs.
  set_weight(rank.weight, 0.25f);
  got = rank.all_reduced(values, v);
  ASSERT_TRUE(testkit::tensor_matches(
      "values after the all-reduce with the weight set to 0.25 after the op was made", shape, got, times(0.25f, v),
      exact,
      {{"the weight 0.5 read when the op was made, not when the all-reduce ran (ncclScalarHostImmediate?)",
        wide(times(0.5f, v))},
       {"the weight not applied (a plain sum)", wide(v)}}));

  // Weight 1: the gradient of one rank comes back bit for bit.
  set_weight(rank.weight, 1.f);
  got = rank.all_reduced(values, v);
  EXPECT_EQ(differing_values(got, v), 0u)
      << "weight 1 changed some bits: " << first_difference(got, v) << " (actual against the rank's own value)";
}

TEST(Task9_2_WeightedAllReduce, TheFlatScheduleReducesEverythingBeforeTheUpdate) {
  S09_SKIP_WITHOUT_GPUS(1);
  OneRankWeightedSum rank(0.5f);
  const std::vector<float> v = random_values(5000, 2);
  DeviceBuffer<float> grads;
  grads.upload(v);
  AllReduceTiming timing;
  FlatAllReduce flat(rank.comm.get(), rank.op, grads.get(), v.size(), timing);
  flat.gradients_queued({4000, 5000, "fc2"}, rank.stream);
  CUDA_CHECK(cudaStreamSynchronize(rank.stream));
  const TensorShape shape{{"i", static_cast<int>(v.size())}};
  EXPECT_TRUE(testkit::tensor_matches(
      "gradients after gradients_queued(fc2 [4000, 5000)), before the update: the flat schedule waits for the "
      "whole backward pass",
      shape, grads.download(), v, testkit::Tolerance{0, 0}, {{"the all-reduce run already", wide(times(0.5f, v))}}));
  flat.before_update(rank.stream);
  CUDA_CHECK(cudaStreamSynchronize(rank.stream));
  ASSERT_TRUE(testkit::tensor_matches("gradients after before_update(), weight 0.5", shape, grads.download(),
                                      times(0.5f, v), testkit::Tolerance{0, 0},
                                      {{"no all-reduce at all, or the weight not applied", wide(v)}}));
}

TEST(Task9_2_WeightedAllReduce, TwoRanksGetTheWeightedSumBothAlike) {
  S09_SKIP_WITHOUT_GPUS(2);
  LocalRanks ranks(2);
  const std::size_t n = 300001;
  const std::vector<float> a = random_values(n, 3), b = random_values(n, 4);
  const float weights[2] = {0.25f, 0.75f};  // a slice of 16 and one of 48 in a step of 64
  std::vector<float> results[2];
  ranks.run([&](int r, ncclComm_t comm) {
    DeviceBuffer<float> weight(1);
    set_weight(weight, weights[r]);
    const ncclRedOp_t op = create_weighted_sum(comm, weight.get());
    DeviceBuffer<float> values;
    values.upload(r == 0 ? a : b);
    cudaStream_t stream = nullptr;
    CUDA_CHECK(cudaStreamCreate(&stream));
    allreduce_weighted(values.get(), n, op, comm, stream);
    CUDA_CHECK(cudaStreamSynchronize(stream));
    results[r] = values.download();
    ncclRedOpDestroy(op, comm);
    cudaStreamDestroy(stream);
  });
  // |got - want| <= 1e-6 (1 + |want|): atol 1e-6, rtol 1e-6.
  std::vector<double> want(n), plain(n), swapped(n), mean(n);
  for (std::size_t i = 0; i < n; ++i) {
    want[i] = 0.25 * a[i] + 0.75 * b[i];
    plain[i] = static_cast<double>(a[i]) + b[i];
    swapped[i] = 0.75 * a[i] + 0.25 * b[i];
    mean[i] = 0.5 * a[i] + 0.5 * b[i];
  }
  ASSERT_TRUE(testkit::tensor_matches("rank 0's values after the all-reduce, weights 0.25 (rank 0) and 0.75 (rank 1)",
                                      {{"i", static_cast<int>(n)}}, results[0], want, testkit::Tolerance{1e-6, 1e-6},
                                      {{"the plain sum a + b (the weights not applied)", plain},
                                       {"the weights of the two ranks swapped", swapped},
                                       {"the mean (a + b) / 2 (ncclAvg, not the ranks' weights)", mean}}));
  EXPECT_EQ(differing_values(results[0], results[1]), 0u)
      << "an all-reduce leaves the same bits on every rank: the replicas stay equal; rank 0's values against rank "
      << "1's: " << first_difference(results[0], results[1]);
}
