/// @file fused_engine.cpp
/// @brief Stage 08: the fused engine: buffers, the phases of a step, the graph, the persistent kernel (glue, not a task).
#include "08_fused/fused_engine.hpp"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "01_fc_softmax/network.hpp"
#include "02_conv_pool/cnn.hpp"
#include "common/rng.hpp"

namespace course {

namespace {

FusedLoss loss_of(const std::string& name) { return name == "mse" ? FusedLoss::Mse : FusedLoss::CrossEntropy; }

FusedPhase phase_of(PhaseKind kind) {
  FusedPhase p{};
  p.kind = kind;
  return p;
}

std::string kib(long long bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", static_cast<double>(bytes) / 1024.0);
  return text;
}

}  // namespace

// ---- construction ---------------------------------------------------------------------------

EngineConfig FusedEngine::checked(const EngineConfig& cfg) {
  if (cfg.loss != "cross-entropy" && cfg.loss != "mse")
    throw std::invalid_argument("unknown loss '" + cfg.loss + "' (stage 08 has cross-entropy and mse)");
  if (cfg.batch < 1) throw std::invalid_argument("batch size must be at least 1, got " + std::to_string(cfg.batch));
  if (cfg.classes < 1) throw std::invalid_argument("classes must be at least 1, got " + std::to_string(cfg.classes));
  return cfg;
}

std::vector<FusedLayer> FusedEngine::plan(const EngineConfig& cfg) {
  const EngineConfig c = checked(cfg);
  return plan_fused_layers(c.arch, c.input, c.classes);
}

FusedEngine::FusedEngine(const EngineConfig& cfg, const FusedOptions& options, const std::vector<NamedTensor>& initial)
    : cfg_(checked(cfg)), options_(options), layers_(plan_fused_layers(cfg_.arch, cfg_.input, cfg_.classes)) {
  // The parameters' names and shapes in model order, from stages 01 and 02's Network.
  Network<float> net(cfg_.arch, cfg_.input, cfg_.classes, make_cnn_layer<float>);
  for (Param<float>* p : net.params()) {
    layout_.names.push_back(p->name);
    layout_.shapes.push_back(p->value.shape);
  }
  for (const FusedLayer& l : layers_) profiler_.add_row(l.name + " (" + l.tokens + ")");
  gather_row_ = profiler_.add_row("batch gather");
  sgd_row_ = profiler_.add_row("sgd update");
  const std::vector<float> flat = layout_.flatten_checked(
      initial.empty() ? initial_parameters(cfg_.arch, cfg_.input, cfg_.classes, cfg_.seed, make_cnn_layer<float>)
                      : initial,
      "");

  // ---- the GPU from here: every buffer now, nothing allocated while training
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreate(&stream));
  stream_.reset(stream);
  int device = 0, sms = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  int major = 0;  // programmatic dependent launch needs sm_90 (Hopper) or later
  CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  gpu_launches_early_ = major >= 9;
  if (gpu_launches_early_ && layers_.size() <= static_cast<std::size_t>(kChainMaxLayers) &&
      std::none_of(layers_.begin(), layers_.end(),
                   [](const FusedLayer& l) { return l.kind == FusedLayer::Kind::ConvBlock; })) {
    std::vector<ChainLayer> sizes(layers_.size());
    for (std::size_t i = 0; i < layers_.size(); ++i)
      sizes[i] = {static_cast<int>(layers_[i].in.size()), static_cast<int>(layers_[i].out.size()), layers_[i].act,
                  nullptr, nullptr, nullptr, nullptr};
    chain_fits_ = dense_chain_smem_bytes(sizes.data(), static_cast<int>(sizes.size()), 1) <= kFusedSharedBudget;
  }
  if (dense_chain_enabled()) {
    // Named for the step table (--profile never runs the chain, so these rows are never timed).
    chain_row_ = profiler_.add_row("every layer, forward and input gradients");
    chain_update_row_ = profiler_.add_row("every layer's dW, db and update");
  }
  target_blocks_ = 2 * std::max(sms, 1);
  params_.upload(flat);
  velocity_.resize(flat.size());
  CUDA_CHECK(cudaMemset(velocity_.get(), 0, flat.size() * sizeof(float)));
  host_hyper_ = {static_cast<float>(cfg_.lr), static_cast<float>(cfg_.momentum)};
  hyper_.upload(std::vector<float>(host_hyper_.begin(), host_hyper_.end()));
  allocate();
  if (cfg_.profile) profiler_.enable();

