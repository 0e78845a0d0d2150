/// @file fused_engine_step.cpp
/// @brief Stage 08: the fused engine's step: its phases at each batch size, run one by one, as a CUDA graph or as the persistent kernel (glue, not a task).
#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "08_fused/fused_engine.hpp"

namespace course {

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
        p = fused_phase(
            plan_conv_block_forward(l.conv, B, in, W, b, buf.out.get(), buf.argmax.get(), target_blocks_));
        break;
      case FusedLayer::Kind::Dense:
        p = fused_phase(plan_dense_forward(B, static_cast<int>(l.in.size()), static_cast<int>(l.out.size()), l.act,
                                           in, W, b, buf.out.get(), dense_partials_.get(), counters_.get(),
                                           target_blocks_, buf.max_k_slices));
        break;
      case FusedLayer::Kind::Head:
        p = fused_phase(plan_softmax_head(B, static_cast<int>(l.in.size()), cfg_.classes, fused_loss(), in, W, b,
                                          labels, sums.loss_sum.get(), sums.correct.get(), predictions, train,
                                          buf.dw_partials.get(), buf.db_partials.get(),
                                          i > 0 ? buf.dx.get() : nullptr));
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
  plan.chain = plan_dense_chain(B, chain.data(), L, fused_loss(), nullptr, nullptr, nullptr, epoch_.step(),
                                cfg_.batch, batch_.get(), sums_.loss_sum.get(), sums_.correct.get(),
                                target_blocks_ / 2);  // the data pointers are set by prepare()
  plan.phases.push_back(fused_phase(&plan.chain));
  plan.rows.push_back(chain_row_);
  plan.passes.push_back(Pass::Forward);
  plan.chain_update = plan_dense_chain_update(B, chain.data(), L, batch_.get(), w_offsets.data(), b_offsets.data(),
                                              params_.get(), velocity_.get(), hyper_.get(), epoch_.step());
  plan.chain_update.loss = loss_check_copy();
  plan.phases.push_back(fused_phase(&plan.chain_update));
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

  GatherArgs gather{};  // the data pointers are set by prepare()
  gather.step = epoch_.step();
  gather.batch = cfg_.batch;
  gather.B = B;
  gather.D = D;
  gather.x = batch_.get();
  gather.y = batch_labels_.get();
  gather.blocks = static_cast<int>((B * D + kFusedThreads - 1) / kFusedThreads);
  plan->phases.push_back(fused_phase(gather));
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
      p = fused_phase(plan_conv_block_backward(l.conv, B, x, W, buf.out.get(), buf.argmax.get(), dy,
                                               buf.dw_partials.get(), buf.db_partials.get(), dx, target_blocks_,
                                               buf.wg_images));
      slices[i] = p.conv_backward.wg_slices;
    } else {
      p = fused_phase(plan_dense_backward(B, static_cast<int>(l.in.size()), static_cast<int>(l.out.size()), l.act,
                                          x, W, buf.out.get(), dy, buf.dw_partials.get(), buf.db_partials.get(), dx));
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
  SgdArgs sgd = plan_sgd_multi_tensor(params_.get(), velocity_.get(), plan->tensors.get(),
                                      static_cast<int>(tensors.size()), static_cast<long long>(params_.size()),
                                      hyper_.get(), epoch_.step());
  sgd.loss = loss_check_copy();
  plan->phases.push_back(fused_phase(sgd));
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

}  // namespace course
