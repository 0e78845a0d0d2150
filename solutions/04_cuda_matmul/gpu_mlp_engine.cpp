/// @file gpu_mlp_engine.cpp
/// @brief Stage 04: the GPU MLP engine. The training step and the evaluation loop are Task 4.10; the rest is glue.
#include "04_cuda_matmul/gpu_mlp_engine.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "01_fc_softmax/network.hpp"
#include "04_cuda_matmul/mlp_kernels.hpp"
#include "common/not_implemented.hpp"
#include "common/rng.hpp"

namespace course {

GpuMlpEngine::GpuMlpEngine(const EngineConfig& cfg, int gemm_kernel, const std::vector<NamedTensor>& initial)
    : cfg_(cfg), gemm_kernel_(gemm_kernel) {
  // ---- checks that need no GPU
  gemm_kernel_name(gemm_kernel);  // throws std::invalid_argument for a number out of range
  if (cfg.loss != "cross-entropy" && cfg.loss != "mse")
    throw std::invalid_argument("unknown loss '" + cfg.loss + "' (stage 04 has cross-entropy and mse)");
  if (cfg.batch < 1) throw std::invalid_argument("batch size must be at least 1, got " + std::to_string(cfg.batch));
  check_output_activation(cfg.arch, cfg.loss);  // sigmoid outputs go with mse
  for (std::size_t i = 0; i < cfg.arch.layers.size(); ++i) {
    const LayerSpec& l = cfg.arch.layers[i];
    if (l.kind != LayerKind::Dense && l.kind != LayerKind::Activation)
      throw std::invalid_argument("layer " + std::to_string(i + 1) + " '" + l.token() +
                                  "': stage 04 trains dense networks (fc layers and activations) on the GPU; "
                                  "convolution, pooling and flatten run on the GPU in stage 05 (05_im2col_gemm)");
  }

  // ---- the model's layers, names and parameter layout, from stage 01's Network
  // (built on the host for its bookkeeping only; its weights are not initialised).
  Network<float> net(cfg.arch, cfg.input, cfg.classes);
  std::size_t offset = 0;
  Shape3 in = cfg.input;
  for (std::size_t i = 0; i < net.layers().size(); ++i) {
    const auto& layer = *net.layers()[i];
    GpuLayer g;
    g.kind = cfg.arch.layers[i].kind;
    g.act = cfg.arch.layers[i].act;
    g.slope = static_cast<float>(cfg.arch.layers[i].slope);
    g.in = static_cast<int>(in.size());
    g.out = static_cast<int>(layer.out_shape().size());
    if (g.kind == LayerKind::Dense) {
      g.weight = offset;
      g.bias = offset + static_cast<std::size_t>(g.out) * g.in;
      offset = g.bias + static_cast<std::size_t>(g.out);
    }
    layers_.push_back(g);
    profiler_.add_row(layer.name() + " (" + layer.token() + ")");
    in = layer.out_shape();
  }
  for (Param<float>* p : net.params()) {
    layout_.names.push_back(p->name);
    layout_.shapes.push_back(p->value.shape);
  }
  if (gemm_kernel == kGemmSingleBlock) {
    // Refused now rather than at the first batch: the largest product of the model
    // (Y, dW or dX of some layer) must fit in one block of threads.
    long largest = 0;
    for (const GpuLayer& l : layers_)
      if (l.kind == LayerKind::Dense)
        largest = std::max({largest, static_cast<long>(cfg.batch) * l.out, static_cast<long>(l.out) * l.in,
                            static_cast<long>(cfg.batch) * l.in});
    if (largest > kMaxThreadsPerBlock)
      throw std::invalid_argument("gemm kernel 1 (single block) computes at most " +
                                  std::to_string(kMaxThreadsPerBlock) +
                                  " outputs per product, and this model at batch " + std::to_string(cfg.batch) +
                                  " needs " + std::to_string(largest) + ": use --kernel 2 or later");
  }
  gather_row_ = profiler_.add_row("batch gather");
  loss_row_ = profiler_.add_row("loss (" + cfg.loss + ")");
  sgd_row_ = profiler_.add_row("sgd update");

  // The initial parameters, checked before anything is allocated on the GPU.
  const std::vector<float> flat =
      layout_.flatten_checked(initial.empty() ? initial_parameters(cfg.arch, cfg.input, cfg.classes, cfg.seed) : initial, "");

  // ---- device memory
  params_.upload(flat);
  grads_.resize(flat.size());
  velocity_.resize(flat.size());
  if (!flat.empty()) {
    CUDA_CHECK(cudaMemset(grads_.get(), 0, flat.size() * sizeof(float)));
    CUDA_CHECK(cudaMemset(velocity_.get(), 0, flat.size() * sizeof(float)));
  }
  const std::size_t batch = static_cast<std::size_t>(cfg.batch);
  acts_.resize(layers_.size() + 1);
  deltas_.resize(layers_.size() + 1);
  acts_[0].resize(batch * static_cast<std::size_t>(cfg.input.size()));
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    acts_[i + 1].resize(batch * static_cast<std::size_t>(layers_[i].out));
    deltas_[i + 1].resize(acts_[i + 1].size());
  }
  batch_labels_.resize(batch);
  sums_.allocate();
  if (cfg.profile) profiler_.enable();
}

