/// @file gpu_cnn_engine.cpp
/// @brief Stage 05: the GPU CNN engine. The layer loops, the training step and the evaluation loop are Task 5.9; the rest is glue.
#include "05_im2col_gemm/gpu_cnn_engine.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "01_fc_softmax/network.hpp"
#include "02_conv_pool/cnn.hpp"
#include "04_cuda_matmul/mlp_kernels.hpp"
#include "05_im2col_gemm/im2col.hpp"
#include "05_im2col_gemm/pool_gpu.hpp"
#include "common/not_implemented.hpp"
#include "common/rng.hpp"

namespace course {

namespace {

// The name of layer kind `kind` for the index-th such layer, as stage 01's
// Network names them ("conv1", "pool1", "avgpool1", "flatten1", "fc2", "relu3"): the same
// names label the parameters ("conv1.weight") in every stage's model files.
std::string layer_name(const LayerSpec& spec, int index) {
  const std::string number = std::to_string(index);
  switch (spec.kind) {
    case LayerKind::Dense: return "fc" + number;
    case LayerKind::Conv: return "conv" + number;
    case LayerKind::MaxPool: return "pool" + number;
    case LayerKind::AvgPool: return "avgpool" + number;
    case LayerKind::Flatten: return "flatten" + number;
    case LayerKind::Activation: return activation_name(spec.act) + number;
  }
  return "layer" + number;
}

}  // namespace

// ---- construction ---------------------------------------------------------------------

GpuCnnEngine::GpuCnnEngine(const EngineConfig& cfg, const GpuCnnOptions& options,
                           const std::vector<NamedTensor>& initial)
    : cfg_(cfg), options_(options) {
  // ---- checks that need no GPU
  gemm_kernel_name(options.gemm_kernel);  // throws std::invalid_argument for a number out of range
  if (cfg.loss != "cross-entropy" && cfg.loss != "mse")
    throw std::invalid_argument("unknown loss '" + cfg.loss + "' (stage 05 has cross-entropy and mse)");
  if (cfg.batch < 1) throw std::invalid_argument("batch size must be at least 1, got " + std::to_string(cfg.batch));
  if (options.split_k < 1)
    throw std::invalid_argument("--split-k must be at least 1 (1 = one GEMM), got " + std::to_string(options.split_k));
  check_output_activation(cfg.arch, cfg.loss);  // sigmoid outputs go with mse
  build_layers();

  // The initial parameters, checked before anything is allocated on the GPU.
  const std::vector<float> flat = layout_.flatten_checked(
      initial.empty() ? initial_parameters(cfg.arch, cfg.input, cfg.classes, cfg.seed, make_cnn_layer<float>) : initial,
      "");

  // ---- device memory
  if (options_.unroll == Unroll::Batch && options_.gemm_kernel != kGemmCublas && options_.split_k > 1)
    for (const GpuLayer& l : layers_)
      if (l.kind == LayerKind::Conv) {
        split_k_ = std::make_unique<SplitKGemm>(options_.split_k);
        break;
      }
  params_.upload(flat);
  grads_.resize(flat.size());
  velocity_.resize(flat.size());
  if (!flat.empty()) {
    CUDA_CHECK(cudaMemset(grads_.get(), 0, flat.size() * sizeof(float)));
    CUDA_CHECK(cudaMemset(velocity_.get(), 0, flat.size() * sizeof(float)));
  }
  allocate();
}

std::size_t GpuCnnEngine::plan_layers(const EngineConfig& cfg, std::vector<GpuLayer>* layers,
                                      std::vector<std::string>* names, std::vector<std::vector<int>>* shapes) {
  const std::vector<Shape3> out_shapes = layer_shapes(cfg.arch, cfg.input, cfg.classes);  // throws when the spec does not fit
  std::map<std::string, int> counts;  // layers of each kind so far, keyed as stage 01's Network keys them
  Shape3 in = cfg.input;
  std::size_t offset = 0;
  auto add_parameters = [&](const std::string& name, std::vector<int> weight_shape, int outputs) {
    names->push_back(name + ".weight");
    names->push_back(name + ".bias");
    const std::size_t weights = Tensor::count(weight_shape);
    shapes->push_back(std::move(weight_shape));
    shapes->push_back({outputs});
    offset += weights + static_cast<std::size_t>(outputs);
  };
  for (std::size_t i = 0; i < cfg.arch.layers.size(); ++i) {
    const LayerSpec& spec = cfg.arch.layers[i];
    const std::string key = spec.kind == LayerKind::Activation ? activation_name(spec.act)
                                                                : std::to_string(static_cast<int>(spec.kind));
    GpuLayer l;
    l.kind = spec.kind;
    l.act = spec.act;
    l.slope = static_cast<float>(spec.slope);
    l.name = layer_name(spec, ++counts[key]);
    l.token = spec.token();
    l.in = in;
    l.out = out_shapes[i];
    l.weight = offset;
    if (spec.kind == LayerKind::Conv) {
      l.conv = ConvGeometry{in.c, in.h, in.w, spec.units, spec.kernel, spec.pad, spec.stride};
      l.conv.check();
      l.bias = offset + static_cast<std::size_t>(l.conv.weight_size());
      add_parameters(l.name, {l.conv.C_out, l.conv.C_in, l.conv.K, l.conv.K}, l.conv.C_out);
    } else if (is_pool(spec.kind)) {
      l.pool = PoolGeometry{in.c, in.h, in.w, spec.kernel, spec.stride, spec.pad};
      l.pool.check(spec.kind == LayerKind::AvgPool ? "average-pool" : "max-pool");
    } else if (spec.kind == LayerKind::Dense) {
      const int IN = static_cast<int>(in.size()), OUT = spec.units;
      l.bias = offset + static_cast<std::size_t>(OUT) * IN;
      add_parameters(l.name, {OUT, IN}, OUT);
    }
    layers->push_back(std::move(l));
    in = out_shapes[i];
  }
  return offset;
}

std::vector<NamedTensor> GpuCnnEngine::model_parameters(const EngineConfig& cfg) {
  std::vector<GpuLayer> layers;
  std::vector<std::string> names;
  std::vector<std::vector<int>> shapes;
  plan_layers(cfg, &layers, &names, &shapes);
  std::vector<NamedTensor> out;
  for (std::size_t i = 0; i < names.size(); ++i) out.push_back({names[i], Tensor(shapes[i])});
  return out;
}

void GpuCnnEngine::build_layers() {
  param_count_ = plan_layers(cfg_, &layers_, &layout_.names, &layout_.shapes);
  for (const GpuLayer& l : layers_) profiler_.add_row(l.name + " (" + l.token + ")");

  if (options_.gemm_kernel == kGemmSingleBlock) {
    // Refused now rather than at the first batch: kernel 1 runs one block of at most
    // 1024 threads, one per output, and the largest product of a conv layer is its
    // forward output for the unrolled batch (or image).
    const int rows = options_.unroll == Unroll::Batch ? cfg_.batch : 1;
    long largest = 0;
    for (const GpuLayer& l : layers_) {
      if (l.kind == LayerKind::Conv)
        largest = std::max({largest, unrolled_rows(rows, l.conv) * l.conv.C_out, unrolled_rows(rows, l.conv) * patch_size(l.conv),
                            static_cast<long>(l.conv.C_out) * patch_size(l.conv)});
      if (l.kind == LayerKind::Dense)
        largest = std::max({largest, static_cast<long>(cfg_.batch) * l.out.size(), l.out.size() * l.in.size(),
                            static_cast<long>(cfg_.batch) * l.in.size()});
    }
    if (largest > kMaxThreadsPerBlock)
      throw std::invalid_argument("gemm kernel 1 (single block) computes at most " +
                                  std::to_string(kMaxThreadsPerBlock) + " outputs per product, and this model at batch " +
                                  std::to_string(cfg_.batch) + " needs " + std::to_string(largest) +
                                  ": use --kernel 2 or later");
  }
  gather_row_ = profiler_.add_row("batch gather");
  loss_row_ = profiler_.add_row("loss (" + cfg_.loss + ")");
  sgd_row_ = profiler_.add_row("sgd update");
}

void GpuCnnEngine::allocate() {
  const std::size_t batch = static_cast<std::size_t>(cfg_.batch);
  batch_.resize(batch * static_cast<std::size_t>(cfg_.input.size()));
  batch_labels_.resize(batch);
  sums_.allocate();
  outputs_.assign(layers_.size(), nullptr);
  output_grads_.assign(layers_.size(), nullptr);
  std::size_t workspace = 0;
  const ConvContext ctx = conv_context();
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    GpuLayer& l = layers_[i];
    const std::size_t values = batch * static_cast<std::size_t>(l.out.size());
    if (l.kind == LayerKind::Flatten) {
      // A view: its input gradient is its output gradient (null at the very start).
      output_grads_[i] = i == 0 ? nullptr : output_grads_[i - 1];
      continue;
    }
    l.output.resize(values);
    l.output_grad.resize(values);
    output_grads_[i] = l.output_grad.get();
    if (l.kind == LayerKind::MaxPool) l.argmax.resize(values);
    if (l.kind == LayerKind::Conv) workspace = std::max(workspace, conv_workspace_floats(ctx, cfg_.batch, l.conv));
  }
  workspace_.resize(workspace);
  if (cfg_.profile) profiler_.enable();
}

