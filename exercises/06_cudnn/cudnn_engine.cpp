/// @file cudnn_engine.cpp
/// @brief Stage 06: the cuDNN engine: plans per batch size, the training step, the graph, the profile (glue, not a task).
#include "06_cudnn/cudnn_engine.hpp"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>

#include "01_fc_softmax/network.hpp"
#include "02_conv_pool/cnn.hpp"
#include "02_conv_pool/layers.hpp"
#include "04_cuda_matmul/mlp_kernels.hpp"
#include "06_cudnn/avgpool_cudnn.hpp"
#include "06_cudnn/loss_cudnn.hpp"
#include "common/cudnn_check.hpp"
#include "common/model_file.hpp"
#include "common/rng.hpp"

namespace course {

EngineConfig CudnnEngine::checked(const EngineConfig& cfg) {
  if (cfg.loss != "cross-entropy" && cfg.loss != "mse")
    throw std::invalid_argument("unknown loss '" + cfg.loss + "' (stage 06 has cross-entropy and mse)");
  if (cfg.batch < 1) throw std::invalid_argument("batch size must be at least 1, got " + std::to_string(cfg.batch));
  if (cfg.classes < 1) throw std::invalid_argument("classes must be at least 1, got " + std::to_string(cfg.classes));
  layer_shapes(cfg.arch, cfg.input, cfg.classes);  // throws std::invalid_argument naming the layer that does not fit
  check_output_activation(cfg.arch, cfg.loss);      // sigmoid outputs go with mse
  return cfg;
}

CudnnEngine::CudnnEngine(const EngineConfig& cfg, bool use_graph, const std::vector<NamedTensor>& initial,
                         AlgoRule rule)
    : cfg_(checked(cfg)), use_graph_(use_graph), algo_rule_(rule),
      recorded_(recorded_algorithms(cfg_.engine_state, rule)) {
  // ---- the layers, their names and the parameter layout, from stages 01 and 02's
  // Network (built on the host for its bookkeeping only).
  Network<float> net(cfg_.arch, cfg_.input, cfg_.classes, make_cnn_layer<float>);
  std::size_t offset = 0;
  Shape3 in = cfg_.input;
  for (std::size_t i = 0; i < net.layers().size(); ++i) {
    const auto& layer = *net.layers()[i];
    Layer l;
    l.kind = cfg_.arch.layers[i].kind;
    l.name = layer.name() + " (" + layer.token() + ")";
    l.in = in;
    l.out = layer.out_shape();
    if (const auto* conv = dynamic_cast<const Conv2dLayer<float>*>(&layer)) l.conv = conv->geometry();
    if (const auto* pool = dynamic_cast<const MaxPoolLayer<float>*>(&layer)) l.pool = pool->geometry();
    if (const auto* pool = dynamic_cast<const AvgPoolLayer<float>*>(&layer)) l.pool = pool->geometry();
    if (l.kind == LayerKind::Conv || l.kind == LayerKind::Dense) {
      auto* mutable_layer = net.layers()[i].get();
      const auto ps = mutable_layer->params();  // weight, then bias
      l.weight = offset;
      l.bias = offset + ps[0]->value.size();
      offset = l.bias + ps[1]->value.size();
      grad_ranges_.push_back({l.weight, offset, layer.name() + " (" + layer.token() + ")"});
    }
    if (l.kind == LayerKind::Activation) {
      l.act = cfg_.arch.layers[i].act;
      l.slope = static_cast<float>(cfg_.arch.layers[i].slope);
      cudnnActivationMode_t mode{};
      l.act_on_cudnn = cudnn_activation_mode(l.act, &mode);
      if (l.act_on_cudnn) {
        l.act_desc = std::make_unique<ActivationDescriptor>();
        describe_activation(*l.act_desc, mode);
      }
    }
    profiler_.add_row(l.name);
    layers_.push_back(std::move(l));
    in = layer.out_shape();
  }
  // backward() finishes the layers last to first.
  std::reverse(grad_ranges_.begin(), grad_ranges_.end());
  for (std::size_t r = 0, i = layers_.size(); i-- > 0;)
    if (layers_[i].kind == LayerKind::Conv || layers_[i].kind == LayerKind::Dense) layers_[i].range = static_cast<int>(r++);
  for (Param<float>* p : net.params()) {
    layout_.names.push_back(p->name);
    layout_.shapes.push_back(p->value.shape);
  }
  gather_row_ = profiler_.add_row("batch gather");
  loss_row_ = profiler_.add_row("loss (" + cfg_.loss + ")");
  sgd_row_ = profiler_.add_row("sgd update");

  const std::vector<float> flat = layout_.flatten_checked(
      initial.empty() ? initial_parameters(cfg_.arch, cfg_.input, cfg_.classes, cfg_.seed, make_cnn_layer<float>)
                      : initial,
      "");

  // ---- device memory, all of it now: nothing is allocated while training
  params_.upload(flat);
  grads_.resize(flat.size());
  velocity_.resize(flat.size());
  if (!flat.empty()) {
    CUDA_CHECK(cudaMemset(grads_.get(), 0, flat.size() * sizeof(float)));
    CUDA_CHECK(cudaMemset(velocity_.get(), 0, flat.size() * sizeof(float)));
  }
  const std::size_t batch = static_cast<std::size_t>(cfg_.batch);
  const std::size_t L = layers_.size();
  act_buf_.resize(L + 1);
  delta_buf_.resize(L + 1);
  x_of_.assign(L + 1, nullptr);
  dy_of_.assign(L + 1, nullptr);
  act_buf_[0].resize(batch * static_cast<std::size_t>(cfg_.input.size()));
  for (std::size_t i = 0; i < L; ++i) {
    if (layers_[i].kind == LayerKind::Flatten) continue;  // flatten reuses its input's bytes
    act_buf_[i + 1].resize(batch * static_cast<std::size_t>(layers_[i].out.size()));
    if (i >= 1) delta_buf_[i].resize(batch * static_cast<std::size_t>(layers_[i].in.size()));
  }
  delta_buf_[L].resize(batch * static_cast<std::size_t>(cfg_.classes));
  log_probs_.resize(batch * static_cast<std::size_t>(cfg_.classes));
  batch_labels_.resize(batch);
  epoch_.allocate();
  for (DeviceSums* sums : {&sums_, &eval_sums_, &scratch_sums_}) sums->allocate();
  if (cfg_.profile) profiler_.enable();
  plan_for(cfg_.batch);  // descriptors and algorithms of the full batch, before any timing
}

CudnnEngine::~CudnnEngine() {
  cudaStreamSynchronize(stream());  // nothing may still use what is about to be freed
}

std::string CudnnEngine::device() const { return gpu_name(); }

// ---- plans: descriptors and algorithms per batch size ------------------------------

const CudnnEngine::BatchPlan& CudnnEngine::plan_for(int B) {
  auto found = plans_.find(B);
  if (found != plans_.end()) return *found->second;
  auto plan = std::make_unique<BatchPlan>();
  plan->B = B;
  plan->layers.resize(layers_.size());
  std::vector<ConvAlgorithms> convs;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = layers_[i];
    LayerPlan& lp = plan->layers[i];
    switch (l.kind) {
      case LayerKind::Conv: {
        lp.conv = std::make_unique<ConvDescriptors>();
        describe_conv(*lp.conv, l.conv, B);
        // Those the run this one continues chose, where cuDNN can still run them
        // (measuring again could choose others: algorithm_choice.hpp); else measured.
        const std::optional<ConvAlgorithms> taken = take_recorded(recorded_, l.name, l.conv, B, handles(), *lp.conv);
        lp.algos = taken ? *taken : measured_conv_algorithms(handles(), *lp.conv, l.conv, B, algo_rule_);
        plan->recorded += taken ? 1 : 0;
        convs.push_back(lp.algos);
        break;
      }
      case LayerKind::MaxPool:
        lp.pool = std::make_unique<PoolDescriptors>();
        describe_pool(*lp.pool, l.pool, B);
        break;
      case LayerKind::AvgPool:
        lp.pool = std::make_unique<PoolDescriptors>();
        describe_avgpool(*lp.pool, l.pool, B);
        break;
      case LayerKind::Activation:
        if (l.act_on_cudnn) {
          lp.act = std::make_unique<TensorDescriptor>();
          set_nchw(*lp.act, B, l.out.c, l.out.h, l.out.w);
        }
        break;
      case LayerKind::Dense:
        lp.dense = std::make_unique<DenseDescriptors>();
        set_nchw(lp.dense->y, B, l.out.c, 1, 1);
        set_nchw(lp.dense->bias, 1, l.out.c, 1, 1);
        break;
      case LayerKind::Flatten:
        break;
    }
  }
  set_nchw(plan->logits, B, cfg_.classes, 1, 1);
  plan->workspace_bytes = shared_workspace_bytes(convs);
  if (plan->workspace_bytes > workspace_.size()) {
    graph_.reset();  // the captured step points into the old workspace
    CUDA_CHECK(cudaStreamSynchronize(stream()));
    workspace_.resize(plan->workspace_bytes);
  }
  return *plans_.emplace(B, std::move(plan)).first->second;
}

