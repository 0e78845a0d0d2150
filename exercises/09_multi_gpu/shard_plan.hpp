/// @file shard_plan.hpp
/// @brief Stage 09 (Task 9.1): which examples each rank trains on in each step of an epoch, and how much its gradient weighs.
///
/// One GPU with batch G walks the epoch's shuffled order (course::epoch_order)
/// in steps: step s takes the positions [sG, min(sG + G, n)) of the order. With
/// N ranks (one process per GPU), every rank computes step s at the same time,
/// each on its own slice of those same positions, cut as stage 03 cut a batch
/// among threads (course::shard_of): the first B mod N ranks hold one example
/// more than the others. The N slices of step s together are exactly the batch
/// of step s on one GPU, which is what makes N GPUs compute what one GPU does.
///
///     n = 10 examples, G = 4, N = 2 ranks        step 0        step 1        step 2
///     the epoch's order                          o0 o1 o2 o3 | o4 o5 o6 o7 | o8 o9
///     rank 0                                     o0 o1       | o4 o5       | o8
///     rank 1                                           o2 o3 |       o6 o7 |    o9
///
/// Each rank's engine divides its loss by its own slice's size B_r, so its
/// gradient is the mean over its slice. The one-GPU gradient is the mean over
/// the whole batch of B examples:
///
///     g = (1/B) sum_i dL_i = sum_r (B_r / B) * [(1/B_r) sum_{i in slice r} dL_i] = sum_r w_r g_r
///
/// so each rank weighs its gradient by w_r = B_r / B before the all-reduce sums
/// them (Task 9.2). In a full step with N dividing G every weight is 1/N; in a
/// short last step, or with G not a multiple of N, the weights differ, and a
/// rank with an empty slice weighs 0. The weights of a step sum to 1.
///
/// A rank's engine sees only its own examples: rank_order() lists them, step
/// by step, and the engine takes them in batches of local_batch() (its slice
/// of a full step), so its b-th batch is its slice of step b.
#pragma once

#include <vector>

#include "03_openmp/shard.hpp"

namespace course {

/// One epoch of `examples` cut into steps of `global_batch` and each step into `world` slices.
class ShardPlan {
 public:
  /// Throws std::invalid_argument for examples < 0, world < 1, or a global
  /// batch smaller than the world (a full step would leave a rank without an
  /// example, and every GPU is there to work: use a larger --batch).
  ShardPlan(long examples, int global_batch, int world);

  long examples() const { return examples_; }
  int global_batch() const { return global_batch_; }
  int world() const { return world_; }

  /// Steps in the epoch: ceil(examples / global_batch), 0 for an empty epoch.
  long steps() const { return (examples_ + global_batch_ - 1) / global_batch_; }
  /// Examples in step `step`: the global batch, or what is left for the last one.
  int batch_size(long step) const;
  /// True when step `step` holds a whole global batch (then every rank has local_batch() examples).
  bool full(long step) const { return batch_size(step) == global_batch_; }
  /// Rank `rank`'s slice of a full step: its engine's batch size.
  int local_batch(int rank) const;
  /// Examples trained by all ranks together once step `step` is done.
  long examples_through(long step) const;

  /// Rank `rank`'s slice of step `step`, as positions [begin, end) of the epoch's order.
  /// Throws std::out_of_range for a step outside [0, steps()) or a rank outside [0, world()).
  Shard slice(long step, int rank) const;
  /// The weight of rank `rank`'s gradient in step `step`: its slice's size over the step's.
  float weight(long step, int rank) const;
  /// Rank `rank`'s examples over the epoch: epoch_order at the positions of its
  /// slice of step 0, then of step 1, and so on. `epoch_order` must hold examples() entries.
  std::vector<int> rank_order(const std::vector<int>& epoch_order, int rank) const;

 private:
  void check(long step, int rank) const;
  void check_rank(int rank) const;
  long examples_;
  int global_batch_, world_;
};

}  // namespace course