  // The full batch's step, planned now: its table for --verbose and the JSON, and the persistent launch.
  StepPlan& full = plan_for(cfg_.batch);
  for (std::size_t k = 0; k < full.phases.size(); ++k) {
    KernelTraffic t = phase_traffic(full.phases[k]);
    t.layers = profiler_.times()[full.rows[k]].layer;
    if (full.phases[k].kind == PhaseKind::Sgd) t.bytes_read += 4 * full.partial_floats;
    step_traffic_.push_back(t);
    step_blocks_.push_back(phase_blocks(full.phases[k]));
    step_smem_.push_back(phase_smem_bytes(full.phases[k]));
  }
  layerwise_ = layerwise_traffic(cfg_.arch, cfg_.input, cfg_.classes, cfg_.batch);
  if (persistent_enabled()) {
    persistent_grid_ = full.grid;
    if (full.grid == 0)
      throw std::invalid_argument("--persistent: this GPU cannot launch cooperative kernels (or not one block of "
                                  "the persistent kernel fits on a multiprocessor)");
  }
}

FusedEngine::~FusedEngine() {
  if (stream_) cudaStreamSynchronize(stream_.get());  // nothing may still use what is about to be freed
}

void FusedEngine::allocate() {
  const std::size_t batch = static_cast<std::size_t>(cfg_.batch);
  const int B = cfg_.batch;
  batch_.resize(batch * static_cast<std::size_t>(cfg_.input.size()));
  batch_labels_.resize(batch);
  epoch_.allocate();
  for (DeviceSums* sums : {&sums_, &eval_sums_, &scratch_sums_}) sums->allocate();
  sums_.loss_slots(stream(), kLossCheckLag + 1).copied_by_the_step();  // the update writes them (LossCheckCopy)
  buffers_.resize(layers_.size());
  // The partial sums' sizes come from the planners at the full batch. Planned here before
  // those buffers exist, with a real device address in their place: nothing is launched.
  float* const placeholder = params_.get();
  const float* const w = params_.get();
  std::size_t dense_partials = 0, counters = 0;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const FusedLayer& l = layers_[i];
    LayerBuffers& buf = buffers_[i];
    const std::size_t outputs = batch * static_cast<std::size_t>(l.out.size());
    if (l.kind != FusedLayer::Kind::Head) buf.out.resize(outputs);
    if (i > 0) buf.dx.resize(batch * static_cast<std::size_t>(l.in.size()));
    std::size_t slices = 1;
    switch (l.kind) {
      case FusedLayer::Kind::ConvBlock: {
        if (l.conv.Q > 1) buf.argmax.resize(outputs);
        const ConvBackwardArgs a = plan_conv_block_backward(
            l.conv, B, w, w, w, l.conv.Q > 1 ? buf.argmax.get() : nullptr, w, placeholder, placeholder,
            i > 0 ? buf.dx.get() : nullptr, target_blocks_);
        buf.wg_images = a.wg_images;
        slices = static_cast<std::size_t>(a.wg_slices);
        break;
      }
      case FusedLayer::Kind::Dense: {
        const int IN = static_cast<int>(l.in.size()), OUT = static_cast<int>(l.out.size());
        const DenseForwardArgs f = plan_dense_forward(B, IN, OUT, l.act, w, w, w, placeholder, placeholder,
                                                      reinterpret_cast<unsigned int*>(placeholder), target_blocks_,
                                                      INT_MAX);
        buf.max_k_slices = f.k_slices;
        if (f.k_slices > 1) {
          dense_partials = std::max(dense_partials, static_cast<std::size_t>(f.k_slices) * outputs);
          counters = std::max(counters, static_cast<std::size_t>(f.row_tiles) * f.col_tiles);
        }
        slices = static_cast<std::size_t>(
            plan_dense_backward(B, IN, OUT, l.act, w, w, w, w, placeholder, placeholder, nullptr).slices);
        break;
      }
      case FusedLayer::Kind::Head: {
        const HeadArgs h = plan_softmax_head(B, static_cast<int>(l.in.size()), cfg_.classes, loss_of(cfg_.loss), w, w,
                                             w, batch_labels_.get(), sums_.loss_sum.get(), sums_.correct.get(),
                                             nullptr, true, placeholder, placeholder, nullptr);
        slices = static_cast<std::size_t>(h.blocks);
        break;
      }
    }
    buf.dw_partials.resize(slices * l.weight_count);
    buf.db_partials.resize(slices * l.bias_count);
    if (chain_fits_) buf.dz.resize(outputs);
  }
  dense_partials_.resize(dense_partials);
  counters_.resize(counters);
  if (counters > 0) CUDA_CHECK(cudaMemset(counters_.get(), 0, counters * sizeof(unsigned int)));
}

