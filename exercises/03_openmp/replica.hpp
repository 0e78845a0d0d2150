/// @file replica.hpp
/// @brief Stage 03: one thread's copy of the model for data-parallel training (glue).
///
/// Data parallelism gives every thread a whole Network of its own: its own
/// activations, its own gradient buffers, its own copy of the weights. Replica
/// 0 is the master (the network an engine trains and saves): the SGD update and
/// the velocities live there, and the other replicas copy its weights before
/// they use them. Each replica is a separate heap allocation and allocates its
/// activation buffers in its first forward(), on the thread that runs it, so
/// no two threads write into the same cache line while they compute.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "01_fc_softmax/network.hpp"
#include "common/model/arch.hpp"

namespace course {

/// What one shard of a batch gave: its size, its summed loss and its correct predictions.
struct ShardResult {
  int size = 0;
  double loss_sum = 0.0;  ///< mean loss of the shard times its size
  long correct = 0;
  double abs_error_sum = 0.0;  ///< with --loss mse: the shard's summed absolute errors (EpochStats::abs_error_sum)
};

/// One thread's network and the scratch buffers it works in.
template <typename T>
struct Replica {
  explicit Replica(Network<T>& network) : net(network), params(network.params()) {}
  Network<T>& net;
  std::vector<Param<T>*> params;  ///< net.params(), kept: the pointers never change
  std::vector<T> probs, dlogits;  ///< [rows, classes]: the softmax and dL/dlogits of the rows it works on
  std::vector<T> x;               ///< [rows, input]: a batch it gathers itself (parallel evaluation)
  std::vector<int> labels;        ///< [rows]
};

/// The replicas of one model: replicas[0] views the master network (owned by the
/// caller), replicas[t] for t >= 1 view the copies held here.
template <typename T>
struct ReplicaSet {
  std::vector<std::unique_ptr<Network<T>>> copies;
  std::vector<std::unique_ptr<Replica<T>>> replicas;
};

/// `count` replicas of `master`, a network built from (arch, input, classes, make).
/// The copies' weights are not set here: every use begins by copying the master's.
template <typename T>
ReplicaSet<T> make_replicas(Network<T>& master, int count, const Arch& arch, Shape3 input, int classes,
                            const LayerFactory<T>& make) {
  if (count < 1) throw std::invalid_argument("data parallelism needs at least 1 thread, not " + std::to_string(count));
  ReplicaSet<T> set;
  set.replicas.push_back(std::make_unique<Replica<T>>(master));
  for (int t = 1; t < count; ++t) {
    set.copies.push_back(std::make_unique<Network<T>>(arch, input, classes, make));
    set.replicas.push_back(std::make_unique<Replica<T>>(*set.copies.back()));
  }
  return set;
}

}  // namespace course
