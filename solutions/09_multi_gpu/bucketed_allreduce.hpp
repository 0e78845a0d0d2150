/// @file bucketed_allreduce.hpp
/// @brief Stage 09 (Task 9.4): each bucket all-reduced on a second stream as soon as its layers' gradients are final, overlapped with the rest of the backward pass.
///
/// The flat schedule (Task 9.2) leaves the GPU's compute idle while the
/// gradients travel, and the links idle while the backward pass runs. But fc2's
/// gradients are final long before conv1's backward starts. So the gradients
/// go in buckets (Task 9.3), each all-reduced on a *communication stream* as
/// soon as the backward pass has queued its last write to them, while the
/// compute stream goes on with the layers before:
///
///     compute stream   fc2 bwd  fc1 bwd |rec A|  conv2 bwd  conv1 bwd |rec B| wait C |  SGD
///     comm stream                        wait A  all-reduce bucket 1   wait B  all-reduce 2 |rec C|
///
/// Two streams and three kinds of event, and not one host wait:
///
/// - bucket j ready: `cudaEventRecord(ready[j], compute)` right after the
///   bucket's last layer is queued marks the point in the compute stream where
///   its gradients are final; `cudaStreamWaitEvent(comm, ready[j])` holds the
///   communication stream's next work (the bucket's all-reduce) until the GPU
///   passes that point. The host queues all of this and moves on at once.
/// - done: after the last bucket, `cudaEventRecord(done, comm)` and
///   `cudaStreamWaitEvent(compute, done)`: the update on the compute stream
///   starts only once every all-reduce has finished.
///
/// The same calls record correctly into a CUDA graph: an event recorded on the
/// capturing stream and waited on by another stream pulls that stream into the
/// capture (a fork), and the wait for `done` joins it back before the capture
/// ends. So a step with its overlapped all-reduces replays as one graph.
///
/// The communication stream has the GPU's highest priority: when compute and
/// communication kernels are both ready, the all-reduce's few blocks are
/// scheduled first and the compute kernels fill the rest of the GPU.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <vector>

#include "common/gpu/engine_parts.hpp"
#include "09_multi_gpu/allreduce_timing.hpp"
#include "09_multi_gpu/bucket_plan.hpp"

namespace course {

/// The overlapped schedule (a GradientSync for the engine). Made on the rank's GPU.
class BucketedAllReduce : public GradientSync {
 public:
  /// `ranges`: the engine's gradient ranges in backward order; `buckets`: their
  /// plan (plan_buckets, Task 9.3); `gradients`: the engine's flat buffer. Makes
  /// the stream and the events. `timing` adds a --profile row per bucket and one
  /// for the wait. Throws std::invalid_argument when the buckets do not take the
  /// ranges in order, each exactly once.
  BucketedAllReduce(ncclComm_t comm, ncclRedOp_t weighted_sum, float* gradients, std::vector<GradientRange> ranges,
                    std::vector<Bucket> buckets, AllReduceTiming& timing);
  ~BucketedAllReduce() override;
  BucketedAllReduce(const BucketedAllReduce&) = delete;
  BucketedAllReduce& operator=(const BucketedAllReduce&) = delete;

  /// Starts the all-reduce of the bucket this range completes, if it completes one.
  /// Throws std::logic_error when `range` is not the one the plan expects next.
  void gradients_queued(const GradientRange& range, cudaStream_t stream) override;
  /// `stream` waits for the last all-reduce. Throws std::logic_error when a bucket was never started.
  void before_update(cudaStream_t stream) override;

  const std::vector<Bucket>& buckets() const { return buckets_; }
  const std::vector<GradientRange>& ranges() const { return ranges_; }

 private:
  void launch(std::size_t j, cudaStream_t compute);  // Task 9.4
  void join(cudaStream_t compute);                   // Task 9.4

  ncclComm_t comm_;
  ncclRedOp_t weighted_sum_;
  float* gradients_;
  std::vector<GradientRange> ranges_;
  std::vector<Bucket> buckets_;
  std::vector<std::size_t> bucket_of_;  ///< the bucket of each range
  std::size_t next_ = 0;                ///< the range expected next in this step
  AllReduceTiming& timing_;
  std::vector<std::size_t> rows_;       ///< --profile: one row per bucket
  std::size_t wait_row_ = 0;
  cudaStream_t comm_stream_ = nullptr;
  std::vector<cudaEvent_t> ready_;      ///< per bucket: its gradients are final on the compute stream
  cudaEvent_t done_ = nullptr;          ///< every all-reduce of the step has finished
};

}  // namespace course