std::string FusedEngine::device() const { return gpu_name(); }

void FusedEngine::set_learning_rate(double lr) {
  host_hyper_[0] = static_cast<float>(lr);
  cfg_.lr = lr;
  // Queued behind the steps already in flight; the copy from pageable memory has read
  // host_hyper_ by the time the call returns.
  CUDA_CHECK(cudaMemcpyAsync(hyper_.get(), host_hyper_.data(), sizeof(float), cudaMemcpyHostToDevice, stream()));
}

// ---- the phases of a step ------------------------------------------------------------------

const float* FusedEngine::input_of(std::size_t i, const float* x) const {
  return i == 0 ? x : buffers_[i - 1].out.get();
}

void FusedEngine::add_forward(StepPlan& plan, int B, const float* x, const int* labels, DeviceSums& sums, bool train,
                              int* predictions) {
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const FusedLayer& l = layers_[i];
    LayerBuffers& buf = buffers_[i];
    const float* W = params_.get() + l.weight;
    const float* b = params_.get() + l.bias;
    const float* in = input_of(i, x);
    FusedPhase p{};
    switch (l.kind) {
      case FusedLayer::Kind::ConvBlock:
        p = phase_of(PhaseKind::ConvForward);
        p.conv_forward = plan_conv_block_forward(l.conv, B, in, W, b, buf.out.get(), buf.argmax.get(), target_blocks_);
        break;
      case FusedLayer::Kind::Dense:
        p = phase_of(PhaseKind::DenseForward);
        p.dense_forward = plan_dense_forward(B, static_cast<int>(l.in.size()), static_cast<int>(l.out.size()), l.act,
                                             in, W, b, buf.out.get(), dense_partials_.get(), counters_.get(),
                                             target_blocks_, buf.max_k_slices);
        break;
      case FusedLayer::Kind::Head:
        p = phase_of(PhaseKind::Head);
        p.head = plan_softmax_head(B, static_cast<int>(l.in.size()), cfg_.classes, loss_of(cfg_.loss), in, W, b,
                                   labels, sums.loss_sum.get(), sums.correct.get(), predictions, train,
                                   buf.dw_partials.get(), buf.db_partials.get(), i > 0 ? buf.dx.get() : nullptr);
        break;
    }
    plan.phases.push_back(p);
    plan.rows.push_back(i);
    plan.passes.push_back(Pass::Forward);
  }
}

