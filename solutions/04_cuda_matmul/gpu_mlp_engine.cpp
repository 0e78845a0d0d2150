/// @file gpu_mlp_engine.cpp
/// @brief Stage 04: the GPU MLP engine. The training step and the evaluation loop are Task 4.10; the rest is glue.
#include "04_cuda_matmul/gpu_mlp_engine.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "01_fc_softmax/network.hpp"
#include "04_cuda_matmul/mlp_kernels.hpp"
#include "common/not_implemented.hpp"
#include "common/rng.hpp"

namespace course {

namespace {

// Mixes one 32-bit word into a 64-bit hash (a multiply-xorshift step).
std::uint64_t mix(std::uint64_t h, std::uint32_t word) {
  h = (h ^ word) * 0x9E3779B97F4A7C15ull;
  return h ^ (h >> 29);
}

std::uint32_t bits_of(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

// The size, the shape, every label and 64 values of each of up to 4096 evenly
// spaced images (all of the first and the last): enough to tell one data set
// from another, such as a resumed epoch's remaining examples from the full set,
// for about 0.3 ms per epoch on Fashion-MNIST.
std::uint64_t fingerprint(const Dataset& d) {
  const int n = d.size();
  const long D = d.shape.size();
  std::uint64_t h = mix(mix(0, static_cast<std::uint32_t>(n)), static_cast<std::uint32_t>(D));
  for (int y : d.labels) h = mix(h, static_cast<std::uint32_t>(y));
  if (n == 0) return h;
  for (long j = 0; j < D; ++j) h = mix(mix(h, bits_of(d.image(0)[j])), bits_of(d.image(n - 1)[j]));
  const int images = std::min(n, 4096);
  const long values = std::min(D, 64L);
  for (int s = 0; s < images; ++s) {
    const float* image = d.image(static_cast<int>(static_cast<long>(s) * n / images));
    for (long j = 0; j < values; ++j) h = mix(h, bits_of(image[j * D / values]));
  }
  return h;
}

}  // namespace

GpuMlpEngine::GpuMlpEngine(const EngineConfig& cfg, int gemm_kernel, const std::vector<NamedTensor>& initial)
    : cfg_(cfg), gemm_kernel_(gemm_kernel) {
  // ---- checks that need no GPU
  gemm_kernel_name(gemm_kernel);  // throws std::invalid_argument for a number out of range
  if (cfg.loss != "cross-entropy" && cfg.loss != "mse")
    throw std::invalid_argument("unknown loss '" + cfg.loss + "' (stage 04 has cross-entropy and mse)");
  if (cfg.batch < 1) throw std::invalid_argument("batch size must be at least 1, got " + std::to_string(cfg.batch));
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
    g.in = static_cast<int>(in.size());
    g.out = static_cast<int>(layer.out_shape().size());
    if (g.kind == LayerKind::Dense) {
      g.weight = offset;
      g.bias = offset + static_cast<std::size_t>(g.out) * g.in;
      offset = g.bias + static_cast<std::size_t>(g.out);
    }
    layers_.push_back(g);
    times_.push_back({layer.name() + " (" + layer.token() + ")", 0, 0, 0});
    in = layer.out_shape();
  }
  for (Param<float>* p : net.params()) {
    param_names_.push_back(p->name);
    param_shapes_.push_back(p->value.shape);
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
  gather_row_ = times_.size();
  times_.push_back({"batch gather", 0, 0, 0});
  loss_row_ = times_.size();
  times_.push_back({"loss (" + cfg.loss + ")", 0, 0, 0});
  sgd_row_ = times_.size();
  times_.push_back({"sgd update", 0, 0, 0});

  // The initial parameters, checked before anything is allocated on the GPU.
  const std::vector<float> flat =
      flatten_checked(initial.empty() ? initial_parameters(cfg.arch, cfg.input, cfg.classes, cfg.seed) : initial, "");

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
  loss_sum_.resize(1);
  correct_.resize(1);
  if (cfg.profile) {
    sections_.resize(2 * times_.size());
    for (Section& s : sections_) {
      CUDA_CHECK(cudaEventCreate(&s.start));
      CUDA_CHECK(cudaEventCreate(&s.stop));
    }
  }
}

GpuMlpEngine::~GpuMlpEngine() {
  for (Section& s : sections_) {
    if (s.start) cudaEventDestroy(s.start);
    if (s.stop) cudaEventDestroy(s.stop);
  }
}

std::string GpuMlpEngine::device() const { return gpu_name(); }

// ---- parameters ---------------------------------------------------------------

std::vector<float> GpuMlpEngine::flatten_checked(const std::vector<NamedTensor>& tensors,
                                                 const std::string& suffix) const {
  if (tensors.size() != param_names_.size())
    throw std::invalid_argument("expected " + std::to_string(param_names_.size()) + " tensors, got " +
                                std::to_string(tensors.size()));
  std::vector<float> flat;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const std::string name = param_names_[i] + suffix;
    const Tensor& t = tensors[i].tensor;
    if (tensors[i].name != name || t.shape != param_shapes_[i] || t.data.size() != Tensor::count(t.shape))
      throw std::invalid_argument("tensor " + std::to_string(i) + " is " + tensors[i].name + " " + t.shape_str() +
                                  ", expected " + name + " " + Tensor::shape_to_string(param_shapes_[i]));
    flat.insert(flat.end(), t.data.begin(), t.data.end());
  }
  return flat;
}

std::vector<NamedTensor> GpuMlpEngine::split(const std::vector<float>& flat, const std::string& suffix) const {
  std::vector<NamedTensor> out;
  std::size_t offset = 0;
  for (std::size_t i = 0; i < param_names_.size(); ++i) {
    Tensor t(param_shapes_[i]);
    std::copy(flat.begin() + static_cast<long>(offset), flat.begin() + static_cast<long>(offset + t.size()),
              t.data.begin());
    offset += t.size();
    out.push_back({param_names_[i] + suffix, std::move(t)});
  }
  return out;
}

std::vector<NamedTensor> GpuMlpEngine::get_parameters() { return split(params_.download(), ""); }

void GpuMlpEngine::set_parameters(const std::vector<NamedTensor>& params) {
  const std::vector<float> flat = flatten_checked(params, "");
  params_.upload(flat.data(), flat.size());
}

std::vector<NamedTensor> GpuMlpEngine::get_optimizer_state() { return split(velocity_.download(), ".velocity"); }

void GpuMlpEngine::set_optimizer_state(const std::vector<NamedTensor>& state) {
  const std::vector<float> flat = flatten_checked(state, ".velocity");
  velocity_.upload(flat.data(), flat.size());
}

// ---- data -----------------------------------------------------------------------

const GpuMlpEngine::DeviceData& GpuMlpEngine::on_device(const Dataset& data, DeviceData& slot) {
  if (data.shape.size() != cfg_.input.size())
    throw std::invalid_argument("data set '" + data.name + "' has examples of " + data.shape.str() +
                                " but the model was built for " + cfg_.input.str());
  const std::uint64_t fp = fingerprint(data);
  if (slot.size == data.size() && slot.fingerprint == fp && slot.images.size() == data.images.size()) return slot;
  for (int i = 0; i < data.size(); ++i) {
    const int y = data.labels[static_cast<std::size_t>(i)];
    if (y < 0 || y >= cfg_.classes)
      throw std::invalid_argument("data set '" + data.name + "': label " + std::to_string(y) + " of example " +
                                  std::to_string(i) + " is outside [0, " + std::to_string(cfg_.classes) + ")");
  }
  slot.size = 0;  // until the upload has succeeded
  if (data.size() > 0) {
    slot.images.upload(data.images);
    slot.labels.upload(data.labels);
  }
  slot.size = data.size();
  slot.fingerprint = fp;
  return slot;
}

// ---- forward, loss, backward ----------------------------------------------------

template <typename Work>
void GpuMlpEngine::timed(std::size_t row, Pass pass, Work&& work) {
  if (!recording_) {
    work();
    return;
  }
  Section& s = sections_[2 * row + (pass == Pass::Forward ? 0 : 1)];
  CUDA_CHECK(cudaEventRecord(s.start));
  work();
  CUDA_CHECK(cudaEventRecord(s.stop));
  s.pending = true;
}

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
        activation_forward_gpu(l.act, in, out, static_cast<long>(B) * l.out);
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
        activation_backward_gpu(l.act, in, out, dy, dx, static_cast<long>(B) * l.out);
    });
  }
}

