// Task 9.4: the bucketed all-reduce on a second stream, overlapped with the backward pass.
//
// The test plays the engine: on a compute stream it writes each layer's
// gradients (a copy from a source buffer, queued, not yet done when the hook
// is called), then calls gradients_queued(); at the end before_update(). With
// one rank and weight 0.5, every value must end as half its source: a bucket
// all-reduced before its gradients were written, twice, or never, shows.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "09_multi_gpu/bucket_plan.hpp"
#include "09_multi_gpu/bucketed_allreduce.hpp"
#include "09_multi_gpu/communicator.hpp"
#include "09_multi_gpu/flat_allreduce.hpp"
#include "common/gpu/step_capture.hpp"
#include "common/multi_gpu/nccl_check.hpp"
#include "s09_support.hpp"
#include "tensor_check.hpp"

// GCC 13 at -O3 reports "operator delete called on a pointer with nonzero offset" inside the
// std::vector code it inlines into TwoRanksGetWhatTheFlatScheduleGives (-Wfree-nonheap-object;
// GCC 12 does not): a false positive, every vector there is a plain heap vector.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 13
#pragma GCC diagnostic ignored "-Wfree-nonheap-object"
#endif

using namespace course;
using namespace course::s09test;

namespace {

// `cnn`'s layout: conv1, conv2, fc1, fc2 in model order; listed last layer first.
std::vector<GradientRange> cnn_ranges() {
  return {{161700, 162710, "fc2 (fc10)"}, {4800, 161700, "fc1 (fc100)"}, {160, 4800, "conv2 (conv32k3p1)"},
          {0, 160, "conv1 (conv16k3p1)"}};
}

// Buckets made by hand (not by Task 9.3): one per range, or one for everything.
std::vector<Bucket> per_range(const std::vector<GradientRange>& ranges) {
  std::vector<Bucket> b;
  for (std::size_t k = 0; k < ranges.size(); ++k) b.push_back({ranges[k].begin, ranges[k].end, k, k});
  return b;
}
std::vector<Bucket> two_buckets(const std::vector<GradientRange>& ranges) {
  return {{ranges[1].begin, ranges[0].end, 0, 1}, {ranges[3].begin, ranges[2].end, 2, 3}};
}

// The weighted sum, made without Task 9.2 (so that these tests wait for no other task).
ncclRedOp_t weighted_sum(ncclComm_t comm, float* weight) {
  ncclRedOp_t op{};
  NCCL_CHECK(ncclRedOpCreatePreMulSum(&op, weight, ncclFloat, ncclScalarDevice, comm));
  return op;
}

// One step as an engine queues it.
void play_step(GradientSync& sync, const std::vector<GradientRange>& ranges, float* grads, const float* source,
               cudaStream_t stream) {
  for (const GradientRange& r : ranges) {
    CUDA_CHECK(cudaMemcpyAsync(grads + r.begin, source + r.begin, r.size() * sizeof(float), cudaMemcpyDeviceToDevice,
                               stream));
    sync.gradients_queued(r, stream);
  }
  sync.before_update(stream);
}

// A rank of one, its weight 0.5.
struct OneRank {
  Communicator comm{new_unique_id(), 0, 1, 60};
  DeviceBuffer<float> weight{1};
  ncclRedOp_t op{};
  cudaStream_t stream = nullptr;
  OneRank() {
    const float half = 0.5f;
    CUDA_CHECK(cudaMemcpy(weight.get(), &half, sizeof half, cudaMemcpyHostToDevice));
    op = weighted_sum(comm.get(), weight.get());
    // A blocking stream, as the engine's: the plain cudaMemcpy calls of the tests come before its work.
    CUDA_CHECK(cudaStreamCreate(&stream));
    CUDA_CHECK(cudaDeviceSynchronize());
  }
  ~OneRank() {
    cudaStreamSynchronize(stream);
    ncclRedOpDestroy(op, comm.get());
    cudaStreamDestroy(stream);
  }
};

// Every value half its source; on failure, tensor_matches()'s message and, per layer, how many
// of its values are wrong and how (left as written, halved twice, ...): a bucket reduced before
// its gradients were written, twice, or never, shows as whole layers.
void expect_halved(const std::vector<float>& got, const std::vector<float>& source, const std::string& what) {
  ASSERT_EQ(got.size(), source.size()) << what << ": values (left) and the source's (right)";
  std::vector<float> half(source.size());
  for (std::size_t i = 0; i < source.size(); ++i) half[i] = 0.5f * source[i];
  const ::testing::AssertionResult ok =
      testkit::tensor_matches(what + ": the gradients, each half its source (one rank, weight 0.5)",
                              {{"i", static_cast<int>(got.size())}}, got, half, testkit::Tolerance{0, 0});
  if (ok) return;
  std::string layers;
  for (const GradientRange& r : cnn_ranges()) {
    std::size_t wrong = 0, as_written = 0, quartered = 0;
    for (std::size_t i = r.begin; i < r.end && i < got.size(); ++i) {
      if (got[i] == half[i]) continue;
      ++wrong;
      as_written += got[i] == source[i];
      quartered += got[i] == 0.25f * source[i];
    }
    if (wrong == 0) continue;
    layers += "\n    " + r.name + " [" + std::to_string(r.begin) + ", " + std::to_string(r.end) +
              "): " + std::to_string(wrong) + " of " + std::to_string(r.size()) + " wrong";
    if (as_written == wrong) layers += ", all as written (never reduced, or reduced before they were written)";
    if (quartered == wrong) layers += ", all a quarter of the source (reduced twice)";
  }
  ADD_FAILURE() << ok.message() << "    by layer:" << layers;
}

}  // namespace