// ---- data ---------------------------------------------------------------------------

// ---- forward, loss, backward ----------------------------------------------------------

const float* CudnnEngine::forward(const float* x, const BatchPlan& plan) {
  const GpuHandles& h = handles();
  const int B = plan.B;
  x_of_[0] = x;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = layers_[i];
    const LayerPlan& lp = plan.layers[i];
    const float* in = x_of_[i];
    if (l.kind == LayerKind::Flatten) {  // the same bytes, read as [B, C*H*W]
      x_of_[i + 1] = in;
      continue;
    }
    float* out = act_buf_[i + 1].get();
    timed(i, Pass::Forward, [&] {
      switch (l.kind) {
        case LayerKind::Conv:
          conv_forward_cudnn(h, *lp.conv, lp.algos, workspace(), in, params_.get() + l.weight, params_.get() + l.bias,
                             out);
          break;
        case LayerKind::MaxPool: maxpool_forward_cudnn(h, *lp.pool, in, out); break;
        case LayerKind::AvgPool: avgpool_forward_cudnn(h, *lp.pool, in, out); break;
        case LayerKind::Activation:
          if (l.act_on_cudnn)
            activation_forward_cudnn(h, *l.act_desc, *lp.act, in, out);
          else
            activation_forward_gpu(l.act, in, out, B * l.out.size(), l.slope, stream());
          break;
        case LayerKind::Dense:
          dense_forward_cublas(h, *lp.dense, in, params_.get() + l.weight, params_.get() + l.bias, out, B,
                               static_cast<int>(l.in.size()), l.out.c);
          break;
        case LayerKind::Flatten: break;
      }
    });
    x_of_[i + 1] = out;
  }
  return x_of_.back();
}

