/// @file parallel_evaluate.hpp
/// @brief Stage 03: evaluating a data set with every thread at once.
///
/// Evaluation has no update between batches, so the batches themselves are
/// independent: each thread takes whole batches and runs them through its own
/// replica. Each batch's loss is kept in its own slot and the slots are added
/// in batch order at the end, so the result is bit for bit what stage 01's
/// evaluate() gives on one thread, whatever the number of threads and
/// whichever thread took which batch.
#pragma once

#include <memory>
#include <vector>

#include <omp.h>

#include "01_fc_softmax/loss.hpp"
#include "01_fc_softmax/train.hpp"
#include "03_openmp/first_error.hpp"
#include "03_openmp/param_chunks.hpp"
#include "03_openmp/replica.hpp"
#include "common/data/data.hpp"
#include "common/train/engine.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

/// Forward passes over `data` in batches of cfg.batch (unshuffled), shared
/// among replicas.size() threads: the summed loss, the correct count, the
/// summed absolute errors (with --loss mse), and
/// the predicted class of every example when `predictions` is given. The
/// copies (replicas 1, 2, ...) first take the master's weights.
inline EpochStats evaluate_parallel(std::vector<std::unique_ptr<Replica<float>>>& replicas, const Dataset& data,
                                    const EngineConfig& cfg, std::vector<int>* predictions) {
  const Batcher batcher(data, cfg.batch, cfg.seed, 0, /*shuffle=*/false);
  const int R = static_cast<int>(replicas.size());
  const int K = replicas[0]->net.classes();
  const int batches = batcher.num_batches();
  const std::vector<int>& order = batcher.order();
  std::vector<int> predicted(static_cast<std::size_t>(data.size()), 0);
  std::vector<double> batch_loss(static_cast<std::size_t>(batches), 0.0);  // loss sum of batch b, added in order below
  std::vector<double> batch_abs_error(static_cast<std::size_t>(batches), 0.0);  // its absolute errors (mse), likewise
  FirstError error;
  // TODO(Task 3.4): parallel evaluation: the copies take the master's weights, then thread t runs whole batches through replica omp_get_thread_num(), filling predicted and batch_loss[b]
  // HINT: two parallel loops: one over t = 1..R-1 to copy the weights, one over the batches with schedule(dynamic); gather into the replica's own x and labels.
  // HINT: batch b holds the examples order[b * cfg.batch + n]; loss_forward_backward needs the replica's probs and dlogits, sized for a batch.
  // HINT: its last argument, &batch_abs_error[b], collects the batch's absolute errors (the MAE of --loss mse).
  throw course::NotImplemented("Task 3.4", "03_openmp/parallel_evaluate.hpp", "docs/lessons/03_openmp.md");
  error.rethrow();
  EpochStats stats;
  for (double l : batch_loss) stats.loss_sum += l;
  for (double a : batch_abs_error) stats.abs_error_sum += a;
  for (int i = 0; i < data.size(); ++i) stats.correct += predicted[i] == data.labels[i];
  stats.seen = data.size();
  if (predictions) *predictions = std::move(predicted);
  return stats;
}

}  // namespace course
