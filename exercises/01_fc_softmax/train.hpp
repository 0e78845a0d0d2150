/// @file train.hpp
/// @brief Stage 01: the training loop (one epoch of minibatch SGD) and evaluation.
#pragma once

#include <vector>

#include "01_fc_softmax/loss.hpp"
#include "01_fc_softmax/network.hpp"
#include "01_fc_softmax/sgd.hpp"
#include "common/data/data.hpp"
#include "common/train/engine.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

/// Index of the largest of K scores (the first one on ties).
template <typename T>
int argmax(const T* scores, int K) {
  int best = 0;
  for (int k = 1; k < K; ++k)
    if (scores[k] > scores[best]) best = k;
  return best;
}

/// One epoch: visit the training set in the shuffled order of (cfg.seed, epoch)
/// in batches of cfg.batch; for each batch run forward, the loss and its
/// gradient, backward, and one SGD step on every parameter.
///
/// Returns the summed loss, the correct predictions and (with --loss mse) the
/// summed absolute errors seen during the epoch (on the weights as they were
/// when each batch was seen).
inline EpochStats train_epoch(Network<float>& net, const Dataset& data, const EngineConfig& cfg, int epoch,
                              const BatchCallback& on_batch) {
  const Batcher batcher(data, cfg.batch, cfg.seed, epoch);
  const int K = net.classes();
  std::vector<float> x(static_cast<std::size_t>(cfg.batch) * data.shape.size());
  std::vector<int> y(static_cast<std::size_t>(cfg.batch));
  std::vector<float> probs(static_cast<std::size_t>(cfg.batch) * K), dlogits(probs.size());
  EpochStats stats;
  // TODO(Task 1.7): the training loop: for each batch gather, forward, loss, backward, SGD step on every parameter
  // HINT: batcher.gather(b, x, y) returns the batch size; loss_forward_backward() gives the loss and dlogits.
  // HINT: pass &stats.abs_error_sum as its last argument: with --loss mse it adds the batch's absolute errors (the MAE).
  throw course::NotImplemented("Task 1.7", "01_fc_softmax/train.hpp", "docs/lessons/01_fc_softmax.md");
  return stats;
}

/// Forward passes over `data` in order: summed loss, correct count, summed
/// absolute errors (with --loss mse), and the predicted class of every example
/// when `predictions` is given.
inline EpochStats evaluate(Network<float>& net, const Dataset& data, const EngineConfig& cfg,
                           std::vector<int>* predictions) {
  const Batcher batcher(data, cfg.batch, cfg.seed, 0, /*shuffle=*/false);
  const int K = net.classes();
  std::vector<float> x(static_cast<std::size_t>(cfg.batch) * data.shape.size());
  std::vector<int> y(static_cast<std::size_t>(cfg.batch));
  std::vector<float> probs(static_cast<std::size_t>(cfg.batch) * K), dlogits(probs.size());
  if (predictions) predictions->assign(static_cast<std::size_t>(data.size()), 0);
  EpochStats stats;
  // TODO(Task 1.7): evaluation: forward each batch, add up the loss, count and record the predictions
  // HINT: the same loop as training without backward and update; batches come in order here.
  throw course::NotImplemented("Task 1.7", "01_fc_softmax/train.hpp", "docs/lessons/01_fc_softmax.md");
  return stats;
}

}  // namespace course
