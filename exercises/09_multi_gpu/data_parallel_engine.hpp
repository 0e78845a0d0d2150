/// @file data_parallel_engine.hpp
/// @brief Stage 09: one rank of a data-parallel run: the GPU engine on this GPU's share, gradients summed over the GPUs (glue, not a task).
///
/// Every rank holds a whole replica of the model, the same initial weights
/// (the same seed) and the same data. In each step every rank
///
/// 1. trains its slice of the global batch (shard_plan.hpp, Task 9.1) with its
///    own engine: gather, forward, loss (the mean over its slice), backward;
/// 2. replaces its gradients by the weighted sum of every rank's (Task 9.2:
///    one flat all-reduce after the backward pass; or Task 9.4: buckets, on a
///    second stream, during it; or, between the GPUs of one host, one kernel
///    that writes into the other GPUs' memory, peer_allreduce.hpp): now every
///    rank holds the gradient that one GPU would compute for the whole global batch;
/// 3. applies the same SGD update to the same weights: the replicas stay equal,
///    bit for bit (an all-reduce leaves the same bits on every rank).
///
/// What this wrapper needs from an engine is small: its flat gradient buffer
/// and where each layer's gradients lie in it (gradient_ranges()), the
/// GradientSync hooks in its step (common/gpu/gradient_sync.hpp), a way to start an
/// epoch on a given list of examples (begin_epoch_in_order()), and a step for a
/// rank without examples. The one GPU engine (common/gpu/gpu_engine.hpp) has them,
/// whatever step model it drives: stage 08's fused step by default (whose whole steps
/// the engine then runs its own way, with the gradients whole; alone, a rank runs them
/// whole, as stage 08 does).
///
/// Around the steps: the epoch's loss sum and correct count, and the
/// evaluation of the test set (each rank evaluates a slice), are summed over
/// the ranks (Task 9.5). Only rank 0 writes files (Engine::writes_files()); a
/// Ctrl-C stops every rank at the end of the epoch, where they meet anyway
/// (Engine::stop_requested()).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/gpu/engine_parts.hpp"
#include "common/gpu/gpu_engine.hpp"
#include "09_multi_gpu/allreduce_timing.hpp"
#include "09_multi_gpu/bucketed_allreduce.hpp"
#include "09_multi_gpu/communicator.hpp"
#include "09_multi_gpu/flat_allreduce.hpp"
#include "09_multi_gpu/peer_allreduce.hpp"
#include "common/train/engine.hpp"
#include "common/data/epoch_order_ahead.hpp"

namespace course {

/// How the gradients are summed.
struct DataParallelOptions {
  std::string allreduce = "auto";  ///< "flat" (Task 9.2), "buckets" (Task 9.4), "peer" (one host, peer_allreduce.hpp) or "auto": peer where it can run, else buckets
  std::size_t bucket_bytes = 128 * 1024;  ///< the smallest bucket (buckets only)
  /// With one rank: sum the gradients anyway (a sum of one, x * 1 = x bit for bit), so the run takes the
  /// path of a run of many ranks, which the one-GPU tests check. false: one rank runs its step as the
  /// stage alone does (stage 08's fused step then runs its few kernels, with no sync in between).
  bool sum_alone = true;
};

/// One rank's engine (see the file's description).
class DataParallelEngine : public Engine, private GradientSync {
 public:
  /// `local` trains this rank's slices: its batch must be ShardPlan's local
  /// batch of this rank for global.batch. `global` is the run's configuration
  /// (its batch is the global batch). Throws std::invalid_argument for a batch
  /// that does not match, an unknown --allreduce, or "peer" where the GPUs cannot
  /// address each other's memory (the same answer on every rank).
  DataParallelEngine(std::unique_ptr<GpuEngine> local, std::unique_ptr<Communicator> comm,
                     const EngineConfig& global, const DataParallelOptions& options);
  ~DataParallelEngine() override;
  DataParallelEngine(const DataParallelEngine&) = delete;
  DataParallelEngine& operator=(const DataParallelEngine&) = delete;