void CudnnEngine::backward(const BatchPlan& plan) {
  const GpuHandles& h = handles();
  const int B = plan.B;
  dy_of_.back() = delta_buf_.back().get();
  for (std::size_t i = layers_.size(); i-- > 0;) {
    const Layer& l = layers_[i];
    const LayerPlan& lp = plan.layers[i];
    const float* dy = dy_of_[i + 1];
    if (l.kind == LayerKind::Flatten) {
      dy_of_[i] = dy;
      continue;
    }
    float* dx = i == 0 ? nullptr : delta_buf_[i].get();  // training never needs dL/dinput
    const float* x = x_of_[i];
    const float* y = x_of_[i + 1];
    timed(i, Pass::Backward, [&] {
      switch (l.kind) {
        case LayerKind::Conv:
          conv_backward_cudnn(h, *lp.conv, lp.algos, workspace(), x, params_.get() + l.weight, dy,
                              grads_.get() + l.weight, grads_.get() + l.bias, dx);
          break;
        case LayerKind::MaxPool:
          if (dx != nullptr) maxpool_backward_cudnn(h, *lp.pool, x, y, dy, dx);
          break;
        case LayerKind::AvgPool:
          if (dx != nullptr) avgpool_backward_cudnn(h, *lp.pool, x, y, dy, dx);
          break;
        case LayerKind::Activation:
          if (dx == nullptr) break;
          if (l.act_on_cudnn)
            activation_backward_cudnn(h, *l.act_desc, *lp.act, x, y, dy, dx);
          else
            activation_backward_gpu(l.act, x, y, dy, dx, B * l.out.size(), l.slope, stream());
          break;
        case LayerKind::Dense:
          dense_backward_cublas(h, *lp.dense, x, params_.get() + l.weight, dy, grads_.get() + l.weight,
                                grads_.get() + l.bias, dx, B, static_cast<int>(l.in.size()), l.out.c);
          break;
        case LayerKind::Flatten: break;
      }
    });
    if (sync_ != nullptr && l.range >= 0) sync_->gradients_queued(grad_ranges_[static_cast<std::size_t>(l.range)], stream());
    dy_of_[i] = dx;
  }
}

