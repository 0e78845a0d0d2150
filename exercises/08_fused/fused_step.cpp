/// @file fused_step.cpp
/// @brief Stage 08: the fused step's buffers, and the step the engine's way (glue, not a task).
///
/// The whole step, its phases at each batch size and the persistent kernel are in
/// fused_step_plan.cpp; the step table and the JSON report in fused_step_report.cpp.
#include "08_fused/fused_step.hpp"

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <string>

#include "01_fc_softmax/network.hpp"
#include "02_conv_pool/cnn.hpp"
#include "08_fused/partial_sums.hpp"
#include "common/gpu/gpu_capability.hpp"
#include "common/core/rng.hpp"

namespace course {

// ---- construction ---------------------------------------------------------------------------

EngineConfig FusedStep::checked(const EngineConfig& cfg) {
  check_step_config(cfg, "stage 08");
  return cfg;
}

std::vector<FusedLayer> FusedStep::plan(const EngineConfig& cfg) {
  const EngineConfig c = checked(cfg);
  return plan_fused_layers(c.arch, c.input, c.classes);
}

FusedStep::FusedStep(const EngineConfig& cfg, const FusedOptions& options)
    : cfg_(checked(cfg)), options_(options), layers_(plan_fused_layers(cfg_.arch, cfg_.input, cfg_.classes)) {
  // The parameters' names and shapes in model order, from stages 01 and 02's Network.
  Network<float> net(cfg_.arch, cfg_.input, cfg_.classes, make_cnn_layer<float>);
  for (Param<float>* p : net.params()) {
    layout_.names.push_back(p->name);
    layout_.shapes.push_back(p->value.shape);
  }
  for (std::size_t i = layers_.size(); i-- > 0;) {  // last layer first: the order backward() finishes them
    const FusedLayer& l = layers_[i];
    ranges_.push_back({l.weight, l.bias + l.bias_count, l.name + " (" + l.tokens + ")"});
  }
}

FusedStep::~FusedStep() = default;

std::vector<NamedTensor> FusedStep::initial_parameters() const {
  return course::initial_parameters(cfg_.arch, cfg_.input, cfg_.classes, cfg_.seed, make_cnn_layer<float>);
}

std::vector<std::string> FusedStep::layer_rows() const {
  std::vector<std::string> rows;
  for (const FusedLayer& l : layers_) rows.push_back(l.name + " (" + l.tokens + ")");
  return rows;
}

std::vector<std::string> FusedStep::gpu_choices() const {
  if (gpu_launches_early_ || (!options_.early_launch && !options_.dense_chain)) return {};
  return {"--early-launch and the dense chain: " + without_feature_note(GpuFeature::EarlyLaunch)};
}

void FusedStep::allocate(int batch_size) {
  int device = 0, sms = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  // Programmatic dependent launch and clusters need sm_90 or later (as COURSE_AS_CC may lower it).
  gpu_launches_early_ = gpu_has(GpuFeature::EarlyLaunch);
  target_blocks_ = 2 * std::max(sms, 1);
  if (gpu_launches_early_ && layers_.size() <= static_cast<std::size_t>(kChainMaxLayers) &&
      std::none_of(layers_.begin(), layers_.end(),
                   [](const FusedLayer& l) { return l.kind == FusedLayer::Kind::ConvBlock; })) {
    std::vector<ChainLayer> sizes(layers_.size());
    for (std::size_t i = 0; i < layers_.size(); ++i)
      sizes[i] = {static_cast<int>(layers_[i].in.size()), static_cast<int>(layers_[i].out.size()), layers_[i].act,
                  nullptr, nullptr, nullptr, nullptr};
    chain_fits_ = dense_chain_smem_bytes(sizes.data(), static_cast<int>(sizes.size()), 1) <= kFusedSharedBudget;
  }

  // The partial sums' sizes come from the planners at the full batch. Planned here before
  // those buffers exist, with a real device address in their place: nothing is launched.
  const std::size_t batch = static_cast<std::size_t>(batch_size);
  const int B = batch_size;
  DeviceBuffer<float> placeholder_memory(2);
  float* const placeholder = placeholder_memory.get();
  const float* const w = placeholder;
  buffers_.resize(layers_.size());
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
        const HeadArgs h = plan_softmax_head(
            B, static_cast<int>(l.in.size()), cfg_.classes, fused_loss(), w, w, w, reinterpret_cast<int*>(placeholder),
            reinterpret_cast<double*>(placeholder), reinterpret_cast<unsigned long long*>(placeholder), nullptr, true,
            placeholder, placeholder, nullptr);
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

void FusedStep::prepare(const StepContext& ctx, int B) {
  if (whole_gradients_.size() == 0) {
    const SgdTensor all{0, ctx.param_count, ctx.grads, 1};
    whole_gradients_.upload(std::vector<SgdTensor>{all});
  }
  const bool first = plans_.empty();
  StepPlan& plan = plan_for(ctx, B);
  if (first) note_full_step(plan);  // the engine prepares its full batch first, at its construction
}

// ---- the step the engine's way: evaluation, and training under data parallelism -----------

const float* FusedStep::input_of(std::size_t i, const float* x) const {
  return i == 0 ? x : buffers_[i - 1].out.get();
}

const float* FusedStep::forward(const StepContext& ctx, const float* x, int B) {
  for (std::size_t i = 0; i + 1 < layers_.size(); ++i) {
    const FusedPhase p = forward_phase(i, B, x, ctx.params);
    ctx.time(i, Pass::Forward, [&] { launch_phase(p, ctx.stream, early_launch_enabled()); });
  }
  last_x_ = x;
  return input_of(layers_.size() - 1, x);
}

void FusedStep::loss(const StepContext& ctx, const float* head_input, const int* labels, int B, int* predictions) {
  const FusedPhase p = head_phase(B, head_input, ctx.params, labels, *ctx.sums, ctx.training, predictions);
  head_slices_ = p.head.blocks;
  launch_phase(p, ctx.stream, early_launch_enabled());  // timed by the caller, in the head's row
}

void FusedStep::backward(const StepContext& ctx, int B) {
  // Each layer's slices are added into ctx.grads as soon as it is done when the sync starts work
  // layer by layer (buckets); otherwise every layer's at once after the last, in one launch. Then
  // nothing but kernels stands between the layers (no event of a bucket): they launch early.
  const bool each_layer = ctx.gradients_wanted_layer_by_layer();
  const bool early = !each_layer && early_launch_enabled();
  std::vector<LayerPartialSums> pending;
  for (std::size_t i = layers_.size(); i-- > 0;) {
    const FusedLayer& l = layers_[i];
    const LayerBuffers& buf = buffers_[i];
    const bool below_head = i + 1 < layers_.size();  // the head's backward ran in loss()
    FusedPhase p{};
    int slices = head_slices_;
    if (below_head) {
      p = backward_phase(i, B, last_x_, ctx.params);
      slices = p.kind == PhaseKind::ConvBackward ? p.conv_backward.wg_slices : p.dense_backward.slices;
    }
    pending.push_back({{buf.dw_partials.get(), slices, static_cast<long long>(l.weight_count)},
                       {buf.db_partials.get(), slices, static_cast<long long>(l.bias_count)},
                       ctx.grads + l.weight});
    ctx.time(i, Pass::Backward, [&] {
      if (below_head) launch_phase(p, ctx.stream, early);
      if (each_layer || i == 0) {  // --profile counts the one launch for every layer in the first layer's row
        add_partial_sums_gpu(pending, ctx.stream, early);
        pending.clear();
      }
    });
    if (each_layer) ctx.gradients_queued(ranges_[layers_.size() - 1 - i]);
  }
  if (!each_layer)
    for (const GradientRange& range : ranges_) ctx.gradients_queued(range);
}

void FusedStep::update(const StepContext& ctx) { launch_update(ctx, /*end_step=*/false); }

void FusedStep::launch_update(const StepContext& ctx, bool end_step) {
  const TrainingBatch& t = *ctx.batch;
  SgdArgs sgd = plan_sgd_multi_tensor(ctx.params, ctx.velocity, whole_gradients_.get(), 1, ctx.param_count,
                                      ctx.hyper, end_step ? t.step : nullptr);
  if (end_step) sgd.loss = {ctx.sums->loss_sum.get(), t.loss_slots, t.loss_slot_count};
  // After the buckets' wait for their stream's event: not launched early. After a flat or peer sum
  // (a kernel in this stream) it may be: its wait is for that kernel's end.
  launch_phase(fused_phase(sgd), ctx.stream, early_launch_enabled() && !ctx.gradients_wanted_layer_by_layer());
}

// ---- the engine on this step --------------------------------------------------------------

std::unique_ptr<GpuEngine> make_fused_engine(const EngineConfig& cfg, const FusedOptions& options,
                                             const std::vector<NamedTensor>& initial) {
  GpuEngineOptions engine;
  engine.graph = options.graph;
  return std::make_unique<GpuEngine>(cfg, std::make_unique<FusedStep>(cfg, options), initial, engine);
}

const FusedStep& fused_step(const GpuEngine& engine) {
  const auto* step = dynamic_cast<const FusedStep*>(&engine.step());
  if (step == nullptr) throw std::logic_error("fused_step: the engine drives another step model");
  return *step;
}

}  // namespace course
