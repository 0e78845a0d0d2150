/// @file bucketed_allreduce.cpp
/// @brief Stage 09 (Task 9.4): the overlapped, bucketed all-reduce.
#include "09_multi_gpu/bucketed_allreduce.hpp"

#include <stdexcept>
#include <string>

#include "09_multi_gpu/flat_allreduce.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

BucketedAllReduce::BucketedAllReduce(ncclComm_t comm, ncclRedOp_t weighted_sum, float* gradients,
                                     std::vector<GradientRange> ranges, std::vector<Bucket> buckets,
                                     AllReduceTiming& timing)
    : comm_(comm),
      weighted_sum_(weighted_sum),
      gradients_(gradients),
      ranges_(std::move(ranges)),
      buckets_(std::move(buckets)),
      timing_(timing) {
  std::size_t next = 0;
  for (const Bucket& b : buckets_) {
    if (b.first != next || b.last < b.first || b.last >= ranges_.size() || b.end != ranges_[b.first].end ||
        b.begin != ranges_[b.last].begin)
      throw std::invalid_argument("BucketedAllReduce: a bucket of ranges [" + std::to_string(b.first) + ", " +
                                  std::to_string(b.last) + "] does not follow the plan of " +
                                  std::to_string(ranges_.size()) + " ranges (the next range is " +
                                  std::to_string(next) + ")");
    next = b.last + 1;
  }
  if (next != ranges_.size())
    throw std::invalid_argument("BucketedAllReduce: the buckets hold " + std::to_string(next) + " of the " +
                                std::to_string(ranges_.size()) + " gradient ranges");
  bucket_of_.resize(ranges_.size());
  for (std::size_t j = 0; j < buckets_.size(); ++j) {
    for (std::size_t k = buckets_[j].first; k <= buckets_[j].last; ++k) bucket_of_[k] = j;
    rows_.push_back(timing_.add_row("all-reduce, bucket " + std::to_string(j + 1) + ": " +
                                    bucket_layers(buckets_[j], ranges_) + " (" +
                                    std::to_string((buckets_[j].bytes() + 1023) / 1024) + " KiB)"));
  }
  wait_row_ = timing_.add_row("wait for the all-reduce");
  int least = 0, greatest = 0;  // "greatest" priority is the lowest number
  CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  CUDA_CHECK(cudaStreamCreateWithPriority(&comm_stream_, cudaStreamNonBlocking, greatest));
  ready_.assign(buckets_.size(), nullptr);
  for (cudaEvent_t& e : ready_) CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
}

BucketedAllReduce::~BucketedAllReduce() {
  if (comm_stream_ != nullptr) cudaStreamSynchronize(comm_stream_);
  for (cudaEvent_t e : ready_)
    if (e != nullptr) cudaEventDestroy(e);
  if (done_ != nullptr) cudaEventDestroy(done_);
  if (comm_stream_ != nullptr) cudaStreamDestroy(comm_stream_);
}

void BucketedAllReduce::gradients_queued(const GradientRange& range, cudaStream_t stream) {
  if (next_ >= ranges_.size() || range.begin != ranges_[next_].begin || range.end != ranges_[next_].end)
    throw std::logic_error("BucketedAllReduce: the engine finished the gradients of " + range.name + " [" +
                           std::to_string(range.begin) + ", " + std::to_string(range.end) + "), but the plan expects " +
                           (next_ < ranges_.size() ? ranges_[next_].name : std::string("no more")) + " next");
  const std::size_t j = bucket_of_[next_];
  if (buckets_[j].last == next_) launch(j, stream);
  ++next_;
}

void BucketedAllReduce::before_update(cudaStream_t stream) {
  if (next_ != ranges_.size())
    throw std::logic_error("BucketedAllReduce: the backward pass finished " + std::to_string(next_) + " of " +
                           std::to_string(ranges_.size()) + " gradient ranges before the update");
  next_ = 0;
  timing_.time(wait_row_, stream, [&] { join(stream); });
}

void BucketedAllReduce::launch(std::size_t j, cudaStream_t compute) {
  const Bucket& b = buckets_[j];
  // TODO(Task 9.4): bucket b's gradients are final once `compute` gets past the work queued on it so far: make the communication stream wait for that point (an event, ready_[j])
  // HINT: cudaEventRecord(ready_[j], compute), then cudaStreamWaitEvent(comm_stream_, ready_[j], 0): the host never waits.
  throw course::NotImplemented("Task 9.4", "09_multi_gpu/bucketed_allreduce.cpp", "docs/lessons/09_multi_gpu.md");
  timing_.time(rows_[j], comm_stream_, [&] {  // --profile's row of bucket j (given)
    // TODO(Task 9.4): all-reduce bucket b's gradients on the communication stream
    // HINT: Task 9.2's allreduce_weighted on gradients_ + b.begin, b.size() values, on comm_stream_.
    throw course::NotImplemented("Task 9.4", "09_multi_gpu/bucketed_allreduce.cpp", "docs/lessons/09_multi_gpu.md");
  });
}

void BucketedAllReduce::join(cudaStream_t compute) {
  // TODO(Task 9.4): make `compute` wait until everything queued on the communication stream (every bucket's all-reduce) has finished
  // HINT: the mirror image of launch(): an event recorded on comm_stream_ (done_), waited for by `compute`.
  throw course::NotImplemented("Task 9.4", "09_multi_gpu/bucketed_allreduce.cpp", "docs/lessons/09_multi_gpu.md");
}

}  // namespace course
