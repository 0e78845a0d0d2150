/// @file fused_step_plan.cpp
/// @brief Stage 08: the fused step's phases at each batch size, and the whole step run one by one or as the persistent kernel (glue, not a task).
#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "08_fused/fused_step.hpp"

namespace course {

// ---- one phase of a layer --------------------------------------------------------------------

FusedPhase FusedStep::forward_phase(std::size_t i, int B, const float* x, const float* params) {
  const FusedLayer& l = layers_[i];
  LayerBuffers& buf = buffers_[i];
  const float* W = params + l.weight;
  const float* b = params + l.bias;
  if (l.kind == FusedLayer::Kind::ConvBlock)
    return fused_phase(
        plan_conv_block_forward(l.conv, B, input_of(i, x), W, b, buf.out.get(), buf.argmax.get(), target_blocks_));
  return fused_phase(plan_dense_forward(B, static_cast<int>(l.in.size()), static_cast<int>(l.out.size()), l.act,
                                        input_of(i, x), W, b, buf.out.get(), dense_partials_.get(), counters_.get(),
                                        target_blocks_, buf.max_k_slices));
}

FusedPhase FusedStep::head_phase(int B, const float* x, const float* params, const int* labels, DeviceSums& sums,
                                 bool train, int* predictions) {
  const std::size_t i = layers_.size() - 1;
  const FusedLayer& l = layers_[i];
  LayerBuffers& buf = buffers_[i];
  return fused_phase(plan_softmax_head(B, static_cast<int>(l.in.size()), cfg_.classes, fused_loss(), x,
                                       params + l.weight, params + l.bias, labels, sums.loss_sum.get(),
                                       sums.correct.get(), predictions, train, buf.dw_partials.get(),
                                       buf.db_partials.get(), i > 0 ? buf.dx.get() : nullptr));
}

FusedPhase FusedStep::backward_phase(std::size_t i, int B, const float* x, const float* params) {
  const FusedLayer& l = layers_[i];
  LayerBuffers& buf = buffers_[i];
  const float* W = params + l.weight;
  const float* in = input_of(i, x);
  const float* dy = buffers_[i + 1].dx.get();  // what the layer above wrote
  float* dx = i > 0 ? buf.dx.get() : nullptr;
  if (l.kind == FusedLayer::Kind::ConvBlock)
    return fused_phase(plan_conv_block_backward(l.conv, B, in, W, buf.out.get(), buf.argmax.get(), dy,
                                                buf.dw_partials.get(), buf.db_partials.get(), dx, target_blocks_,
                                                buf.wg_images));
  return fused_phase(plan_dense_backward(B, static_cast<int>(l.in.size()), static_cast<int>(l.out.size()), l.act, in,
                                         W, buf.out.get(), dy, buf.dw_partials.get(), buf.db_partials.get(), dx));
}

// ---- the whole step at a batch size ---------------------------------------------------------

void FusedStep::add_phase(StepPlan& plan, const FusedPhase& p, Row row, std::size_t layer, Pass pass) {
  plan.phases.push_back(p);
  plan.rows.push_back(row);
  plan.layer_of.push_back(layer);
  plan.passes.push_back(pass);
}

void FusedStep::add_dense_chain(StepPlan& plan, const StepContext& ctx, int B) {
  const TrainingBatch& parts = *ctx.batch;
  std::vector<ChainLayer> chain(layers_.size());
  std::vector<long long> w_offsets(layers_.size()), b_offsets(layers_.size());
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const FusedLayer& l = layers_[i];
    LayerBuffers& buf = buffers_[i];
    chain[i] = {static_cast<int>(l.in.size()), static_cast<int>(l.out.size()), l.act, ctx.params + l.weight,
                ctx.params + l.bias, i + 1 < layers_.size() ? buf.out.get() : nullptr, buf.dz.get()};
    w_offsets[i] = static_cast<long long>(l.weight);
    b_offsets[i] = static_cast<long long>(l.bias);
  }
  const int L = static_cast<int>(chain.size());
  // The data and the sums are bound to each step as it runs (bound()).
  plan.chain = plan_dense_chain(B, chain.data(), L, fused_loss(), nullptr, nullptr, nullptr, parts.step, parts.full_batch,
                                parts.x, ctx.sums->loss_sum.get(), ctx.sums->correct.get(), target_blocks_ / 2);
  add_phase(plan, fused_phase(&plan.chain), Row::Chain, 0, Pass::Forward);
  plan.chain_update = plan_dense_chain_update(B, chain.data(), L, parts.x, w_offsets.data(), b_offsets.data(),
                                              ctx.params, ctx.velocity, ctx.hyper, parts.step);
  add_phase(plan, fused_phase(&plan.chain_update), Row::ChainUpdate, 0, Pass::Backward);
}

