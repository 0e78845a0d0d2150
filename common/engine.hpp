/// @file engine.hpp
/// @brief What a stage plugs into the shared trainer (common/trainer.hpp).
///
/// The trainer owns everything a person sees (command line, data, progress
/// bar, tables, JSON, model files); a stage's Engine owns the numbers: it
/// trains one epoch and evaluates, on its own device, with its own lesson code.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/arch.hpp"
#include "common/data.hpp"
#include "common/tensor.hpp"

namespace course {

/// Sums over the examples seen: mean loss is loss_sum / seen.
struct EpochStats {
  double loss_sum = 0.0;
  long correct = 0;
  long seen = 0;
};

/// Time spent in one layer, summed over the calls since the last reset.
struct LayerTime {
  std::string layer;  ///< "conv1 (conv16k3p1)"
  double forward_ms = 0.0;
  double backward_ms = 0.0;
  long calls = 0;
};

/// Called after each training batch with the examples done so far this epoch
/// and their running loss sum (engines that keep the loss on a device may pass NaN).
using BatchCallback = std::function<void(long examples_done, double loss_sum)>;

/// Everything an engine needs to build its model.
struct EngineConfig {
  Arch arch;                 ///< parsed architecture
  Shape3 input;              ///< shape of one example
  int classes = 10;
  int batch = 64;
  double lr = 0.01;
  double momentum = 0.9;
  std::uint64_t seed = 42;
  std::string loss = "cross-entropy";  ///< or "mse"
  int threads = 1;           ///< CPU stages
  bool profile = false;      ///< time every layer (costs a little)
  bool verbose = false;
};

/// A stage's training engine.
class Engine {
 public:
  virtual ~Engine() = default;
  /// "CPU, 1 thread", "NVIDIA H100 80GB HBM3"
  virtual std::string device() const = 0;
  /// One pass over `train` in the order of course::epoch_order(n, seed, epoch).
  virtual EpochStats train_epoch(const Dataset& train, int epoch, const BatchCallback& on_batch) = 0;
  /// Forward passes only; fills predictions (one class per example) when given.
  virtual EpochStats evaluate(const Dataset& data, std::vector<int>* predictions) = 0;
  /// Host copies of every parameter, in model order ("fc1.weight", "fc1.bias", ...).
  virtual std::vector<NamedTensor> get_parameters() = 0;
  /// Replaces every parameter (names and shapes must match get_parameters()).
  virtual void set_parameters(const std::vector<NamedTensor>& params) = 0;
  /// Per-layer times since the last reset (empty unless EngineConfig::profile).
  virtual std::vector<LayerTime> layer_times() const { return {}; }
  virtual void reset_layer_times() {}
};

/// Builds a stage's engine; throws std::invalid_argument for a model the stage cannot run.
using EngineFactory = std::function<std::unique_ptr<Engine>(const EngineConfig&)>;

}  // namespace course
