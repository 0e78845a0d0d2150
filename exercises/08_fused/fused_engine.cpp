/// @file fused_engine.cpp
/// @brief Stage 08: the fused engine: its buffers, its epochs and its parameters (glue, not a task).
///
/// The phases of a step, the graph and the persistent kernel are in
/// fused_engine_step.cpp; the step table and the JSON report in fused_engine_report.cpp.
#include "08_fused/fused_engine.hpp"

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <string>

#include "01_fc_softmax/network.hpp"
#include "02_conv_pool/cnn.hpp"
#include "common/rng.hpp"

namespace course {

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
        const HeadArgs h = plan_softmax_head(B, static_cast<int>(l.in.size()), cfg_.classes, fused_loss(), w, w,
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

}  // namespace course