ConvContext GpuCnnEngine::conv_context() {
  ConvContext ctx;
  ctx.gemm_kernel = options_.gemm_kernel;
  ctx.unroll = options_.unroll;
  ctx.workspace = workspace_.get();
  ctx.workspace_floats = workspace_.size();
  ctx.split_k = split_k_.get();
  return ctx;
}

std::string GpuCnnEngine::device() const { return gpu_name(); }

std::vector<ConvMemory> GpuCnnEngine::conv_memory() const {
  ConvContext ctx;
  ctx.unroll = options_.unroll;
  ctx.gemm_kernel = options_.gemm_kernel;
  ctx.split_k = split_k_.get();
  std::vector<ConvMemory> out;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const GpuLayer& l = layers_[i];
    if (l.kind != LayerKind::Conv) continue;
    out.push_back({l.name + " (" + l.token + ")", l.conv, l.conv.in_size(), static_cast<long>(unrolled_floats(1, l.conv)),
                   conv_workspace_floats(ctx, cfg_.batch, l.conv)});
  }
  return out;
}

int GpuCnnEngine::split_k_chunks_used() const {
  int chunks = 1;
  if (split_k_)
    for (const GpuLayer& l : layers_)
      if (l.kind == LayerKind::Conv)
        chunks = std::max(chunks, split_k_chunks(options_.gemm_kernel, unrolled_rows(cfg_.batch, l.conv),
                                                 split_k_->max_chunks()));
  return chunks;
}

