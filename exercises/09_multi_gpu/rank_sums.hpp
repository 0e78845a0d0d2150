/// @file rank_sums.hpp
/// @brief Stage 09 (Task 9.5): what the ranks add up besides the gradients: the epoch's loss and counts, the test set's predictions.
///
/// Each rank trains and evaluates its own share of the examples, so each knows
/// its own loss sum and correct count; the run's figures are the sums over the
/// ranks. They travel as doubles (a count is exact in a double up to 2^53):
/// copied to the device, summed with one ncclAllReduce (ncclSum, ncclDouble),
/// copied back. Every rank gets the sums, so every rank takes the same
/// decisions from them (the same diverged loss, the same stop).
///
/// Evaluation is shared too: rank r evaluates the r-th contiguous slice of the
/// test set (stage 03's course::shard_of), and the report needs every
/// prediction in order. An all-gather collects one equal-sized block from each
/// rank, in rank order; the slices differ by one at most, so every rank pads
/// its block to the largest slice and the receiver keeps the first counts[r]
/// values of block r.
///
/// These run once per epoch, outside the steps: each waits for its result on
/// the host, which the steps never do.
#pragma once

#include <nccl.h>

#include <vector>

#include "common/gpu/cuda_check.hpp"
#include "common/train/engine.hpp"

namespace course {

/// The element-wise sums over the ranks of `comm` of every rank's `mine` (the
/// same length on every rank), returned on every rank. Goes through `scratch`
/// (resized as needed) on `stream`, and waits for the result.
std::vector<double> sum_over_ranks(const std::vector<double>& mine, ncclComm_t comm, cudaStream_t stream,
                                   DeviceBuffer<double>& scratch);

/// Rank r's `mine` (counts[r] values, r = this rank) after rank 0's, rank 1's,
/// ... in rank order, returned on every rank. `counts` is the same on every
/// rank. Goes through `scratch` on `stream`, and waits for the result.
/// Throws std::invalid_argument when mine.size() != counts[rank] or counts has not one entry per rank.
std::vector<int> gather_over_ranks(const std::vector<int>& mine, const std::vector<int>& counts, ncclComm_t comm,
                                   cudaStream_t stream, DeviceBuffer<int>& scratch);

/// `mine` summed over the ranks (loss sum, correct, seen and absolute errors), through sum_over_ranks().
EpochStats sum_stats_over_ranks(const EpochStats& mine, ncclComm_t comm, cudaStream_t stream,
                                DeviceBuffer<double>& scratch);

}  // namespace course
