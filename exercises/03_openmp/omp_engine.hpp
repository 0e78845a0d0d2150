/// @file omp_engine.hpp
/// @brief Stage 03: the engines the trainer drives, one per strategy (glue, not a task).
///
///     --parallel data    DataParallelEngine: a replica per thread, shards of each batch, one reduction
///     --parallel loops   LoopParallelEngine: one network whose layers split their loops over the batch
///
/// Both build their layers with the factory they are given (stage 02's
/// make_cnn_layer in the trainer), start from the same initial weights as
/// stages 01 and 02 for the same seed, and visit the same batches.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

#include "01_fc_softmax/cpu_engine.hpp"
#include "03_openmp/data_parallel.hpp"
#include "03_openmp/parallel_evaluate.hpp"
#include "03_openmp/replica.hpp"
#include "03_openmp/sliced_layer.hpp"

namespace course {

/// How the threads share the work of a batch.
enum class Parallelism { Data, Loops };

/// "data" or "loops" -> the strategy; anything else is refused with the names accepted.
inline Parallelism parse_parallelism(const std::string& name) {
  if (name == "data") return Parallelism::Data;
  if (name == "loops") return Parallelism::Loops;
  throw std::invalid_argument("--parallel must be 'data' or 'loops', not '" + name + "'");
}

/// "data-parallel", "loop-level": as the device line shows it.
inline std::string parallelism_label(Parallelism p) { return p == Parallelism::Data ? "data-parallel" : "loop-level"; }

/// "CPU, 16 threads (data-parallel)"
inline std::string cpu_threads_label(int threads, Parallelism p) {
  return "CPU, " + std::to_string(threads) + (threads == 1 ? " thread (" : " threads (") + parallelism_label(p) + ")";
}

/// Data-parallel training on cfg.threads replicas; the master is CpuEngine's
/// network (what get_parameters() and --save see), and evaluation shares the
/// batches among the replicas. --profile times the master, i.e. shard 0.
class DataParallelEngine : public CpuEngine {
 public:
  DataParallelEngine(const EngineConfig& cfg, const LayerFactory<float>& make)
      : CpuEngine(cfg, make), set_(make_replicas(net_, cfg.threads, cfg.arch, cfg.input, cfg.classes, make)) {}
  std::string device() const override { return cpu_threads_label(threads(), Parallelism::Data); }
  EpochStats train_epoch(const Dataset& train, int epoch, const BatchCallback& on_batch) override {
    return train_epoch_data_parallel(set_.replicas, train, cfg_, epoch, on_batch);
  }
  EpochStats evaluate(const Dataset& data, std::vector<int>* predictions) override {
    return evaluate_parallel(set_.replicas, data, cfg_, predictions);
  }
  int threads() const { return static_cast<int>(set_.replicas.size()); }

 private:
  ReplicaSet<float> set_;
};

/// Loop-level parallelism: stage 01's training loop and evaluation on a
/// network whose every layer is a SlicedLayer of cfg.threads copies. The
/// loss, the SGD step and the copy of the batch stay on one thread.
class LoopParallelEngine : public CpuEngine {
 public:
  LoopParallelEngine(const EngineConfig& cfg, const LayerFactory<float>& make)
      : CpuEngine(cfg, sliced_layers(make, cfg.threads)) {}
  std::string device() const override { return cpu_threads_label(cfg_.threads, Parallelism::Loops); }
};

/// The engine of a strategy, on cfg.threads threads (at least 1).
inline std::unique_ptr<Engine> make_omp_engine(const EngineConfig& cfg, Parallelism p,
                                               const LayerFactory<float>& make) {
  if (cfg.threads < 1) throw std::invalid_argument("--threads must be at least 1 here, not " + std::to_string(cfg.threads));
  if (p == Parallelism::Data) return std::make_unique<DataParallelEngine>(cfg, make);
  return std::make_unique<LoopParallelEngine>(cfg, make);
}

}  // namespace course
