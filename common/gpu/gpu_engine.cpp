/// @file gpu_engine.cpp
/// @brief The one GPU engine (see the header).
#include "common/gpu/gpu_engine.hpp"

#include <algorithm>
#include <cstddef>
#include <iostream>
#include <numeric>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "common/gpu/cuda_check.hpp"
#include "common/gpu/gpu_capability.hpp"

namespace course {

OwnedStream::OwnedStream() { CUDA_CHECK(cudaStreamCreate(&stream_)); }

OwnedStream::~OwnedStream() {
  if (stream_ != nullptr) {
    cudaStreamSynchronize(stream_);  // errors ignored: after a GPU fault there is nothing left to wait for
    cudaStreamDestroy(stream_);
  }
}

namespace {

/// The batch size, checked before anything touches the GPU.
const EngineConfig& checked(const EngineConfig& cfg) {
  if (cfg.batch < 1) throw std::invalid_argument("batch size must be at least 1, got " + std::to_string(cfg.batch));
  return cfg;
}

}  // namespace

std::vector<float> GpuEngine::starting_values(const StepModel& step, const std::vector<NamedTensor>& initial) {
  return step.layout().flatten_checked(initial.empty() ? step.initial_parameters() : initial, "");
}

GpuEngine::GpuEngine(const EngineConfig& cfg, std::unique_ptr<StepModel> step, const std::vector<NamedTensor>& initial,
                     const GpuEngineOptions& options)
    : cfg_(checked(cfg)), step_(std::move(step)), options_(options), start_(starting_values(*step_, initial)) {
  for (const std::string& row : step_->layer_rows()) profiler_.add_row(row);
  gather_row_ = profiler_.add_row("batch gather");
  loss_row_ = profiler_.add_row("loss (" + cfg_.loss + ")");
  update_row_ = profiler_.add_row("sgd update");

  params_.upload(start_);
  grads_.resize(start_.size());
  velocity_.resize(start_.size());
  if (!start_.empty()) {
    CUDA_CHECK(cudaMemset(grads_.get(), 0, start_.size() * sizeof(float)));
    CUDA_CHECK(cudaMemset(velocity_.get(), 0, start_.size() * sizeof(float)));
  }
  start_ = std::vector<float>();  // on the device now
  hyper_.resize(2);
  upload_hyper();
  const auto batch = static_cast<std::size_t>(cfg_.batch);
  batch_.resize(batch * static_cast<std::size_t>(cfg_.input.size()));
  batch_labels_.resize(batch);
  step_->allocate(cfg_.batch);
  sums_.allocate();
  eval_sums_.allocate();
  scratch_sums_.allocate();
  epoch_.allocate();
  set_batch_parts();
  if (cfg_.profile) profiler_.enable();
  prepare(cfg_.batch);  // what the full batch needs, before any timing
}

GpuEngine::~GpuEngine() {
  cudaStreamSynchronize(stream());  // replays may still read the buffers about to go; errors ignored
}

std::string GpuEngine::device() const {
  const std::string name = gpu_name();
  if (chosen_capability() == device_capability()) return name;
  return name + ", choosing as " + chosen_capability_note();
}

void GpuEngine::set_learning_rate(double lr) {
  cfg_.lr = lr;
  upload_hyper();
}

void GpuEngine::upload_hyper() {
  // On the engine's stream: the steps already queued keep the old rate, every later update reads
  // the new one. From pageable memory the call returns once `values` has been read.
  const float values[2] = {static_cast<float>(cfg_.lr), static_cast<float>(cfg_.momentum)};
  CUDA_CHECK(cudaMemcpyAsync(hyper_.get(), values, sizeof values, cudaMemcpyHostToDevice, stream()));
}

std::vector<LayerTime> GpuEngine::layer_times() const {
  if (!cfg_.profile) return {};
  std::vector<LayerTime> rows = profiler_.times();
  // A step whose head computes the loss times it in the head's row: the engine's loss row, never timed, goes.
  if (!profiler_.ever_timed(loss_row_)) rows.erase(rows.begin() + static_cast<std::ptrdiff_t>(loss_row_));
  return rows;
}

nlohmann::json GpuEngine::stage_results() const {
  nlohmann::json results = step_->stage_results();
  if (results.is_null()) results = nlohmann::json::object();  // a step with no facts of its own
  if (results.is_object()) {  // what the engine adds to a step's own
    results["graph"] = graph_enabled();
    results["graph_nodes"] = graph_nodes();
    results["graph_replays"] = graph_replays_;
    results["graph_captures"] = graph_captures_;
  }
  return results;
}

// ---- the training step ----------------------------------------------------------------------

StepContext GpuEngine::context(DeviceSums& sums, bool training) {
  StepContext ctx;
  ctx.stream = stream();
  ctx.params = params_.get();
  ctx.grads = grads_.get();
  ctx.velocity = velocity_.get();
  ctx.param_count = static_cast<long>(params_.size());
  ctx.hyper = hyper_.get();
  ctx.sums = &sums;
  ctx.training = training;
  ctx.profiler = &profiler_;
  ctx.recording = recording_ && training;
  ctx.sync = training ? sync_ : nullptr;
  ctx.batch = &batch_parts_;
  return ctx;
}

void GpuEngine::set_batch_parts() {
  TrainingBatch& t = batch_parts_;
  t.step = epoch_.step();
  t.full_batch = cfg_.batch;
  t.D = cfg_.input.size();
  t.x = batch_.get();
  t.y = batch_labels_.get();
  DeviceLossSlots& slots = sums_.loss_slots(stream(), kLossCheckLag + 1);  // made once, kept for every epoch
  t.loss_slots = slots.device_slots();
  t.loss_slot_count = slots.count();
  t.gather_row = gather_row_;
  t.loss_row = loss_row_;
  t.update_row = update_row_;
}

void GpuEngine::queue_step(int B, DeviceSums& sums, bool update) {
  TrainingBatch& t = batch_parts_;
  if (t.update != update || bound_sums_ != &sums) ++t.binding;  // a warm-up pass, or the first step after one
  t.update = update;
  bound_sums_ = &sums;
  step_->train_step(context(sums, /*training=*/true), B);
}

void GpuEngine::prepare(int B) { step_->prepare(context(scratch_sums_, /*training=*/false), B); }

bool GpuEngine::captured_step_ready() {
  const GraphKey key{epoch_.data().images.get(), epoch_.data().labels.get(), epoch_.order(),
                     step_->captured_memory()};
  if (graph_.ready() && key == graph_key_) return true;
  if (!warmed_up_) {
    // One uncaptured pass first (no update, sums to scratch, the step counter untouched):
    // whatever a call does once (a library's setup, a kernel's tuning) happens outside the
    // capture, where waiting and allocating are allowed. Its gradients are overwritten.
    queue_step(cfg_.batch, scratch_sums_, /*update=*/false);
    CUDA_CHECK(cudaStreamSynchronize(stream()));
    warmed_up_ = true;
  }
  try {
    graph_.capture(stream(), [&] { queue_step(cfg_.batch, sums_, /*update=*/true); });
  } catch (const GpuError& e) {
    std::cerr << "warning: capturing the training step as a CUDA graph failed (" << e.what()
              << "); the run goes on without the graph\n";
    options_.graph = false;
    return false;
  }
  graph_key_ = key;
  ++graph_captures_;
  return true;
}

void GpuEngine::run_captured() {
  if (!captured_step_ready()) {
    queue_step(cfg_.batch, sums_, /*update=*/true);
    return;
  }
  graph_.replay(stream());
  ++graph_replays_;
}

void GpuEngine::drop_graph() {
  CUDA_CHECK(cudaStreamSynchronize(stream()));  // a replay of the old graph may still run
  graph_.reset();
}

// ---- epochs ---------------------------------------------------------------------------------

void GpuEngine::begin_epoch(const Dataset& train, int epoch) {
  begin_epoch_in_order(train, orders_.order(train.size(), cfg_.seed, epoch));
}

void GpuEngine::begin_epoch_in_order(const Dataset& train, const std::vector<int>& order) {
  epoch_.begin(train, order, cfg_.input, cfg_.classes, sums_, stream());
  TrainingBatch& t = batch_parts_;  // the addresses the gather reads this epoch
  if (t.images != epoch_.data().images.get() || t.labels != epoch_.data().labels.get() || t.order != epoch_.order())
    ++t.binding;
  t.images = epoch_.data().images.get();
  t.labels = epoch_.data().labels.get();
  t.order = epoch_.order();
  // Every batch size of the epoch is prepared now, outside the steps: the full
  // batches and, when the set does not divide evenly, the last one.
  const int size = epoch_.size();
  if (size > 0) {
    prepare(std::min(cfg_.batch, size));
    if (size % cfg_.batch != 0) prepare(size % cfg_.batch);
  }
}

void GpuEngine::train_batch(int b) {
  const int B = epoch_.batch_size(b, cfg_.batch, "GpuEngine::train_batch");
  prepare(B);
  recording_ = cfg_.profile;  // only training steps are profiled
  if (graph_enabled() && B == cfg_.batch && (sync_ == nullptr || sync_->step_may_be_captured()))
    run_captured();
  else
    queue_step(B, sums_, /*update=*/true);
  if (recording_) profiler_.collect();
  recording_ = false;
  epoch_.batch_queued();
}

void GpuEngine::train_batch_without_examples() {
  if (!epoch_.started()) throw std::logic_error("GpuEngine::train_batch_without_examples before begin_epoch");
  if (epoch_.next() < num_batches())
    throw std::logic_error("GpuEngine::train_batch_without_examples: batch " + std::to_string(epoch_.next()) + " of " +
                           std::to_string(num_batches()) + " still has examples");
  if (grads_.size() > 0) CUDA_CHECK(cudaMemsetAsync(grads_.get(), 0, grads_.size() * sizeof(float), stream()));
  const StepContext ctx = context(sums_, /*training=*/true);
  if (sync_ != nullptr) {
    for (const GradientRange& r : step_->gradient_ranges()) ctx.gradients_queued(r);
    sync_->before_update(stream());
  }
  ctx.time(update_row_, Pass::Backward, [&] {
    step_->update(ctx);
    end_training_step(ctx);
  });
  epoch_.batch_queued();
}

void GpuEngine::set_gradient_sync(GradientSync* sync) {
  drop_graph();
  warmed_up_ = false;  // the warm-up runs the new hooks' work once outside a capture too
  sync_ = sync;
}

std::string GpuEngine::warm_up_begun_epoch() {
  if (!epoch_.started()) throw std::logic_error("GpuEngine::warm_up_begun_epoch before begin_epoch");
  if (epoch_.next() != 0) throw std::logic_error("GpuEngine::warm_up_begun_epoch after the epoch's first step");
  const int size = epoch_.size();
  if (size == 0) return "";
  const int full = std::min(cfg_.batch, size), last = size % cfg_.batch;
  // Both sizes were prepared when the epoch began (descriptors, algorithms, workspaces); the passes pay
  // what a step does the first time it runs (a library's lazy setup, the kernels' loading, a tuner).
  std::vector<int> sizes{full};
  // A short last batch's pass would run the sync's hooks with this rank's size, which another rank
  // may not share (data parallelism gives the ranks slices of different sizes, or none): left out.
  if (last != 0 && last != full && sync_ == nullptr) sizes.push_back(last);
  std::string what = "one uncounted pass of batch " + std::to_string(full);
  for (int B : sizes) {
    prepare(B);
    queue_step(B, scratch_sums_, /*update=*/false);
  }
  if (sizes.size() > 1) what += " and of the last batch's " + std::to_string(last);
  CUDA_CHECK(cudaStreamSynchronize(stream()));
  if (full == cfg_.batch) warmed_up_ = true;  // what run_captured's own first pass would have done
  // A capture with a sync's collective calls is every rank's choice at every epoch (drop_graph): not here.
  if (graph_enabled() && full == cfg_.batch && sync_ == nullptr && captured_step_ready())
    what += ", the step captured as a CUDA graph";
  return what;
}

std::string GpuEngine::warm_up(const Dataset& train) {
  if (train.size() == 0) return "";
  std::vector<int> order(static_cast<std::size_t>(train.size()));
  std::iota(order.begin(), order.end(), 0);
  begin_epoch_in_order(train, order);  // uploads the set, prepares every batch size of an epoch
  const std::string passes = warm_up_begun_epoch();
  epoch_.end();
  return "the training set uploaded, each batch size prepared (the step's own setup), " + passes;
}

EpochStats GpuEngine::end_epoch() {
  const EpochStats stats = sums_.read(epoch_.size(), stream());
  epoch_.end();
  return stats;
}

EpochStats GpuEngine::train_epoch(const Dataset& train, int epoch, const BatchCallback& on_batch) {
  return train_epoch_in_batches(*this, train, epoch, cfg_.batch, on_batch, sums_, stream());
}

EpochStats GpuEngine::evaluate(const Dataset& data, std::vector<int>* predictions) {
  const DeviceDataset& d = upload_once(data, cfg_.input, cfg_.classes, eval_data_, stream());
  const int n = data.size();
  const long D = cfg_.input.size();
  predictions_.resize(static_cast<std::size_t>(std::max(n, 1)));
  eval_sums_.zero(stream());
  const StepContext ctx = context(eval_sums_, /*training=*/false);
  for (int first = 0; first < n; first += cfg_.batch) {
    const int B = std::min(cfg_.batch, n - first);
    step_->prepare(ctx, B);
    const float* logits = step_->forward(ctx, d.images.get() + static_cast<long>(first) * D, B);
    step_->loss(ctx, logits, d.labels.get() + first, B, predictions_.get() + first);
  }
  const EpochStats stats = eval_sums_.read(n, stream());
  if (predictions) {
    predictions->assign(static_cast<std::size_t>(n), 0);
    if (n > 0)
      CUDA_CHECK(cudaMemcpy(predictions->data(), predictions_.get(), static_cast<std::size_t>(n) * sizeof(int),
                            cudaMemcpyDeviceToHost));
  }
  return stats;
}

// ---- parameters and optimizer state ---------------------------------------------------------

std::vector<NamedTensor> GpuEngine::split(const DeviceBuffer<float>& flat, const std::string& suffix) {
  CUDA_CHECK(cudaStreamSynchronize(stream()));  // the last update must have landed
  return step_->layout().split(flat.download(), suffix);
}

void GpuEngine::upload(DeviceBuffer<float>& flat, const std::vector<NamedTensor>& tensors, const std::string& suffix) {
  const std::vector<float> values = step_->layout().flatten_checked(tensors, suffix);
  CUDA_CHECK(cudaStreamSynchronize(stream()));  // queued steps may still read the old values
  if (!values.empty()) flat.upload(values.data(), values.size());  // same buffer: a captured step stays valid
}

std::vector<NamedTensor> GpuEngine::get_parameters() { return split(params_, ""); }

void GpuEngine::set_parameters(const std::vector<NamedTensor>& params) { upload(params_, params, ""); }

std::vector<NamedTensor> GpuEngine::get_optimizer_state() { return split(velocity_, ".velocity"); }

std::string graph_note(const GpuEngine& engine, bool profile) {
  if (engine.graph_enabled()) return "on, one CUDA graph replay per full batch";
  if (profile) return "off (--profile times every layer uncaptured)";
  if (!engine.step().capturable()) return "off (this step cannot be captured)";
  return "off, every kernel launched one by one";
}

void GpuEngine::set_optimizer_state(const std::vector<NamedTensor>& state) { upload(velocity_, state, ".velocity"); }

}  // namespace course