void CudnnEngine::loss(const BatchPlan& plan, const float* logits, const int* labels, float* dlogits,
                       DeviceSums& sums, int* predictions) {
  if (cfg_.loss == "mse") {
    mse_gpu(logits, labels, plan.B, cfg_.classes, dlogits, sums.loss_sum.get(), sums.correct.get(), predictions,
            stream());
    absolute_error_gpu(logits, labels, plan.B, cfg_.classes, sums.abs_error_sum.get(), stream());  // the MAE
  } else {
    log_softmax_cudnn(handles(), plan.logits, logits, log_probs_.get());
    nll_from_log_softmax_gpu(log_probs_.get(), labels, plan.B, cfg_.classes, dlogits, sums.loss_sum.get(),
                             sums.correct.get(), predictions, stream());
  }
}

// ---- the training step ------------------------------------------------------------------

void CudnnEngine::queue_step(const BatchPlan& plan, DeviceSums& sums, bool update) {
  const DeviceDataset& data = epoch_.data();
  const long D = cfg_.input.size();
  timed(gather_row_, Pass::Forward, [&] {
    gather_batch_at_step_gpu(data.images.get(), data.labels.get(), epoch_.order(), epoch_.step(), cfg_.batch, plan.B, D,
                             act_buf_[0].get(), batch_labels_.get(), stream());
  });
  const float* logits = forward(act_buf_[0].get(), plan);
  timed(loss_row_, Pass::Forward,
        [&] { loss(plan, logits, batch_labels_.get(), delta_buf_.back().get(), sums, nullptr); });
  backward(plan);
  if (sync_ != nullptr) sync_->before_update(stream());  // also in the warm-up: the hooks' work joins the stream
  if (!update) return;
  queue_update();
}

void CudnnEngine::queue_update() {
  timed(sgd_row_, Pass::Backward, [&] {
    sgd_update_gpu(params_.get(), grads_.get(), velocity_.get(), static_cast<long>(params_.size()),
                   static_cast<float>(cfg_.lr), static_cast<float>(cfg_.momentum), stream());
    advance_step_gpu(epoch_.step(), stream());
  });
}

CudnnEngine::GraphKey CudnnEngine::graph_key() {
  return {epoch_.data().images.get(), epoch_.data().labels.get(), epoch_.order(), workspace_.get(), cfg_.lr};
}

void CudnnEngine::run_captured(const BatchPlan& plan) {
  const GraphKey key = graph_key();
  if (!graph_.ready() || !(key == graph_key_)) {
    if (!warmed_up_) {
      // One uncaptured pass first (no update, sums to scratch, the step counter
      // untouched), so every library call has done its one-time setup (loading
      // kernels, building plans) outside the capture, where that is allowed.
      queue_step(plan, scratch_sums_, /*update=*/false);
      CUDA_CHECK(cudaStreamSynchronize(stream()));
      warmed_up_ = true;
    }
    try {
      graph_.capture(stream(), [&] { queue_step(plan, sums_, /*update=*/true); });
    } catch (const GpuError& e) {
      std::cerr << "warning: capturing the training step as a CUDA graph failed (" << e.what()
                << "); stage 06 goes on without the graph\n";
      use_graph_ = false;
      queue_step(plan, sums_, /*update=*/true);
      return;
    }
    graph_key_ = key;
  }
  graph_.replay(stream());
  ++graph_replays_;
}