nlohmann::json GpuCnnEngine::stage_results() const {
  nlohmann::json j = {{"gemm_kernel", options_.gemm_kernel},
                      {"gemm", gemm_kernel_name(options_.gemm_kernel)},
                      {"unroll", unroll_name(options_.unroll)},
                      {"split_k_max", options_.split_k},
                      {"split_k_chunks", split_k_chunks_used()},
                      {"workspace_bytes", workspace_bytes()},
                      {"conv_layers", nlohmann::json::array()}};
  for (const ConvMemory& m : conv_memory())
    j["conv_layers"].push_back({{"layer", m.layer},
                                {"input_floats_per_image", m.input_floats},
                                {"unrolled_floats_per_image", m.unrolled_floats},
                                {"expansion", static_cast<double>(m.unrolled_floats) / static_cast<double>(m.input_floats)},
                                {"workspace_bytes", m.workspace_floats * sizeof(float)}});
  return j;
}

// ---- parameters ---------------------------------------------------------------------------

std::vector<NamedTensor> GpuCnnEngine::get_parameters() { return layout_.split(params_.download(), ""); }

void GpuCnnEngine::set_parameters(const std::vector<NamedTensor>& params) {
  const std::vector<float> flat = layout_.flatten_checked(params, "");
  if (!flat.empty()) params_.upload(flat.data(), flat.size());
}

std::vector<NamedTensor> GpuCnnEngine::get_optimizer_state() { return layout_.split(velocity_.download(), ".velocity"); }

void GpuCnnEngine::set_optimizer_state(const std::vector<NamedTensor>& state) {
  const std::vector<float> flat = layout_.flatten_checked(state, ".velocity");
  if (!flat.empty()) velocity_.upload(flat.data(), flat.size());
}

// ---- data --------------------------------------------------------------------------------------

// ---- forward, loss, backward ----------------------------------------------------------------------