TEST(Task9_4_BucketedAllReduce, EveryBucketIsReducedOnceAfterItsGradientsAreWritten) {
  S09_SKIP_WITHOUT_GPUS(1);
  OneRank one;
  const auto ranges = cnn_ranges();
  const std::vector<float> v = random_values(162710, 5);
  DeviceBuffer<float> source, grads(v.size());
  source.upload(v);
  for (const auto& buckets : {per_range(ranges), two_buckets(ranges)}) {
    SCOPED_TRACE(std::to_string(buckets.size()) + " buckets");
    AllReduceTiming timing;
    BucketedAllReduce sync(one.comm.get(), one.op, grads.get(), ranges, buckets, timing);
    CUDA_CHECK(cudaMemsetAsync(grads.get(), 0, v.size() * sizeof(float), one.stream));
    for (int step = 0; step < 3; ++step) {  // the same object, step after step
      play_step(sync, ranges, grads.get(), source.get(), one.stream);
      CUDA_CHECK(cudaStreamSynchronize(one.stream));
      expect_halved(grads.download(), v, "step " + std::to_string(step));
    }
  }
}

// The fork to the communication stream and the join back must be legal inside a
// capture: a missing join makes cudaStreamEndCapture fail.
TEST(Task9_4_BucketedAllReduce, AStepWithItsAllReducesReplaysAsOneGraph) {
  S09_SKIP_WITHOUT_GPUS(1);
  OneRank one;
  const auto ranges = cnn_ranges();
  DeviceBuffer<float> source(162710), grads(162710);
  AllReduceTiming timing;
  BucketedAllReduce sync(one.comm.get(), one.op, grads.get(), ranges, two_buckets(ranges), timing);
  play_step(sync, ranges, grads.get(), source.get(), one.stream);  // outside a capture once, as the engine's warm-up
  CUDA_CHECK(cudaStreamSynchronize(one.stream));
  StepCapture graph;
  graph.capture(one.stream, [&] { play_step(sync, ranges, grads.get(), source.get(), one.stream); });
  ASSERT_TRUE(graph.ready());
  for (int replay = 0; replay < 3; ++replay) {
    const std::vector<float> v = random_values(162710, 10 + replay);
    source.upload(v);
    graph.replay(one.stream);
    CUDA_CHECK(cudaStreamSynchronize(one.stream));
    expect_halved(grads.download(), v, "replay " + std::to_string(replay));
  }
}

TEST(Task9_4_BucketedAllReduce, TwoRanksGetWhatTheFlatScheduleGives) {
  S09_SKIP_WITHOUT_GPUS(2);
  LocalRanks ranks(2);
  const auto ranges = cnn_ranges();
  const std::vector<float> inputs[2] = {random_values(162710, 6), random_values(162710, 7)};
  const float weights[2] = {0.5f, 0.5f};
  std::vector<float> bucketed[2], flat[2];
  ranks.run([&](int r, ncclComm_t comm) {
    DeviceBuffer<float> weight(1), source, grads(162710);
    CUDA_CHECK(cudaMemcpy(weight.get(), &weights[r], sizeof(float), cudaMemcpyHostToDevice));
    const ncclRedOp_t op = weighted_sum(comm, weight.get());
    source.upload(inputs[r]);
    cudaStream_t stream = nullptr;
    CUDA_CHECK(cudaStreamCreate(&stream));
    CUDA_CHECK(cudaDeviceSynchronize());
    {
      AllReduceTiming timing;
      BucketedAllReduce sync(comm, op, grads.get(), ranges, per_range(ranges), timing);
      play_step(sync, ranges, grads.get(), source.get(), stream);
      CUDA_CHECK(cudaStreamSynchronize(stream));
      bucketed[r] = grads.download();
    }
    CUDA_CHECK(cudaMemcpyAsync(grads.get(), source.get(), 162710 * sizeof(float), cudaMemcpyDeviceToDevice, stream));
    NCCL_CHECK(ncclAllReduce(grads.get(), grads.get(), 162710, ncclFloat, op, comm, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    flat[r] = grads.download();
    ncclRedOpDestroy(op, comm);
    cudaStreamDestroy(stream);
  });
  for (int r = 0; r < 2; ++r)
    EXPECT_EQ(differing_values(bucketed[r], flat[r]), 0u)
        << "rank " << r << ": buckets against one all-reduce: " << first_difference(bucketed[r], flat[r])
        << " (the bucketed value against the flat one)";
  EXPECT_EQ(differing_values(bucketed[0], bucketed[1]), 0u)
      << "the two ranks' gradients differ: " << first_difference(bucketed[0], bucketed[1]) << " (rank 0 against 1)";
}

// The checks around the task (not a task).
TEST(Stage09_Buckets, RangesOutOfOrderAndBadPlansAreRefused) {
  S09_SKIP_WITHOUT_GPUS(1);
  OneRank one;
  const auto ranges = cnn_ranges();
  DeviceBuffer<float> grads(162710);
  AllReduceTiming timing;
  EXPECT_THROW(BucketedAllReduce(one.comm.get(), one.op, grads.get(), ranges, {{0, 10, 0, 0}}, timing),
               std::invalid_argument);
  BucketedAllReduce sync(one.comm.get(), one.op, grads.get(), ranges, per_range(ranges), timing);
  EXPECT_THROW(sync.gradients_queued(ranges[1], one.stream), std::logic_error) << "fc1 before fc2";
  EXPECT_THROW(sync.before_update(one.stream), std::logic_error) << "an update before the backward pass";
}