// ---- epochs -------------------------------------------------------------------------------

void CudnnEngine::begin_epoch(const Dataset& train, int epoch) {
  begin_epoch_in_order(train, orders_.order(train.size(), cfg_.seed, epoch));
}

void CudnnEngine::begin_epoch_in_order(const Dataset& train, const std::vector<int>& order) {
  epoch_.begin(train, order, cfg_.input, cfg_.classes, sums_, stream());
  // Every batch size of the epoch is prepared now, outside the steps: the full
  // batches and, when the set does not divide evenly, the last one.
  const int size = epoch_.size();
  if (size > 0) {
    plan_for(std::min(cfg_.batch, size));
    if (size % cfg_.batch != 0) plan_for(size % cfg_.batch);
  }
}

int CudnnEngine::num_batches() const { return epoch_.num_batches(cfg_.batch); }

void CudnnEngine::train_batch(int b) {
  const int B = epoch_.batch_size(b, cfg_.batch, "CudnnEngine::train_batch");
  const BatchPlan& plan = plan_for(B);
  recording_ = cfg_.profile;  // only training steps are profiled
  if (graph_enabled() && B == cfg_.batch && (sync_ == nullptr || sync_->step_may_be_captured()))
    run_captured(plan);
  else
    queue_step(plan, sums_, /*update=*/true);
  if (recording_) profiler_.collect();
  recording_ = false;
  epoch_.batch_queued();
}

void CudnnEngine::train_batch_without_examples() {
  if (!epoch_.started()) throw std::logic_error("CudnnEngine::train_batch_without_examples before begin_epoch");
  if (epoch_.next() < num_batches())
    throw std::logic_error("CudnnEngine::train_batch_without_examples: batch " + std::to_string(epoch_.next()) + " of " +
                           std::to_string(num_batches()) + " still has examples");
  CUDA_CHECK(cudaMemsetAsync(grads_.get(), 0, grads_.size() * sizeof(float), stream()));
  if (sync_ != nullptr) {
    for (const GradientRange& r : grad_ranges_) sync_->gradients_queued(r, stream());
    sync_->before_update(stream());
  }
  queue_update();
  epoch_.batch_queued();
}

void CudnnEngine::set_gradient_sync(GradientSync* sync) {
  drop_graph();
  warmed_up_ = false;  // the warm-up runs the new hooks' work once outside a capture too
  sync_ = sync;
}

void CudnnEngine::drop_graph() {
  CUDA_CHECK(cudaStreamSynchronize(stream()));  // a replay of the old graph may still run
  graph_.reset();
}

EpochStats CudnnEngine::end_epoch() {
  const EpochStats stats = sums_.read(epoch_.size(), stream());
  epoch_.end();
  return stats;
}

EpochStats CudnnEngine::train_epoch(const Dataset& train, int epoch, const BatchCallback& on_batch) {
  return train_epoch_in_batches(*this, train, epoch, cfg_.batch, on_batch, sums_, stream());
}

EpochStats CudnnEngine::evaluate(const Dataset& data, std::vector<int>* predictions) {
  const DeviceDataset& d = upload_once(data, cfg_.input, cfg_.classes, eval_data_, stream());
  const int n = data.size();
  const long D = cfg_.input.size();
  predictions_.resize(static_cast<std::size_t>(std::max(n, 1)));
  eval_sums_.zero(stream());
  for (int first = 0; first < n; first += cfg_.batch) {
    const int B = std::min(cfg_.batch, n - first);
    const BatchPlan& plan = plan_for(B);
    const float* logits = forward(d.images.get() + static_cast<long>(first) * D, plan);
    loss(plan, logits, d.labels.get() + first, nullptr, eval_sums_, predictions_.get() + first);
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

}  // namespace course