const float* GpuCnnEngine::forward(const float* x, int B) {
  input_ = x;
  const ConvContext ctx = conv_context();
  // BEGIN Task 5.9: the forward pass through every layer on the device: conv_forward_gpu, maxpool_forward_gpu (avgpool_forward_gpu, given, for average pools), stage 04's dense and activation kernels; Flatten is a view (its output is its input: no launch, no copy)
  // HINT: layer i reads outputs_[i - 1] (x for i = 0) and writes layers_[i].output, whose pointer it stores in outputs_[i]; a Flatten layer stores its input pointer there instead.
  // HINT: wrap each layer's work in timed(i, Pass::Forward, [&] { ... }) so that --profile can time it.
  // HINT: an activation passes its layer's leaky ReLU slope, l.slope (forward and backward alike).
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    GpuLayer& l = layers_[i];
    const float* in = i == 0 ? x : outputs_[i - 1];
    if (l.kind == LayerKind::Flatten) {
      outputs_[i] = in;
      continue;
    }
    float* out = l.output.get();
    const float* W = params_.get() + l.weight;
    const float* b = params_.get() + l.bias;
    timed(i, Pass::Forward, [&] {
      switch (l.kind) {
        case LayerKind::Conv: conv_forward_gpu(ctx, in, W, b, out, B, l.conv); break;
        case LayerKind::MaxPool: maxpool_forward_gpu(in, out, l.argmax.get(), B, l.pool); break;
        case LayerKind::AvgPool: avgpool_forward_gpu(in, out, B, l.pool); break;
        case LayerKind::Dense:
          dense_forward_gpu(options_.gemm_kernel, in, W, b, out, B, static_cast<int>(l.in.size()),
                            static_cast<int>(l.out.size()));
          break;
        case LayerKind::Activation: activation_forward_gpu(l.act, in, out, B * l.out.size(), l.slope); break;
        case LayerKind::Flatten: break;
      }
    });
    outputs_[i] = out;
  }
  // END Task 5.9
  return outputs_.back();
}

void GpuCnnEngine::backward(int B) {
  const ConvContext ctx = conv_context();
  // BEGIN Task 5.9: the backward pass, last layer first: each layer reads dL/d(its output) from output_grads_[i] and writes its parameter gradients and dL/d(its input) into output_grads_[i - 1] (skipped when that is null: layer 0 needs none); Flatten does nothing
  // HINT: conv: conv_backward_weight_gpu, conv_backward_bias_gpu, and conv_backward_input_gpu when dx is not null; dense: dense_backward_gpu (it skips a null dx itself).
  for (std::size_t i = layers_.size(); i-- > 0;) {
    GpuLayer& l = layers_[i];
    if (l.kind == LayerKind::Flatten) continue;  // output_grads_[i] already is output_grads_[i - 1]
    const float* in = i == 0 ? input_ : outputs_[i - 1];
    const float* dy = output_grads_[i];
    float* dx = i == 0 ? nullptr : output_grads_[i - 1];
    const float* W = params_.get() + l.weight;
    float* dW = grads_.get() + l.weight;
    float* db = grads_.get() + l.bias;
    timed(i, Pass::Backward, [&] {
      switch (l.kind) {
        case LayerKind::Conv:
          conv_backward_weight_gpu(ctx, in, dy, dW, B, l.conv);
          conv_backward_bias_gpu(dy, db, B, l.conv);
          if (dx != nullptr) conv_backward_input_gpu(ctx, dy, W, dx, B, l.conv);
          break;
        case LayerKind::MaxPool:
          if (dx != nullptr) maxpool_backward_gpu(dy, l.argmax.get(), dx, B, l.pool);
          break;
        case LayerKind::AvgPool:
          if (dx != nullptr) avgpool_backward_gpu(dy, dx, B, l.pool);
          break;
        case LayerKind::Dense:
          dense_backward_gpu(options_.gemm_kernel, in, W, dy, dW, db, dx, B, static_cast<int>(l.in.size()),
                             static_cast<int>(l.out.size()));
          break;
        case LayerKind::Activation:
          if (dx != nullptr) activation_backward_gpu(l.act, in, outputs_[i], dy, dx, B * l.out.size(), l.slope);
          break;
        case LayerKind::Flatten: break;
      }
    });
  }
  // END Task 5.9
}

