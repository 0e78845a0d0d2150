/// @file data_parallel_engine.cpp
/// @brief Stage 09: one rank's data-parallel engine (glue, not a task; see the header).
#include "09_multi_gpu/data_parallel_engine.hpp"

#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/multi_gpu/rank_kernels.hpp"
#include "09_multi_gpu/rank_sums.hpp"
#include "09_multi_gpu/shard_plan.hpp"
#include "common/multi_gpu/nccl_check.hpp"
#include "common/core/rng.hpp"

namespace course {

namespace {

// The watchdog counts every this many steps (and every reduction): often enough
// to see a rank stuck, seldom enough to cost nothing.
constexpr long kStepsPerCount = 16;

// COURSE_TEST_KILL_RANK_AT_STEP=R:S makes rank R kill itself after queueing its
// S-th step: how the tests make a rank die. -1 when unset or for another rank.
int kill_step_for(int rank) {
  const char* spec = std::getenv("COURSE_TEST_KILL_RANK_AT_STEP");
  if (spec == nullptr) return -1;
  int r = -1, s = -1;
  if (std::sscanf(spec, "%d:%d", &r, &s) != 2 || r < 0 || s < 1)
    throw std::invalid_argument(std::string("COURSE_TEST_KILL_RANK_AT_STEP='") + spec + "' is not RANK:STEP");
  return r == rank ? s : -1;
}

}  // namespace

DataParallelEngine::DataParallelEngine(std::unique_ptr<GpuEngine> local, std::unique_ptr<Communicator> comm,
                                       const EngineConfig& global, const DataParallelOptions& options)
    : global_(global), options_(options), comm_(std::move(comm)), local_(std::move(local)) {
  const ShardPlan plan(0, global_.batch, world());  // checks the global batch against the world
  if (local_->batch() != plan.local_batch(rank()))
    throw std::invalid_argument("rank " + std::to_string(rank()) + "'s engine has batch " +
                                std::to_string(local_->batch()) + ", but its share of the global batch " +
                                std::to_string(global_.batch) + " is " + std::to_string(plan.local_batch(rank())));
  if (options_.allreduce != "auto" && options_.allreduce != "flat" && options_.allreduce != "buckets" &&
      options_.allreduce != "peer")
    throw std::invalid_argument("unknown all-reduce schedule '" + options_.allreduce + "' (auto, flat, buckets, peer)");
  // auto: the fastest measured (lesson 09): the peer sum where every GPU reaches the others'
  // memory (one host), else the buckets. The answer is collective: the same on every rank.
  if (options_.allreduce == "auto")
    options_.allreduce = world() > 1 && peer_sum_refusal(comm_->get(), rank(), world()).empty() ? "peer" : "buckets";
  versions_ = check_nccl_versions();
  kill_at_step_ = kill_step_for(rank());

  weight_.resize(1);
  set_weight(1.f);
  weighted_sum_ = create_weighted_sum(comm_->get(), weight_.get());
  have_op_ = true;
  // One rank has nothing to sum; unless asked to (DataParallelOptions::sum_alone), it runs its step
  // as the stage alone does.
  const bool sums_gradients = world() > 1 || options_.sum_alone;
  timing_.profiler = global_.profile && sums_gradients ? &profiler_ : nullptr;
  if (options_.allreduce == "flat") {
    flat_ = std::make_unique<FlatAllReduce>(comm_->get(), weighted_sum_, local_->gradients(), local_->parameter_count(),
                                            timing_);
    schedule_ = flat_.get();
  } else if (options_.allreduce == "peer") {
    const std::string refusal = peer_sum_refusal(comm_->get(), rank(), world());
    if (!refusal.empty())
      throw std::invalid_argument("--allreduce peer cannot run here: " + refusal +
                                  "; --allreduce flat or buckets (NCCL) runs on any GPUs");
    peer_ = std::make_unique<PeerAllReduce>(comm_->get(), rank(), world(), weight_.get(), local_->gradients(),
                                            local_->parameter_count(), timing_);
    schedule_ = peer_.get();
  } else {
    bucketed_ = std::make_unique<BucketedAllReduce>(comm_->get(), weighted_sum_, local_->gradients(),
                                                    local_->gradient_ranges(),
                                                    plan_buckets(local_->gradient_ranges(), options_.bucket_bytes),
                                                    timing_);
    schedule_ = bucketed_.get();
  }
  if (global_.profile) profiler_.enable();
  if (sums_gradients) local_->set_gradient_sync(this);
}

DataParallelEngine::~DataParallelEngine() {
  cudaStreamSynchronize(local_->stream());  // nothing queued may still use what goes next
  bucketed_.reset();  // waits for its stream

  flat_.reset();
  peer_.reset();
  if (have_op_) ncclRedOpDestroy(weighted_sum_, comm_->get());
}

std::string DataParallelEngine::device() const { return std::to_string(world()) + " x " + local_->device(); }

void DataParallelEngine::gradients_queued(const GradientRange& range, cudaStream_t stream) {
  schedule_->gradients_queued(range, stream);
}

void DataParallelEngine::before_update(cudaStream_t stream) { schedule_->before_update(stream); }

void DataParallelEngine::set_weight(float weight) {
  if (weight == weight_now_) return;
  store_on_device(weight_.get(), weight, local_->stream());  // after the last step's all-reduces
  weight_now_ = weight;
}

void DataParallelEngine::count_progress() {
  comm_->watchdog().expect_one();
  comm_->watchdog().count_on(local_->stream());
}

std::vector<double> DataParallelEngine::sum_over_ranks_now(const std::vector<double>& mine) {
  comm_->watchdog().expect_one();  // the host waits inside: the watchdog sees the GPU behind until it is done
  std::vector<double> sums = sum_over_ranks(mine, comm_->get(), local_->stream(), sums_);
  comm_->watchdog().count_on(local_->stream());
  return sums;
}

EpochStats DataParallelEngine::train_epoch(const Dataset& train, int epoch, const BatchCallback& on_batch) {
  const ShardPlan plan(train.size(), global_.batch, world());
  // Every rank draws the same order (same seed, same epoch) and keeps its slices of it.
  local_->begin_epoch_in_order(train, plan.rank_order(orders_.order(train.size(), global_.seed, epoch), rank()));
  // Capturing NCCL calls is collective: every rank captures the epoch's first
  // full step anew, whatever made its own engine want to (or not).
  if (world() > 1) local_->drop_graph();
  int batch = 0;  // the local engine's next batch
  for (long s = 0; s < plan.steps(); ++s) {
    set_weight(plan.weight(s, rank()));
    // A short step runs uncaptured on every rank, even where this rank's slice
    // happens to be full: capturing NCCL calls is a collective choice.
    capturable_ = plan.full(s);
    timing_.recording = global_.profile;
    if (plan.slice(s, rank()).size() > 0)
      local_->train_batch(batch++);
    else
      local_->train_batch_without_examples();
    if (global_.profile) profiler_.collect();
    if ((s + 1) % kStepsPerCount == 0 || s + 1 == plan.steps()) count_progress();
    if (++steps_done_ == kill_at_step_) ::kill(::getpid(), SIGKILL);
    if (on_batch) on_batch(plan.examples_through(s), std::nan(""));
  }
  timing_.recording = false;
  const EpochStats mine = local_->end_epoch();
  const std::vector<double> sums = sum_over_ranks_now(
      {mine.loss_sum, static_cast<double>(mine.correct), static_cast<double>(mine.seen), mine.abs_error_sum});
  return {sums[0], static_cast<long>(sums[1]), static_cast<long>(sums[2]), sums[3]};
}

std::string DataParallelEngine::warm_up(const Dataset& train) {
  if (world() == 1) return local_->warm_up(train);  // one rank: the engine's own warm-up
  // Several ranks: only what each does alone (the upload, each batch size prepared). The first pass
  // runs the all-reduce, which every rank must join at the same step: it stays in the first epoch,
  // where the ranks take it together, and so does the capture (every epoch's, drop_graph).
  const ShardPlan plan(train.size(), global_.batch, world());
  if (plan.steps() == 0) return "";
  std::vector<int> order(static_cast<std::size_t>(train.size()));
  std::iota(order.begin(), order.end(), 0);
  local_->begin_epoch_in_order(train, plan.rank_order(order, rank()));
  local_->end_epoch();  // no step: nothing is counted
  return "the training set uploaded, each batch size prepared (the step's own setup); the first pass, which "
         "the all-reduce of every rank joins, stays in the first epoch";
}

const Dataset& DataParallelEngine::evaluation_slice(const Dataset& data) {
  const Shard mine = shard_of(data.size(), world(), rank());
  if (mine.begin == 0 && mine.end == data.size()) return data;
  const std::uint64_t key = dataset_fingerprint(data);
  if (eval_size_ != data.size() || eval_key_ != key) {
    const long D = data.shape.size();
    eval_slice_.name = data.name;
    eval_slice_.source = data.source;
    eval_slice_.shape = data.shape;
    eval_slice_.classes = data.classes;
    eval_slice_.class_names = data.class_names;
    eval_slice_.images.assign(data.images.begin() + mine.begin * D, data.images.begin() + mine.end * D);
    eval_slice_.labels.assign(data.labels.begin() + mine.begin, data.labels.begin() + mine.end);
    eval_key_ = key;
    eval_size_ = data.size();
  }
  return eval_slice_;
}

EpochStats DataParallelEngine::evaluate(const Dataset& data, std::vector<int>* predictions) {
  std::vector<int> mine;
  const EpochStats local = local_->evaluate(evaluation_slice(data), predictions != nullptr ? &mine : nullptr);
  const std::vector<double> sums = sum_over_ranks_now(
      {local.loss_sum, static_cast<double>(local.correct), static_cast<double>(local.seen), local.abs_error_sum});
  if (predictions != nullptr) {
    std::vector<int> counts;
    for (int r = 0; r < world(); ++r) counts.push_back(shard_of(data.size(), world(), r).size());
    comm_->watchdog().expect_one();
    *predictions = gather_over_ranks(mine, counts, comm_->get(), local_->stream(), gathered_);
    comm_->watchdog().count_on(local_->stream());
  }
  return {sums[0], static_cast<long>(sums[1]), static_cast<long>(sums[2]), sums[3]};
}

bool DataParallelEngine::stop_requested(bool asked, bool at_epoch_end) {
  if (world() == 1) return asked;  // alone, a rank stops after any step, as stage 06 does
  if (!at_epoch_end) return false;
  return sum_over_ranks_now({asked ? 1.0 : 0.0})[0] > 0;
}

std::vector<LayerTime> DataParallelEngine::layer_times() const {
  std::vector<LayerTime> rows = local_->layer_times();
  const std::vector<LayerTime>& mine = profiler_.times();
  rows.insert(rows.end(), mine.begin(), mine.end());
  return rows;
}

void DataParallelEngine::reset_layer_times() {
  local_->reset_layer_times();
  profiler_.reset();
}

std::vector<Bucket> DataParallelEngine::buckets() const {
  return bucketed_ ? bucketed_->buckets() : std::vector<Bucket>{};
}

nlohmann::json DataParallelEngine::stage_results() const {
  nlohmann::json local_batches = nlohmann::json::array();
  const ShardPlan plan(0, global_.batch, world());
  for (int r = 0; r < world(); ++r) local_batches.push_back(plan.local_batch(r));
  nlohmann::json buckets = nlohmann::json::array();
  if (bucketed_)
    for (const Bucket& b : bucketed_->buckets())
      buckets.push_back({{"layers", bucket_layers(b, bucketed_->ranges())}, {"bytes", b.bytes()}});
  const char* nvls = std::getenv("NCCL_NVLS_ENABLE");
  return {{"ranks", world()},
          {"global_batch", global_.batch},
          {"local_batches", local_batches},
          {"allreduce", options_.allreduce},
          {"bucket_bytes", options_.allreduce == "buckets" ? options_.bucket_bytes : 0},
          {"buckets", buckets},
          {"gradient_bytes", local_->parameter_count() * sizeof(float)},
          {"graph", local_->graph_enabled()},
          {"nccl_library", nccl_version_string(versions_.library)},
          {"nccl_header", nccl_version_string(versions_.header)},
          {"nccl_nvls_enable", nvls != nullptr ? nvls : ""}};
}

}  // namespace course