void FusedStep::add_update(StepPlan& plan, const StepContext& ctx, const std::vector<int>& slices) {
  // The update's table: every weight and bias, in model order, with its slices at this batch.
  std::vector<SgdTensor> tensors;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const FusedLayer& l = layers_[i];
    const LayerBuffers& buf = buffers_[i];
    tensors.push_back({static_cast<long long>(l.weight), static_cast<long long>(l.weight_count),
                       buf.dw_partials.get(), slices[i]});
    tensors.push_back({static_cast<long long>(l.bias), static_cast<long long>(l.bias_count), buf.db_partials.get(),
                       slices[i]});
    plan.partial_floats += static_cast<long long>(slices[i]) * static_cast<long long>(l.weight_count + l.bias_count);
  }
  plan.tensors.upload(tensors);
  const SgdArgs sgd = plan_sgd_multi_tensor(ctx.params, ctx.velocity, plan.tensors.get(),
                                            static_cast<int>(tensors.size()), ctx.param_count, ctx.hyper,
                                            ctx.batch->step);
  add_phase(plan, fused_phase(sgd), Row::Update, 0, Pass::Backward);
}

FusedStep::StepPlan& FusedStep::plan_for(const StepContext& ctx, int B) {
  auto found = plans_.find(B);
  if (found != plans_.end()) return *found->second;
  auto plan = std::make_unique<StepPlan>();
  plan->B = B;
  if (dense_chain_enabled()) {
    add_dense_chain(*plan, ctx, B);
    return *plans_.emplace(B, std::move(plan)).first->second;
  }
  const TrainingBatch& parts = *ctx.batch;
  const long long D = cfg_.input.size();
  GatherArgs gather{};  // the data is bound to each step as it runs (bound())
  gather.step = parts.step;
  gather.batch = parts.full_batch;
  gather.B = B;
  gather.D = D;
  gather.x = parts.x;
  gather.y = parts.y;
  gather.blocks = static_cast<int>((B * D + kFusedThreads - 1) / kFusedThreads);
  add_phase(*plan, fused_phase(gather), Row::Gather, 0, Pass::Forward);

  const std::size_t head = layers_.size() - 1;
  for (std::size_t i = 0; i < head; ++i)
    add_phase(*plan, forward_phase(i, B, parts.x, ctx.params), Row::Layer, i, Pass::Forward);
  const FusedPhase h = head_phase(B, input_of(head, parts.x), ctx.params, parts.y, *ctx.sums, /*train=*/true, nullptr);
  add_phase(*plan, h, Row::Layer, head, Pass::Forward);

  // Backward, last layer below the head first; each reads the gradient the layer above wrote.
  std::vector<int> slices(layers_.size(), 0);
  slices[head] = h.head.blocks;
  for (std::size_t i = head; i-- > 0;) {
    const FusedPhase p = backward_phase(i, B, parts.x, ctx.params);
    slices[i] = p.kind == PhaseKind::ConvBackward ? p.conv_backward.wg_slices : p.dense_backward.slices;
    add_phase(*plan, p, Row::Layer, i, Pass::Backward);
  }
  add_update(*plan, ctx, slices);

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

// ---- running the whole step -------------------------------------------------------------------

FusedPhase FusedStep::bound(const FusedPhase& p, StepPlan& plan, const StepContext& ctx) {
  const TrainingBatch& parts = *ctx.batch;
  FusedPhase q = p;
  const LossCheckCopy copy{ctx.sums->loss_sum.get(), parts.loss_slots, parts.loss_slot_count};
  switch (q.kind) {
    case PhaseKind::Gather:
      q.gather.images = parts.images;
      q.gather.labels = parts.labels;
      q.gather.order = parts.order;
      break;
    case PhaseKind::Head:
      q.head.loss_sum = ctx.sums->loss_sum.get();
      q.head.correct = ctx.sums->correct.get();
      break;
    case PhaseKind::Sgd:
      q.sgd.loss = copy;
      if (!parts.update) {  // the warm-up: every kernel loaded once outside the capture, nothing updated
        q.sgd.total = 0;
        q.sgd.step = nullptr;
        q.sgd.blocks = 1;
        q.sgd.loss.slots = nullptr;
      }
      break;
    case PhaseKind::DenseChain:
      plan.chain.images = parts.images;
      plan.chain.labels = parts.labels;
      plan.chain.order = parts.order;
      plan.chain.loss_sum = ctx.sums->loss_sum.get();
      plan.chain.correct = ctx.sums->correct.get();
      break;
    case PhaseKind::DenseChainUpdate:
      plan.chain_update.loss = copy;
      if (!parts.update) {
        plan.idle_update = plan.chain_update;
        plan.idle_update.L = 0;  // no tile: parameters and velocities untouched
        plan.idle_update.step = nullptr;
        plan.idle_update.blocks = 1;
        plan.idle_update.loss.slots = nullptr;
        q.dense_chain_update = &plan.idle_update;
      }
      break;
    default:
      break;
  }
  return q;
}

void FusedStep::time_phase(const StepContext& ctx, Row row, std::size_t layer, Pass pass, const FusedPhase& p) {
  const auto launch = [&] { launch_phase(p, ctx.stream, early_launch_enabled()); };
  switch (row) {
    case Row::Layer: ctx.time(layer, pass, launch); break;
    case Row::Gather: ctx.time(ctx.batch->gather_row, pass, launch); break;
    case Row::Update: ctx.time(ctx.batch->update_row, pass, launch); break;
    default: launch();  // the dense chain never runs under --profile
  }
}

void FusedStep::train_step(const StepContext& ctx, int B) {
  if (ctx.sync != nullptr) {
    train_step_with_sync(ctx, B);
    return;
  }
  auto found = plans_.find(B);
  if (found == plans_.end())
    throw std::logic_error("FusedStep::train_step: batch size " + std::to_string(B) + " was not prepared");
  StepPlan& plan = *found->second;
  if (persistent_enabled()) {
    run_persistent(plan, ctx);
    return;
  }
  for (std::size_t k = 0; k < plan.phases.size(); ++k)
    time_phase(ctx, plan.rows[k], plan.layer_of[k], plan.passes[k], bound(plan.phases[k], plan, ctx));
}

void FusedStep::train_step_with_sync(const StepContext& ctx, int B) {
  // The head computes the loss: its time goes to the head's row, as in the fused step.
  TrainingBatch with_head_row = *ctx.batch;
  with_head_row.loss_row = layers_.size() - 1;
  StepContext c = ctx;
  c.batch = &with_head_row;
  queue_gradients(c, B);
  if (ctx.batch->update) ctx.time(ctx.batch->update_row, Pass::Backward, [&] { launch_update(ctx, /*end_step=*/true); });
}

void FusedStep::run_persistent(StepPlan& plan, const StepContext& ctx) {
  // The device copy holds the addresses bound() fills in: when the engine's change (a new epoch's
  // data, the warm-up's sums), a new copy.
  if (plan.uploaded != ctx.batch->binding) {
    std::vector<FusedPhase> phases;
    for (const FusedPhase& p : plan.phases) phases.push_back(bound(p, plan, ctx));
    CUDA_CHECK(cudaStreamSynchronize(ctx.stream));  // no step in flight reads the old copy
    plan.device_phases.upload(phases.data(), phases.size());
    plan.uploaded = ctx.batch->binding;
  }
  persistent_step_gpu(plan.device_phases.get(), static_cast<int>(plan.phases.size()), plan.grid, plan.smem_bytes,
                      ctx.stream);
}

}  // namespace course