std::string GpuMlpEngine::device() const { return gpu_name(); }

// ---- parameters ---------------------------------------------------------------

std::vector<NamedTensor> GpuMlpEngine::get_parameters() { return layout_.split(params_.download(), ""); }

void GpuMlpEngine::set_parameters(const std::vector<NamedTensor>& params) {
  const std::vector<float> flat = layout_.flatten_checked(params, "");
  params_.upload(flat.data(), flat.size());
}

std::vector<NamedTensor> GpuMlpEngine::get_optimizer_state() { return layout_.split(velocity_.download(), ".velocity"); }

void GpuMlpEngine::set_optimizer_state(const std::vector<NamedTensor>& state) {
  const std::vector<float> flat = layout_.flatten_checked(state, ".velocity");
  velocity_.upload(flat.data(), flat.size());
}

// ---- data -----------------------------------------------------------------------

// ---- forward, loss, backward ----------------------------------------------------

const float* GpuMlpEngine::forward(const float* x, int B) {
  input_ = x;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const GpuLayer& l = layers_[i];
    const float* in = i == 0 ? x : acts_[i].get();
    float* out = acts_[i + 1].get();
    timed(i, Pass::Forward, [&] {
      if (l.kind == LayerKind::Dense)
        dense_forward_gpu(gemm_kernel_, in, params_.get() + l.weight, params_.get() + l.bias, out, B, l.in, l.out);
      else
        activation_forward_gpu(l.act, in, out, static_cast<long>(B) * l.out, l.slope);
    });
  }
  return acts_.back().get();
}

void GpuMlpEngine::backward(int B) {
  for (std::size_t i = layers_.size(); i-- > 0;) {
    const GpuLayer& l = layers_[i];
    const float* in = i == 0 ? input_ : acts_[i].get();
    const float* out = acts_[i + 1].get();
    const float* dy = deltas_[i + 1].get();
    float* dx = i == 0 ? nullptr : deltas_[i].get();  // training never needs dL/dinput
    timed(i, Pass::Backward, [&] {
      if (l.kind == LayerKind::Dense)
        dense_backward_gpu(gemm_kernel_, in, params_.get() + l.weight, dy, grads_.get() + l.weight,
                           grads_.get() + l.bias, dx, B, l.in, l.out);
      else if (dx != nullptr)
        activation_backward_gpu(l.act, in, out, dy, dx, static_cast<long>(B) * l.out, l.slope);
    });
  }
}

void GpuMlpEngine::loss(const float* logits, const int* labels, int B, float* dlogits, int* predictions) {
  loss_gpu(cfg_.loss, logits, labels, B, cfg_.classes, dlogits, sums_.loss_sum.get(), sums_.correct.get(), predictions,
           sums_.abs_error_sum.get());
}