  /// "2 x NVIDIA H100 80GB HBM3 (sm_90)": the GPUs of the run.
  std::string device() const override;
  void set_learning_rate(double lr) override { local_->set_learning_rate(lr); }
  /// One rank: its engine's own warm-up (GpuEngine::warm_up). Several: each rank uploads its slices of
  /// the set and prepares each batch size; the first pass, whose all-reduce every rank joins, stays in
  /// the first epoch.
  std::string warm_up(const Dataset& train) override;
  /// Every rank trains its slice of every step; the stats are summed over the ranks.
  EpochStats train_epoch(const Dataset& train, int epoch, const BatchCallback& on_batch) override;
  /// Each rank evaluates a slice; the stats and the predictions are gathered on every rank.
  EpochStats evaluate(const Dataset& data, std::vector<int>* predictions) override;
  std::vector<NamedTensor> get_parameters() override { return local_->get_parameters(); }
  void set_parameters(const std::vector<NamedTensor>& params) override { local_->set_parameters(params); }
  std::vector<NamedTensor> get_optimizer_state() override { return local_->get_optimizer_state(); }
  void set_optimizer_state(const std::vector<NamedTensor>& state) override { local_->set_optimizer_state(state); }
  /// The local engine's record of its step's choices, e.g. the cuDNN step's conv algorithms (rank 0's is the one a checkpoint keeps).
  EngineState engine_state() const override { return local_->engine_state(); }
  /// What the local step chose for this GPU (Engine::gpu_choices()).
  std::vector<std::string> gpu_choices() const override { return local_->gpu_choices(); }
  /// The local engine's rows, then the all-reduce's (allreduce_timing.hpp).
  std::vector<LayerTime> layer_times() const override;
  void reset_layer_times() override;
  /// Every rank's absolute errors (the step's loss) are summed over the ranks with the loss.
  bool reports_mae() const override { return local_->reports_mae(); }
  /// Rank 0 only.
  bool writes_files() const override { return comm_->rank() == 0; }
  /// One rank alone stops where asked; several stop together at an epoch's end, when any was asked.
  bool stop_requested(bool asked, bool at_epoch_end) override;
  /// The ranks, the shares, the schedule and its buckets, NCCL's versions.
  nlohmann::json stage_results() const override;

  int rank() const { return comm_->rank(); }
  int world() const { return comm_->world(); }
  GpuEngine& local() { return *local_; }
  /// The buckets (empty for the flat schedule).
  std::vector<Bucket> buckets() const;

 private:
  // GradientSync, between the local engine and the schedule (flat_ or bucketed_).
  void gradients_queued(const GradientRange& range, cudaStream_t stream) override;
  void before_update(cudaStream_t stream) override;
  bool uses_each_layer() const override { return schedule_->uses_each_layer(); }
  bool step_may_be_captured() const override { return capturable_; }
  void set_weight(float weight);
  /// The watchdog expects one more count, and queues it on the local stream (after what is queued there).
  void count_progress();
  std::vector<double> sum_over_ranks_now(const std::vector<double>& mine);
  const Dataset& evaluation_slice(const Dataset& data);

  EngineConfig global_;
  DataParallelOptions options_;
  std::unique_ptr<Communicator> comm_;   // declared before what uses it: destroyed after it
  std::unique_ptr<GpuEngine> local_;
  EpochOrderAhead orders_;               // the next epoch's order, shuffled on the host while this epoch runs
  NcclVersions versions_;
  DeviceBuffer<float> weight_;           // this rank's weight in the current step (the pre-multiplied sum reads it)
  float weight_now_ = -1.f;              // what weight_ holds (-1: nothing yet)
  ncclRedOp_t weighted_sum_{};
  bool have_op_ = false;
  GpuProfiler profiler_;
  AllReduceTiming timing_;
  std::unique_ptr<FlatAllReduce> flat_;
  std::unique_ptr<BucketedAllReduce> bucketed_;
  std::unique_ptr<PeerAllReduce> peer_;
  GradientSync* schedule_ = nullptr;     // flat_, bucketed_ or peer_
  bool capturable_ = true;
  DeviceBuffer<double> sums_;
  DeviceBuffer<int> gathered_;
  Dataset eval_slice_;
  std::uint64_t eval_key_ = 0;
  long eval_size_ = -1;
  long steps_done_ = 0;
  int kill_at_step_ = -1;                // COURSE_TEST_KILL_RANK_AT_STEP, for the tests of a dying rank
};

}  // namespace course
