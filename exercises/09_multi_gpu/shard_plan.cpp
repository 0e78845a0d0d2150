/// @file shard_plan.cpp
/// @brief Stage 09 (Task 9.1): the slices of every step, their weights, and a rank's share of the epoch.
#include "09_multi_gpu/shard_plan.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/core/not_implemented.hpp"

namespace course {

ShardPlan::ShardPlan(long examples, int global_batch, int world)
    : examples_(examples), global_batch_(global_batch), world_(world) {
  if (examples < 0) throw std::invalid_argument("an epoch cannot have " + std::to_string(examples) + " examples");
  if (world < 1) throw std::invalid_argument("a run needs at least one rank, not " + std::to_string(world));
  if (global_batch < world)
    throw std::invalid_argument("the global batch (--batch " + std::to_string(global_batch) + ") is smaller than the " +
                                std::to_string(world) + " ranks: every GPU needs at least one example of each full "
                                "batch (raise --batch to " + std::to_string(world) + " or more)");
}

int ShardPlan::batch_size(long step) const {
  check(step, 0);
  return static_cast<int>(std::min<long>(global_batch_, examples_ - step * global_batch_));
}

int ShardPlan::local_batch(int rank) const {
  check_rank(rank);
  return shard_of(global_batch_, world_, rank).size();
}

long ShardPlan::examples_through(long step) const {
  check(step, 0);
  return std::min(examples_, (step + 1) * global_batch_);
}

void ShardPlan::check_rank(int rank) const {
  if (rank < 0 || rank >= world_)
    throw std::out_of_range("rank " + std::to_string(rank) + " of a run of " + std::to_string(world_) + " ranks");
}

void ShardPlan::check(long step, int rank) const {
  if (step < 0 || step >= steps())
    throw std::out_of_range("step " + std::to_string(step) + " of an epoch of " + std::to_string(steps()) + " steps");
  check_rank(rank);
}

Shard ShardPlan::slice(long step, int rank) const {
  check(step, rank);
  // TODO(Task 9.1): rank `rank`'s positions of step `step`: the step starts at step * global batch, and its batch_size(step) examples are cut among the ranks as shard_of cuts a batch
  // HINT: shard_of(B, world, rank) gives positions within the step's batch; shift both ends by where the step starts.
  throw course::NotImplemented("Task 9.1", "09_multi_gpu/shard_plan.cpp", "docs/lessons/09_multi_gpu.md");
}

float ShardPlan::weight(long step, int rank) const {
  check(step, rank);
  // TODO(Task 9.1): the share of step `step`'s examples that rank `rank` holds (0 for an empty slice)
  // HINT: compute in float, as the all-reduce will multiply by it: a share of 64 in 64 must be exactly 1.
  throw course::NotImplemented("Task 9.1", "09_multi_gpu/shard_plan.cpp", "docs/lessons/09_multi_gpu.md");
}

std::vector<int> ShardPlan::rank_order(const std::vector<int>& epoch_order, int rank) const {
  if (static_cast<long>(epoch_order.size()) != examples_)
    throw std::invalid_argument("rank_order: an order of " + std::to_string(epoch_order.size()) +
                                " examples for an epoch of " + std::to_string(examples_));
  check_rank(rank);
  std::vector<int> mine;
  // TODO(Task 9.1): append epoch_order's entries at rank `rank`'s slice of every step, step after step
  throw course::NotImplemented("Task 9.1", "09_multi_gpu/shard_plan.cpp", "docs/lessons/09_multi_gpu.md");
  return mine;
}

}  // namespace course