void FusedEngine::add_dense_chain(StepPlan& plan, int B) {
  std::vector<ChainLayer> chain(layers_.size());
  std::vector<long long> w_offsets(layers_.size()), b_offsets(layers_.size());
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const FusedLayer& l = layers_[i];
    LayerBuffers& buf = buffers_[i];
    chain[i] = {static_cast<int>(l.in.size()), static_cast<int>(l.out.size()), l.act, params_.get() + l.weight,
                params_.get() + l.bias, i + 1 < layers_.size() ? buf.out.get() : nullptr, buf.dz.get()};
    w_offsets[i] = static_cast<long long>(l.weight);
    b_offsets[i] = static_cast<long long>(l.bias);
  }
  const int L = static_cast<int>(chain.size());
  plan.chain = plan_dense_chain(B, chain.data(), L, loss_of(cfg_.loss), nullptr, nullptr, nullptr, epoch_.step(),
                                cfg_.batch, batch_.get(), sums_.loss_sum.get(), sums_.correct.get(),
                                target_blocks_ / 2);  // the data pointers are set by prepare()
  FusedPhase forward = phase_of(PhaseKind::DenseChain);
  forward.dense_chain = &plan.chain;
  plan.phases.push_back(forward);
  plan.rows.push_back(chain_row_);
  plan.passes.push_back(Pass::Forward);
  plan.chain_update = plan_dense_chain_update(B, chain.data(), L, batch_.get(), w_offsets.data(), b_offsets.data(),
                                              params_.get(), velocity_.get(), hyper_.get(), epoch_.step());
  plan.chain_update.loss = loss_check_copy();
  FusedPhase update = phase_of(PhaseKind::DenseChainUpdate);
  update.dense_chain_update = &plan.chain_update;
  plan.phases.push_back(update);
  plan.rows.push_back(chain_update_row_);
  plan.passes.push_back(Pass::Backward);
}

FusedEngine::StepPlan& FusedEngine::plan_for(int B) {
  auto found = plans_.find(B);
  if (found != plans_.end()) return *found->second;
  auto plan = std::make_unique<StepPlan>();
  plan->B = B;
  if (dense_chain_enabled()) {
    add_dense_chain(*plan, B);
    return *plans_.emplace(B, std::move(plan)).first->second;
  }
  const long long D = cfg_.input.size();

  FusedPhase gather = phase_of(PhaseKind::Gather);  // the data pointers are set by prepare()
  gather.gather.step = epoch_.step();
  gather.gather.batch = cfg_.batch;
  gather.gather.B = B;
  gather.gather.D = D;
  gather.gather.x = batch_.get();
  gather.gather.y = batch_labels_.get();
  gather.gather.blocks = static_cast<int>((B * D + kFusedThreads - 1) / kFusedThreads);
  plan->phases.push_back(gather);
  plan->rows.push_back(gather_row_);
  plan->passes.push_back(Pass::Forward);

  add_forward(*plan, B, batch_.get(), batch_labels_.get(), sums_, /*train=*/true, nullptr);

  // Backward, last layer below the head first; each reads the gradient the layer above wrote.
  std::vector<int> slices(layers_.size(), 0);
  slices.back() = plan->phases.back().head.blocks;
  for (std::size_t i = layers_.size() - 1; i-- > 0;) {
    const FusedLayer& l = layers_[i];
    LayerBuffers& buf = buffers_[i];
    const float* W = params_.get() + l.weight;
    const float* x = input_of(i, batch_.get());
    const float* dy = buffers_[i + 1].dx.get();
    float* dx = i > 0 ? buf.dx.get() : nullptr;
    FusedPhase p{};
    if (l.kind == FusedLayer::Kind::ConvBlock) {
      p = phase_of(PhaseKind::ConvBackward);
      p.conv_backward = plan_conv_block_backward(l.conv, B, x, W, buf.out.get(), buf.argmax.get(), dy,
                                                 buf.dw_partials.get(), buf.db_partials.get(), dx, target_blocks_,
                                                 buf.wg_images);
      slices[i] = p.conv_backward.wg_slices;
    } else {
      p = phase_of(PhaseKind::DenseBackward);
      p.dense_backward = plan_dense_backward(B, static_cast<int>(l.in.size()), static_cast<int>(l.out.size()), l.act,
                                             x, W, buf.out.get(), dy, buf.dw_partials.get(), buf.db_partials.get(), dx);
      slices[i] = p.dense_backward.slices;
    }
    plan->phases.push_back(p);
    plan->rows.push_back(i);
    plan->passes.push_back(Pass::Backward);
  }

  // The update's table: every weight and bias, in model order, with its slices at this batch.
  std::vector<SgdTensor> tensors;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const FusedLayer& l = layers_[i];
    const LayerBuffers& buf = buffers_[i];
    tensors.push_back({static_cast<long long>(l.weight), static_cast<long long>(l.weight_count),
                       buf.dw_partials.get(), slices[i]});
    tensors.push_back({static_cast<long long>(l.bias), static_cast<long long>(l.bias_count), buf.db_partials.get(),
                       slices[i]});
    plan->partial_floats += static_cast<long long>(slices[i]) * static_cast<long long>(l.weight_count + l.bias_count);
  }
  plan->tensors.upload(tensors);
  FusedPhase sgd = phase_of(PhaseKind::Sgd);
  sgd.sgd = plan_sgd_multi_tensor(params_.get(), velocity_.get(), plan->tensors.get(), static_cast<int>(tensors.size()),
                                  static_cast<long long>(params_.size()), hyper_.get(), epoch_.step());
  sgd.sgd.loss = loss_check_copy();
  plan->phases.push_back(sgd);
  plan->rows.push_back(sgd_row_);
  plan->passes.push_back(Pass::Backward);

  if (persistent_enabled()) {
    int blocks = 1;
    for (const FusedPhase& p : plan->phases) {
      blocks = std::max(blocks, phase_blocks(p));
      plan->smem_bytes = std::max(plan->smem_bytes, phase_smem_bytes(p));
    }
    plan->grid = std::min(blocks, persistent_grid_blocks(plan->smem_bytes));
    plan->device_phases.resize(plan->phases.size());
  }
  return *plans_.emplace(B, std::move(plan)).first->second;
}