// ---- epochs ---------------------------------------------------------------------

void GpuMlpEngine::begin_epoch(const Dataset& train, int epoch) {
  epoch_data_ = &upload_once(train, cfg_.input, cfg_.classes, train_data_);
  epoch_size_ = train.size();
  if (epoch_size_ > 0) order_.upload(orders_.order(train.size(), cfg_.seed, epoch));
  sums_.zero();
}

int GpuMlpEngine::num_batches() const { return (epoch_size_ + cfg_.batch - 1) / cfg_.batch; }

void GpuMlpEngine::train_batch(int b) {
  if (epoch_data_ == nullptr) throw std::logic_error("GpuMlpEngine::train_batch before begin_epoch");
  if (b < 0 || b >= num_batches())
    throw std::out_of_range("batch " + std::to_string(b) + " of " + std::to_string(num_batches()));
  const DeviceDataset& data = *epoch_data_;
  const long D = cfg_.input.size();
  recording_ = cfg_.profile;  // only training steps are profiled
  // BEGIN Task 4.10: one SGD step on batch b, all queued on the device: gather the batch, forward, loss and dlogits, backward, one SGD update of every parameter
  // HINT: entries b * cfg_.batch .. of order_ name the examples; the last batch may be smaller. No copy to the host here.
  // HINT: wrap the gather, the loss and the update in timed(row, pass, [&] { ... }) for --profile (forward() and backward() time the layers).
  const int first = b * cfg_.batch;
  const int B = std::min(cfg_.batch, epoch_size_ - first);
  timed(gather_row_, Pass::Forward, [&] {
    gather_batch_gpu(data.images.get(), data.labels.get(), order_.get() + first, B, D, acts_[0].get(),
                     batch_labels_.get());
  });
  const float* logits = forward(acts_[0].get(), B);
  timed(loss_row_, Pass::Forward, [&] { loss(logits, batch_labels_.get(), B, deltas_.back().get(), nullptr); });
  backward(B);
  timed(sgd_row_, Pass::Backward, [&] {
    sgd_update_gpu(params_.get(), grads_.get(), velocity_.get(), static_cast<long>(params_.size()),
                   static_cast<float>(cfg_.lr), static_cast<float>(cfg_.momentum));
  });
  // END Task 4.10
  if (recording_) profiler_.collect();
  recording_ = false;
}

EpochStats GpuMlpEngine::end_epoch() {
  const EpochStats stats = sums_.read(epoch_size_);
  epoch_data_ = nullptr;
  return stats;
}

EpochStats GpuMlpEngine::train_epoch(const Dataset& train, int epoch, const BatchCallback& on_batch) {
  return train_epoch_in_batches(*this, train, epoch, cfg_.batch, on_batch, sums_);
}

EpochStats GpuMlpEngine::evaluate(const Dataset& data, std::vector<int>* predictions) {
  const DeviceDataset& d = upload_once(data, cfg_.input, cfg_.classes, eval_data_);
  const int n = data.size();
  const long D = cfg_.input.size();
  predictions_.resize(static_cast<std::size_t>(n));
  sums_.zero();
  // BEGIN Task 4.10: evaluation: forward each batch of the data set in order (straight from the device copy, no gather), loss and predictions, no gradient
  // HINT: batch b starts at image b * cfg_.batch of d.images; pass a null dlogits and predictions_.get() + first.
  for (int first = 0; first < n; first += cfg_.batch) {
    const int B = std::min(cfg_.batch, n - first);
    const float* logits = forward(d.images.get() + first * D, B);
    loss(logits, d.labels.get() + first, B, nullptr, predictions_.get() + first);
  }
  // END Task 4.10
  const EpochStats stats = sums_.read(n);
  if (predictions) *predictions = n > 0 ? predictions_.download() : std::vector<int>();
  return stats;
}

void GpuMlpEngine::reset_layer_times() { profiler_.reset(); }

}  // namespace course
