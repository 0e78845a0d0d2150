/// @file gpu_mlp_engine.hpp
/// @brief Stage 04: the engine the shared trainer drives: an MLP trained on the GPU, batch by batch as GEMMs.
///
/// Where everything lives:
///
/// | on the device                                  | moved to / from the host           |
/// |------------------------------------------------|------------------------------------|
/// | the training and test sets (images, labels)    | uploaded once, on first use        |
/// | every parameter, gradient and velocity, each in one flat buffer | parameters: at start, and on get/set_parameters |
/// | the activations and their gradients per layer  | never                              |
/// | the epoch's shuffled order of examples         | uploaded once per epoch            |
/// | the epoch's loss sum and correct count         | read once per epoch; the loss sum also copied back after every step, read a few steps late (the NaN check) |
///
/// A training step is a fixed sequence of kernel launches (gather, forward,
/// loss, backward, SGD) with no copy in between, so the host only queues work
/// and the GPU runs the steps back to back. After each step one 8-byte copy of
/// the running loss sum goes to the host, where it is read a few steps later:
/// a NaN or Inf loss stops the run without a wait per step (common/gpu/device_sums.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "04_cuda_matmul/gemm.hpp"
#include "common/gpu/engine_parts.hpp"
#include "common/arch.hpp"
#include "common/cuda_check.hpp"
#include "common/engine.hpp"
#include "common/epoch_order_ahead.hpp"

namespace course {

/// Trains a dense network (dense layers and activations: the `mlp` model, or any
/// `--layers`, with leaky ReLU of any slope and a sigmoid output with --loss mse) on the GPU.
class GpuMlpEngine : public Engine {
 public:
  /// Builds cfg's model on the GPU, starting from `initial` (tensors in model
  /// order, as course::initial_parameters() returns them); when `initial` is
  /// empty, from initial_parameters(cfg.arch, cfg.input, cfg.classes, cfg.seed):
  /// the weights every stage starts from. Matrix products use gemm kernel
  /// `gemm_kernel` (gemm.hpp).
  ///
  /// Throws std::invalid_argument before touching the GPU for a convolution,
  /// pooling or flatten layer (stage 05 runs those), a loss other than
  /// cross-entropy and mse, or a kernel number out of range; course::GpuError
  /// when the GPU cannot be used.
  explicit GpuMlpEngine(const EngineConfig& cfg, int gemm_kernel = kBestGemm,
                        const std::vector<NamedTensor>& initial = {});
  GpuMlpEngine(const GpuMlpEngine&) = delete;
  GpuMlpEngine& operator=(const GpuMlpEngine&) = delete;

  /// course::gpu_name(), e.g. "NVIDIA H100 80GB HBM3 (sm_90)".
  std::string device() const override;
  /// Read by every SGD step that follows.
  void set_learning_rate(double lr) override { cfg_.lr = lr; }
  /// One epoch: begin_epoch(), train_batch() for every batch, end_epoch().
  /// `on_batch` gets NaN for the loss, which stays on the device; a NaN or Inf loss
  /// throws NonFiniteLoss a few steps later (train_epoch_in_batches()).
  EpochStats train_epoch(const Dataset& train, int epoch, const BatchCallback& on_batch) override;
  EpochStats evaluate(const Dataset& data, std::vector<int>* predictions) override;
  std::vector<NamedTensor> get_parameters() override;
  void set_parameters(const std::vector<NamedTensor>& params) override;
  /// The SGD velocity of every parameter, in model order ("fc1.weight.velocity", ...).
  std::vector<NamedTensor> get_optimizer_state() override;
  void set_optimizer_state(const std::vector<NamedTensor>& state) override;
  /// With EngineConfig::profile: GPU time of every layer, plus rows for the
  /// batch gather, the loss and the SGD update (CUDA events around each).
  std::vector<LayerTime> layer_times() const override {
    return cfg_.profile ? profiler_.times() : std::vector<LayerTime>();
  }
  void reset_layer_times() override;
  /// With --loss mse the loss also adds up the absolute errors (absolute_error_gpu).
  bool reports_mae() const override { return true; }

  /// The gemm kernel this engine uses.
  int gemm_kernel() const { return gemm_kernel_; }

  // ---- the pieces of train_epoch(), public for the benchmarks and tests ----

  /// Uploads `train` (the first time it is seen) and the example order of
  /// `epoch` (course::epoch_order), and zeroes the epoch's loss sum and count.
  void begin_epoch(const Dataset& train, int epoch);
  /// Batches in the current epoch.
  int num_batches() const;
  /// Queues one SGD step on batch b of the current epoch and returns without
  /// waiting for the GPU (with profiling on, it waits, to read the timers).
  void train_batch(int b);
  /// Waits for the GPU and returns the epoch's sums (one copy to the host).
  EpochStats end_epoch();

 private:
  /// A layer as the GPU engine runs it: sizes are per example.
  struct GpuLayer {
    LayerKind kind = LayerKind::Dense;
    Activation act = Activation::ReLU;
    float slope = 0.01f;               ///< leaky ReLU's (LayerSpec::slope)
    int in = 0, out = 0;               ///< input and output values per example
    std::size_t weight = 0, bias = 0;  ///< offsets of W [out, in] and b [out] in the parameter buffer
  };
  using Pass = GpuProfiler::Pass;

  const float* forward(const float* x, int B);
  void backward(int B);
  void loss(const float* logits, const int* labels, int B, float* dlogits, int* predictions);
  /// Runs `work`, timed for --profile as row `row`, pass `pass`, inside a profiled step.
  template <typename Work>
  void timed(std::size_t row, Pass pass, Work&& work) {
    profiler_.time(row, pass, recording_, 0, work);
  }

  EngineConfig cfg_;
  int gemm_kernel_;
  std::vector<GpuLayer> layers_;
  ParamLayout layout_;  ///< the parameters' names ("fc1.weight", ...) and shapes, in model order
  DeviceBuffer<float> params_, grads_, velocity_;  ///< every parameter, flat, in model order
  std::vector<DeviceBuffer<float>> acts_;  ///< acts_[0]: the gathered batch [batch, D]; acts_[i + 1]: output of layer i
  std::vector<DeviceBuffer<float>>
      deltas_;                    ///< deltas_[i]: dL/d(input of layer i), for i >= 1; deltas_.back(): dL/dlogits
  const float* input_ = nullptr;  ///< the input of the last forward()
  DeviceBuffer<int> batch_labels_;
  DeviceBuffer<int> order_;
  EpochOrderAhead orders_;  ///< the next epoch's order, shuffled on the host while this epoch runs
  DeviceSums sums_;  ///< the loss sum and correct count of the running epoch or evaluation
  DeviceBuffer<int> predictions_;
  DeviceDataset train_data_, eval_data_;
  const DeviceDataset* epoch_data_ = nullptr;  ///< the set begin_epoch() was given
  int epoch_size_ = 0;

  GpuProfiler profiler_;  ///< one row per layer, then gather, loss, SGD
  std::size_t gather_row_ = 0, loss_row_ = 0, sgd_row_ = 0;
  bool recording_ = false;  ///< true inside a profiled train_batch()
};

}  // namespace course