FusedEngine::DataKey FusedEngine::data_key() const {
  return {epoch_.data().images.get(), epoch_.data().labels.get(), epoch_.order()};
}

void FusedEngine::prepare(StepPlan& plan) {
  FusedPhase& first = plan.phases.front();
  if (first.kind == PhaseKind::DenseChain) {
    plan.chain.images = epoch_.data().images.get();
    plan.chain.labels = epoch_.data().labels.get();
    plan.chain.order = epoch_.order();
    return;
  }
  GatherArgs& g = first.gather;
  g.images = epoch_.data().images.get();
  g.labels = epoch_.data().labels.get();
  g.order = epoch_.order();
  const DataKey key = data_key();
  if (persistent_enabled() && !(plan.uploaded == key)) {
    CUDA_CHECK(cudaStreamSynchronize(stream()));  // no step in flight reads the old copy
    plan.device_phases.upload(plan.phases.data(), plan.phases.size());
    plan.uploaded = key;
  }
}

LossCheckCopy FusedEngine::loss_check_copy() {
  DeviceLossSlots& slots = sums_.loss_slots(stream(), kLossCheckLag + 1);
  return {sums_.loss_sum.get(), slots.device_slots(), slots.count()};
}

void FusedEngine::run_uncaptured(const StepPlan& plan, bool update) {
  DenseChainArgs warm_chain;  // the warm-up pass's copies of the chain's arguments
  DenseChainUpdateArgs warm_update;
  for (std::size_t k = 0; k < plan.phases.size(); ++k) {
    FusedPhase p = plan.phases[k];
    if (!update) {
      // The warm-up pass: sums to scratch, and an update that touches nothing (every
      // kernel is loaded once outside the capture, where loading is allowed).
      if (p.kind == PhaseKind::Head) {
        p.head.loss_sum = scratch_sums_.loss_sum.get();
        p.head.correct = scratch_sums_.correct.get();
      }
      if (p.kind == PhaseKind::Sgd) {
        p.sgd.total = 0;
        p.sgd.step = nullptr;
        p.sgd.blocks = 1;
        p.sgd.loss.slots = nullptr;
      }
      if (p.kind == PhaseKind::DenseChain) {
        warm_chain = *p.dense_chain;
        warm_chain.loss_sum = scratch_sums_.loss_sum.get();
        warm_chain.correct = scratch_sums_.correct.get();
        p.dense_chain = &warm_chain;
      }
      if (p.kind == PhaseKind::DenseChainUpdate) {
        warm_update = *p.dense_chain_update;
        warm_update.L = 0;  // no tile: parameters and velocities untouched
        warm_update.step = nullptr;
        warm_update.blocks = 1;
        warm_update.loss.slots = nullptr;
        p.dense_chain_update = &warm_update;
      }
    }
    profiler_.time(plan.rows[k], plan.passes[k], recording_, stream(),
                   [&] { launch_phase(p, stream(), early_launch_enabled()); });
  }
}

