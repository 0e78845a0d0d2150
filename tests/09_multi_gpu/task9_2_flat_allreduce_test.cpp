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

using namespace course;
using namespace course::s09test;

namespace {

void set_weight(DeviceBuffer<float>& w, float value) { CUDA_CHECK(cudaMemcpy(w.get(), &value, sizeof value, cudaMemcpyHostToDevice)); }

}  // namespace

TEST(Task9_2_WeightedAllReduce, OneRankMultipliesByTheWeightReadWhenItRuns) {
  S09_SKIP_WITHOUT_GPUS(1);
  Communicator comm(new_unique_id(), 0, 1, 60);
  DeviceBuffer<float> weight(1);
  set_weight(weight, 0.5f);
  const ncclRedOp_t op = create_weighted_sum(comm.get(), weight.get());
  const std::vector<float> v = random_values(10007, 1);  // not a multiple of anything NCCL likes
  DeviceBuffer<float> values;
  values.upload(v);
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreate(&stream));
  allreduce_weighted(values.get(), v.size(), op, comm.get(), stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<float> got = values.download();
  for (std::size_t i = 0; i < v.size(); ++i) ASSERT_EQ(got[i], 0.5f * v[i]) << "value " << i;

  // The same op, a new weight: it is read from device memory when the collective runs.
  set_weight(weight, 0.25f);
  values.upload(v);
  allreduce_weighted(values.get(), v.size(), op, comm.get(), stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  got = values.download();
  for (std::size_t i = 0; i < v.size(); ++i) ASSERT_EQ(got[i], 0.25f * v[i]) << "value " << i << " after the new weight";

  // Weight 1: the gradient of one rank comes back bit for bit.
  set_weight(weight, 1.f);
  values.upload(v);
  allreduce_weighted(values.get(), v.size(), op, comm.get(), stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  got = values.download();
  EXPECT_EQ(std::memcmp(got.data(), v.data(), v.size() * sizeof(float)), 0) << "weight 1 changed some bits";
  ncclRedOpDestroy(op, comm.get());
  cudaStreamDestroy(stream);
}

TEST(Task9_2_WeightedAllReduce, TheFlatScheduleReducesEverythingBeforeTheUpdate) {
  S09_SKIP_WITHOUT_GPUS(1);
  Communicator comm(new_unique_id(), 0, 1, 60);
  DeviceBuffer<float> weight(1);
  set_weight(weight, 0.5f);
  const ncclRedOp_t op = create_weighted_sum(comm.get(), weight.get());
  const std::vector<float> v = random_values(5000, 2);
  DeviceBuffer<float> grads;
  grads.upload(v);
  AllReduceTiming timing;
  FlatAllReduce flat(comm.get(), op, grads.get(), v.size(), timing);
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreate(&stream));
  flat.gradients_queued({4000, 5000, "fc2"}, stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  EXPECT_EQ(grads.download(), v) << "the flat schedule waits for the whole backward pass";
  flat.before_update(stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const std::vector<float> got = grads.download();
  for (std::size_t i = 0; i < v.size(); ++i) ASSERT_EQ(got[i], 0.5f * v[i]) << "value " << i;
  ncclRedOpDestroy(op, comm.get());
  cudaStreamDestroy(stream);
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
  for (std::size_t i = 0; i < n; ++i) {
    const double want = 0.25 * a[i] + 0.75 * b[i];
    ASSERT_NEAR(results[0][i], want, 1e-6 * (1 + std::fabs(want))) << "value " << i;
  }
  EXPECT_EQ(std::memcmp(results[0].data(), results[1].data(), n * sizeof(float)), 0)
      << "an all-reduce leaves the same bits on every rank: the replicas stay equal";
}