void GpuCnnEngine::loss(const float* logits, const int* labels, int B, float* dlogits, int* predictions) {
  loss_gpu(cfg_.loss, logits, labels, B, cfg_.classes, dlogits, sums_.loss_sum.get(), sums_.correct.get(), predictions,
           sums_.abs_error_sum.get());
}

// ---- epochs ---------------------------------------------------------------------------------------

void GpuCnnEngine::begin_epoch(const Dataset& train, int epoch) {
  epoch_data_ = &upload_once(train, cfg_.input, cfg_.classes, train_data_);
  epoch_size_ = train.size();
  if (epoch_size_ > 0) order_.upload(orders_.order(train.size(), cfg_.seed, epoch));
  sums_.zero();
}

int GpuCnnEngine::num_batches() const { return (epoch_size_ + cfg_.batch - 1) / cfg_.batch; }

void GpuCnnEngine::train_batch(int b) {
  if (epoch_data_ == nullptr) throw std::logic_error("GpuCnnEngine::train_batch before begin_epoch");
  if (b < 0 || b >= num_batches())
    throw std::out_of_range("batch " + std::to_string(b) + " of " + std::to_string(num_batches()));
  const DeviceDataset& data = *epoch_data_;
  const long D = cfg_.input.size();
  float* dlogits = output_grads_.back();
  recording_ = cfg_.profile;  // only training steps are profiled
  // BEGIN Task 5.9: one SGD step on batch b, all queued on the device: gather the batch from order_, forward, loss and dlogits, backward, one SGD update of every parameter; no copy to the host
  // HINT: the same five steps as stage 04's GpuMlpEngine::train_batch; the batch goes to batch_, its labels to batch_labels_, dlogits to output_grads_.back().
  const int first = b * cfg_.batch;
  const int B = std::min(cfg_.batch, epoch_size_ - first);
  timed(gather_row_, Pass::Forward, [&] {
    gather_batch_gpu(data.images.get(), data.labels.get(), order_.get() + first, B, D, batch_.get(),
                     batch_labels_.get());
  });
  const float* logits = forward(batch_.get(), B);
  timed(loss_row_, Pass::Forward, [&] { loss(logits, batch_labels_.get(), B, dlogits, nullptr); });
  backward(B);
  timed(sgd_row_, Pass::Backward, [&] {
    sgd_update_gpu(params_.get(), grads_.get(), velocity_.get(), static_cast<long>(params_.size()),
                   static_cast<float>(cfg_.lr), static_cast<float>(cfg_.momentum));
  });
  // END Task 5.9
  if (recording_) profiler_.collect();
  recording_ = false;
}

EpochStats GpuCnnEngine::end_epoch() {
  const EpochStats stats = sums_.read(epoch_size_);
  epoch_data_ = nullptr;
  return stats;
}

EpochStats GpuCnnEngine::train_epoch(const Dataset& train, int epoch, const BatchCallback& on_batch) {
  return train_epoch_in_batches(*this, train, epoch, cfg_.batch, on_batch, sums_);
}

EpochStats GpuCnnEngine::evaluate(const Dataset& data, std::vector<int>* predictions) {
  const DeviceDataset& d = upload_once(data, cfg_.input, cfg_.classes, eval_data_);
  const int n = data.size();
  const long D = cfg_.input.size();
  predictions_.resize(static_cast<std::size_t>(n));
  sums_.zero();
  // BEGIN Task 5.9: evaluation: forward each batch of the data set in order (straight from the device copy, no gather), loss and predictions, no gradient
  // HINT: batch b starts at image b * cfg_.batch of d.images; pass a null dlogits and predictions_.get() + first.
  for (int first = 0; first < n; first += cfg_.batch) {
    const int B = std::min(cfg_.batch, n - first);
    const float* logits = forward(d.images.get() + first * D, B);
    loss(logits, d.labels.get() + first, B, nullptr, predictions_.get() + first);
  }
  // END Task 5.9
  const EpochStats stats = sums_.read(n);
  if (predictions) *predictions = n > 0 ? predictions_.download() : std::vector<int>();
  return stats;
}

void GpuCnnEngine::reset_layer_times() { profiler_.reset(); }

}  // namespace course