void FusedEngine::run_captured(StepPlan& plan) {
  const DataKey key = data_key();
  if (!graph_.ready() || !(key == graph_key_)) {
    if (!warmed_up_) {
      run_uncaptured(plan, /*update=*/false);
      CUDA_CHECK(cudaStreamSynchronize(stream()));
      warmed_up_ = true;
    }
    try {
      graph_.capture(stream(), [&] { run_uncaptured(plan, /*update=*/true); });
    } catch (const GpuError& e) {
      std::cerr << "warning: capturing the training step as a CUDA graph failed (" << e.what()
                << "); stage 08 goes on without the graph\n";
      options_.graph = false;
      run_uncaptured(plan, /*update=*/true);
      return;
    }
    graph_key_ = key;
  }
  graph_.replay(stream());
  ++graph_replays_;
}

// ---- epochs -------------------------------------------------------------------------------

void FusedEngine::begin_epoch(const Dataset& train, int epoch) {
  epoch_.begin(train, orders_.order(train.size(), cfg_.seed, epoch), cfg_.input, cfg_.classes, sums_, stream());
  const int size = epoch_.size();  // both batch sizes of the epoch are planned before its steps
  if (size > 0) {
    plan_for(std::min(cfg_.batch, size));
    if (size % cfg_.batch != 0) plan_for(size % cfg_.batch);
  }
}

int FusedEngine::num_batches() const { return epoch_.num_batches(cfg_.batch); }

void FusedEngine::train_batch(int b) {
  const int B = epoch_.batch_size(b, cfg_.batch, "FusedEngine::train_batch");
  StepPlan& plan = plan_for(B);
  prepare(plan);
  recording_ = cfg_.profile;  // only training steps are profiled
  if (persistent_enabled())
    persistent_step_gpu(plan.device_phases.get(), static_cast<int>(plan.phases.size()), plan.grid, plan.smem_bytes,
                        stream());
  else if (graph_enabled() && B == cfg_.batch)
    run_captured(plan);
  else
    run_uncaptured(plan, /*update=*/true);
  if (recording_) profiler_.collect();
  recording_ = false;
  epoch_.batch_queued();
}

EpochStats FusedEngine::end_epoch() {
  const EpochStats stats = sums_.read(epoch_.size(), stream());
  epoch_.end();
  return stats;
}

EpochStats FusedEngine::train_epoch(const Dataset& train, int epoch, const BatchCallback& on_batch) {
  return train_epoch_in_batches(*this, train, epoch, cfg_.batch, on_batch, sums_, stream());
}

