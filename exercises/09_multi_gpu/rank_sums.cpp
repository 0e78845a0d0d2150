/// @file rank_sums.cpp
/// @brief Stage 09 (Task 9.5): sums and gathers over the ranks, for the metrics.
#include "09_multi_gpu/rank_sums.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/multi_gpu/nccl_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

std::vector<double> sum_over_ranks(const std::vector<double>& mine, ncclComm_t comm, cudaStream_t stream,
                                   DeviceBuffer<double>& scratch) {
  std::vector<double> sums(mine.size(), 0.0);
  if (mine.empty()) return sums;
  scratch.resize(std::max(scratch.size(), mine.size()));
  // TODO(Task 9.5): copy `mine` into scratch, sum it over the ranks in place (ncclSum of doubles), copy the sums back into `sums`, and wait for them
  // HINT: cudaMemcpyAsync both ways on `stream`, ncclAllReduce between them on the same stream, then cudaStreamSynchronize(stream).
  throw course::NotImplemented("Task 9.5", "09_multi_gpu/rank_sums.cpp", "docs/lessons/09_multi_gpu.md");
  return sums;
}

std::vector<int> gather_over_ranks(const std::vector<int>& mine, const std::vector<int>& counts, ncclComm_t comm,
                                   cudaStream_t stream, DeviceBuffer<int>& scratch) {
  int rank = 0, world = 0;
  NCCL_CHECK(ncclCommUserRank(comm, &rank));
  NCCL_CHECK(ncclCommCount(comm, &world));
  if (static_cast<int>(counts.size()) != world)
    throw std::invalid_argument("gather_over_ranks: " + std::to_string(counts.size()) + " counts for " +
                                std::to_string(world) + " ranks");
  if (static_cast<int>(mine.size()) != counts[static_cast<std::size_t>(rank)])
    throw std::invalid_argument("gather_over_ranks: rank " + std::to_string(rank) + " holds " +
                                std::to_string(mine.size()) + " values, counts say " +
                                std::to_string(counts[static_cast<std::size_t>(rank)]));
  const std::size_t block = static_cast<std::size_t>(*std::max_element(counts.begin(), counts.end()));
  std::vector<int> all;
  if (block == 0) return all;
  scratch.resize(std::max(scratch.size(), (static_cast<std::size_t>(world) + 1) * block));
  int* send = scratch.get();          // this rank's block, padded to `block` values
  int* received = scratch.get() + block;  // world blocks, in rank order
  // TODO(Task 9.5): copy `mine` into send, all-gather `block` ints from every rank into received, copy them back, wait, and keep the first counts[r] values of block r for each r in order
  // HINT: ncclAllGather(sendbuff, recvbuff, sendcount, ncclInt32, comm, stream): rank r's block lands at recvbuff + r * sendcount.
  // HINT: the padding after a short slice is never read, so it need not be set.
  throw course::NotImplemented("Task 9.5", "09_multi_gpu/rank_sums.cpp", "docs/lessons/09_multi_gpu.md");
  return all;
}

EpochStats sum_stats_over_ranks(const EpochStats& mine, ncclComm_t comm, cudaStream_t stream,
                                DeviceBuffer<double>& scratch) {
  const std::vector<double> sums = sum_over_ranks(
      {mine.loss_sum, static_cast<double>(mine.correct), static_cast<double>(mine.seen), mine.abs_error_sum}, comm,
      stream, scratch);
  EpochStats all;
  all.loss_sum = sums[0];
  all.correct = static_cast<long>(sums[1]);
  all.seen = static_cast<long>(sums[2]);
  all.abs_error_sum = sums[3];
  return all;
}

}  // namespace course