void GpuMlpEngine::loss(const float* logits, const int* labels, int B, float* dlogits, int* predictions) {
  if (cfg_.loss == "mse")
    mse_gpu(logits, labels, B, cfg_.classes, dlogits, loss_sum_.get(), correct_.get(), predictions);
  else
    softmax_cross_entropy_gpu(logits, labels, B, cfg_.classes, dlogits, loss_sum_.get(), correct_.get(), predictions);
}

// ---- epochs ---------------------------------------------------------------------

void GpuMlpEngine::zero_sums() {
  CUDA_CHECK(cudaMemsetAsync(loss_sum_.get(), 0, sizeof(double)));
  CUDA_CHECK(cudaMemsetAsync(correct_.get(), 0, sizeof(unsigned long long)));
}

EpochStats GpuMlpEngine::read_sums(long seen) {
  EpochStats stats;
  unsigned long long correct = 0;
  // cudaMemcpy waits for every queued kernel: the one wait of the epoch.
  CUDA_CHECK(cudaMemcpy(&stats.loss_sum, loss_sum_.get(), sizeof(double), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(&correct, correct_.get(), sizeof correct, cudaMemcpyDeviceToHost));
  stats.correct = static_cast<long>(correct);
  stats.seen = seen;
  return stats;
}

void GpuMlpEngine::begin_epoch(const Dataset& train, int epoch) {
  epoch_data_ = &on_device(train, train_data_);
  epoch_size_ = train.size();
  if (epoch_size_ > 0) order_.upload(epoch_order(train.size(), cfg_.seed, epoch));
  zero_sums();
}

int GpuMlpEngine::num_batches() const { return (epoch_size_ + cfg_.batch - 1) / cfg_.batch; }

void GpuMlpEngine::train_batch(int b) {
  if (epoch_data_ == nullptr) throw std::logic_error("GpuMlpEngine::train_batch before begin_epoch");
  if (b < 0 || b >= num_batches())
    throw std::out_of_range("batch " + std::to_string(b) + " of " + std::to_string(num_batches()));
  const DeviceData& data = *epoch_data_;
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
  if (recording_) collect_times();
  recording_ = false;
}

EpochStats GpuMlpEngine::end_epoch() {
  const EpochStats stats = read_sums(epoch_size_);
  epoch_data_ = nullptr;
  return stats;
}

EpochStats GpuMlpEngine::train_epoch(const Dataset& train, int epoch, const BatchCallback& on_batch) {
  begin_epoch(train, epoch);
  const int batches = num_batches();
  for (int b = 0; b < batches; ++b) {
    train_batch(b);
    if (on_batch)
      on_batch(std::min(static_cast<long>(b + 1) * cfg_.batch, static_cast<long>(epoch_size_)), std::nan(""));
  }
  return end_epoch();
}

EpochStats GpuMlpEngine::evaluate(const Dataset& data, std::vector<int>* predictions) {
  const DeviceData& d = on_device(data, eval_data_);
  const int n = data.size();
  const long D = cfg_.input.size();
  predictions_.resize(static_cast<std::size_t>(n));
  zero_sums();
  // BEGIN Task 4.10: evaluation: forward each batch of the data set in order (straight from the device copy, no gather), loss and predictions, no gradient
  // HINT: batch b starts at image b * cfg_.batch of d.images; pass a null dlogits and predictions_.get() + first.
  for (int first = 0; first < n; first += cfg_.batch) {
    const int B = std::min(cfg_.batch, n - first);
    const float* logits = forward(d.images.get() + first * D, B);
    loss(logits, d.labels.get() + first, B, nullptr, predictions_.get() + first);
  }
  // END Task 4.10
  const EpochStats stats = read_sums(n);
  if (predictions) *predictions = n > 0 ? predictions_.download() : std::vector<int>();
  return stats;
}

// ---- profiling ------------------------------------------------------------------

void GpuMlpEngine::collect_times() {
  for (std::size_t i = 0; i < sections_.size(); ++i) {
    Section& s = sections_[i];
    if (!s.pending) continue;
    CUDA_CHECK(cudaEventSynchronize(s.stop));
    float ms = 0.f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, s.start, s.stop));
    LayerTime& t = times_[i / 2];
    (i % 2 == 0 ? t.forward_ms : t.backward_ms) += ms;
    if (i % 2 == 1 || !sections_[i + 1].pending) ++t.calls;  // once per row and step
    s.pending = false;
  }
}

void GpuMlpEngine::reset_layer_times() {
  for (LayerTime& t : times_) {
    t.forward_ms = t.backward_ms = 0;
    t.calls = 0;
  }
}

}  // namespace course