EpochStats FusedEngine::evaluate(const Dataset& data, std::vector<int>* predictions) {
  const DeviceDataset& d = upload_once(data, cfg_.input, cfg_.classes, eval_data_, stream());
  const int n = data.size();
  const long D = cfg_.input.size();
  predictions_.resize(static_cast<std::size_t>(std::max(n, 1)));
  eval_sums_.zero(stream());
  for (int first = 0; first < n; first += cfg_.batch) {
    const int B = std::min(cfg_.batch, n - first);
    StepPlan forward;  // the forward phases of this batch, straight from the device copy: no gather
    add_forward(forward, B, d.images.get() + static_cast<long>(first) * D, d.labels.get() + first, eval_sums_,
                /*train=*/false, predictions_.get() + first);
    for (const FusedPhase& p : forward.phases) launch_phase(p, stream());
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

// ---- parameters ---------------------------------------------------------------------------

std::vector<NamedTensor> FusedEngine::split(const DeviceBuffer<float>& flat, const std::string& suffix) {
  CUDA_CHECK(cudaStreamSynchronize(stream()));  // the last update must have landed
  return layout_.split(flat.download(), suffix);
}

std::vector<NamedTensor> FusedEngine::get_parameters() { return split(params_, ""); }

void FusedEngine::set_parameters(const std::vector<NamedTensor>& params) {
  const std::vector<float> flat = layout_.flatten_checked(params, "");
  CUDA_CHECK(cudaStreamSynchronize(stream()));
  params_.upload(flat.data(), flat.size());
}

std::vector<NamedTensor> FusedEngine::get_optimizer_state() { return split(velocity_, ".velocity"); }

void FusedEngine::set_optimizer_state(const std::vector<NamedTensor>& state) {
  const std::vector<float> flat = layout_.flatten_checked(state, ".velocity");
  CUDA_CHECK(cudaStreamSynchronize(stream()));
  velocity_.upload(flat.data(), flat.size());
}

// ---- reports --------------------------------------------------------------------------------

int FusedEngine::kernels_per_step() const {
  return persistent_enabled() ? 1 : static_cast<int>(step_traffic_.size());
}

std::string FusedEngine::step_table() const {
  char line[256];
  std::string out;
  std::snprintf(line, sizeof line, "%-34s %-44s %7s %9s %10s %10s\n", "kernel", "layers", "blocks", "smem KiB",
                "read KiB", "write KiB");
  out += line;
  long long read = 0, written = 0;
  for (std::size_t k = 0; k < step_traffic_.size(); ++k) {
    const KernelTraffic& t = step_traffic_[k];
    std::snprintf(line, sizeof line, "%-34s %-44s %7d %9s %10s %10s\n", t.kernel.c_str(), t.layers.c_str(),
                  step_blocks_[k], kib(step_smem_[k]).c_str(), kib(t.bytes_read).c_str(),
                  kib(t.bytes_written).c_str());
    out += line;
    read += t.bytes_read;
    written += t.bytes_written;
  }
  std::snprintf(line, sizeof line, "fused step, batch %d: %zu kernels%s, %s KiB read, %s KiB written\n", cfg_.batch,
                step_traffic_.size(), persistent_enabled() ? " (as phases of 1 persistent kernel)" : "",
                kib(read).c_str(), kib(written).c_str());
  out += line;
  std::snprintf(line, sizeof line,
                "layer by layer (one kernel per layer and direction, the least stages 05 and 06 run): %d kernels, "
                "%s KiB read, %s KiB written\n",
                layerwise_.launches, kib(layerwise_.bytes_read).c_str(), kib(layerwise_.bytes_written).c_str());
  out += line;
  return out;
}

nlohmann::json FusedEngine::stage_results() const {
  nlohmann::json kernels = nlohmann::json::array();
  long long read = 0, written = 0;
  for (std::size_t k = 0; k < step_traffic_.size(); ++k) {
    const KernelTraffic& t = step_traffic_[k];
    kernels.push_back({{"kernel", t.kernel},
                       {"layers", t.layers},
                       {"blocks", step_blocks_[k]},
                       {"threads_per_block", kFusedThreads},
                       {"shared_bytes", step_smem_[k]},
                       {"bytes_read", t.bytes_read},
                       {"bytes_written", t.bytes_written}});
    read += t.bytes_read;
    written += t.bytes_written;
  }
  nlohmann::json layers = nlohmann::json::array();
  for (const FusedLayer& l : layers_) layers.push_back({{"name", l.name}, {"spec", l.tokens}});
  return {{"graph", graph_enabled()},
          {"persistent", persistent_enabled()},
          {"persistent_grid_blocks", persistent_grid_},
          {"kernels_per_step", kernels_per_step()},
          {"graph_nodes", graph_nodes()},
          {"graph_replays", graph_replays_},
          {"fused_layers", layers},
          {"step", {{"batch", cfg_.batch},
                    {"kernels", kernels},
                    {"bytes_read", read},
                    {"bytes_written", written},
                    {"note", "each tensor counted once per kernel; re-reads served by the L2 cache not counted"}}},
          {"layer_by_layer",
           {{"kernels", layerwise_.launches},
            {"bytes_read", layerwise_.bytes_read},
            {"bytes_written", layerwise_.bytes_written},
            {"note", "the same step as one kernel per layer and direction, counted the same way: the least that "
                     "stages 05 and 06 run and move"}}}};
}

}  // namespace course
