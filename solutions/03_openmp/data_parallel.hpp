/// @file data_parallel.hpp
/// @brief Stage 03: data-parallel minibatch SGD: a shard of the batch per thread, a reduction, one update.
///
/// With R replicas (one per thread) a batch of B examples is cut into R
/// contiguous shards (shard.hpp). Replica t runs forward, the loss and
/// backward on its n_t examples into its own gradient buffers; since stage
/// 01's loss divides by the size of the batch it is given, replica t holds
///
///     g_t = dL_t/dw,   L_t = (1 / n_t) sum_{n in shard t} loss_n
///
/// and the gradient of the whole batch's mean loss is the weighted sum
///
///     g = (1 / B) sum_n dloss_n/dw = sum_t (n_t / B) g_t.
///
/// One SGD step with g on the master; the other replicas copy the new
/// weights at the start of the next batch. The result equals stage 02's
/// single-thread step up to the order of the floating-point additions:
/// stage 02 adds the B examples' contributions one after another, here each
/// shard adds its own, then the shards are added. Float addition is not
/// associative, so the last bits differ with the thread count, and only with
/// it: the shards, and the order in which they are added, are fixed by R.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "01_fc_softmax/loss.hpp"
#include "01_fc_softmax/network.hpp"
#include "01_fc_softmax/sgd.hpp"
#include "01_fc_softmax/train.hpp"
#include "03_openmp/first_error.hpp"
#include "03_openmp/param_chunks.hpp"
#include "03_openmp/replica.hpp"
#include "03_openmp/shard.hpp"
#include "common/data/data.hpp"
#include "common/train/engine.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

/// Forward and backward of one batch, one shard per replica, all replicas at once.
///
/// x [B, input] and labels [B] hold the batch; R = replicas.size() threads.
/// Replica t takes shard_of(B, R, t): for t > 0 it first copies the master's
/// weights, then runs forward, the loss `loss` ("cross-entropy" or "mse") of
/// its shard, and backward, which leaves g_t (the gradient of its shard's mean
/// loss) in its own grad buffers. Empty shards (B < R) do nothing. Returns
/// each shard's size, loss sum, correct predictions and (with mse) summed
/// absolute errors, indexed by t.
template <typename T>
std::vector<ShardResult> forward_backward_shards(std::vector<std::unique_ptr<Replica<T>>>& replicas, const T* x,
                                                 const int* labels, int B, const std::string& loss) {
  const int R = static_cast<int>(replicas.size());
  const long in = replicas[0]->net.input_shape().size();
  const int K = replicas[0]->net.classes();
  std::vector<ShardResult> results(static_cast<std::size_t>(R));
  FirstError error;  // an exception may not leave a parallel region: keep it, rethrow after
  // BEGIN Task 3.1: in parallel, replica t runs forward, loss and backward on shard_of(B, R, t), after copying the master's weights
  // HINT: `#pragma omp parallel for num_threads(R) schedule(static, 1)` over t gives thread t the shard t; wrap the body in error.guard([&] { ... }).
  // HINT: each thread writes only its own replica and results[t]; copy_weights(replicas[0]->params, r.params) for t > 0.
  // HINT: results[t] holds the shard's size, loss sum, correct count and absolute errors (loss_forward_backward's last argument).
#pragma omp parallel for num_threads(R) schedule(static, 1)
  for (int t = 0; t < R; ++t) {
    error.guard([&] {
      const Shard s = shard_of(B, R, t);
      if (s.size() == 0) return;
      Replica<T>& r = *replicas[t];
      if (t > 0) copy_weights(replicas[0]->params, r.params);
      const T* logits = r.net.forward(x + s.begin * in, s.size());
      long correct = 0;
      for (int n = 0; n < s.size(); ++n) correct += argmax(logits + static_cast<long>(n) * K, K) == labels[s.begin + n];
      r.probs.resize(static_cast<std::size_t>(s.size()) * K);
      r.dlogits.resize(r.probs.size());
      double abs_error = 0;  // with mse: the shard's absolute errors, for the MAE
      const T mean = loss_forward_backward(loss, logits, labels + s.begin, r.probs.data(), r.dlogits.data(), s.size(),
                                           K, &abs_error);
      r.net.backward(r.dlogits.data(), s.size());
      // One write per shard into the shared vector, after the work: no false sharing worth the name.
      results[t] = {s.size(), static_cast<double>(mean) * s.size(), correct, abs_error};
    });
  }
  // END Task 3.1
  error.rethrow();
  return results;
}

/// The reduction and the one SGD step of a batch of B examples.
///
/// shards[t].size is n_t, the examples replica t saw, and replica t's grad
/// buffers hold g_t. Writes g = sum_t (n_t / B) g_t into the master's
/// (replica 0's) grad buffers, adding the non-empty shards in the order
/// t = 0, 1, ..., R - 1, then takes the SGD step with momentum on the master:
/// v = momentum v + g, w -= lr v. Parallel over chunks of the parameters
/// (param_chunks): each chunk is summed and updated by one thread, so no two
/// threads write the same values and the result does not depend on which
/// thread took which chunk.
template <typename T>
void reduce_and_update(std::vector<std::unique_ptr<Replica<T>>>& replicas, const std::vector<ShardResult>& shards,
                       int B, T lr, T momentum) {
  const int R = static_cast<int>(replicas.size());
  if (shards.size() != replicas.size() || B < 1)
    throw std::invalid_argument("reduce_and_update: " + std::to_string(shards.size()) + " shard results for " +
                                std::to_string(R) + " replicas and a batch of " + std::to_string(B));
  const std::vector<ParamChunk> chunks = param_chunks(replicas[0]->params);
  FirstError error;
  // BEGIN Task 3.2: the reduction g = sum_t (n_t / B) g_t into the master's grads, in the order t = 0..R-1, then one SGD step, in parallel over chunks
  // HINT: `#pragma omp parallel for num_threads(R) schedule(static)` over the chunks; in a chunk, g = (n_0/B) g_0 first (shard 0 is never empty), then add each non-empty shard's term.
  // HINT: then sgd_update(value + begin, grad + begin, velocity + begin, end - begin, lr, momentum) on the chunk.
#pragma omp parallel for num_threads(R) schedule(static)
  for (long c = 0; c < static_cast<long>(chunks.size()); ++c) {
    error.guard([&] {
      const ParamChunk& k = chunks[c];
      Param<T>& master = *replicas[0]->params[k.param];
      T* g = master.grad.ptr();
      const T w0 = T(shards[0].size) / T(B);
      for (long i = k.begin; i < k.end; ++i) g[i] *= w0;
      for (int t = 1; t < R; ++t) {
        if (shards[t].size == 0) continue;  // its buffers hold an older batch
        const T wt = T(shards[t].size) / T(B);
        const T* gt = replicas[t]->params[k.param]->grad.ptr();
        for (long i = k.begin; i < k.end; ++i) g[i] += wt * gt[i];
      }
      sgd_update(master.value.ptr() + k.begin, g + k.begin, master.velocity.ptr() + k.begin, k.end - k.begin, lr,
                 momentum);
    });
  }
  // END Task 3.2
  error.rethrow();
}

/// One epoch of data-parallel SGD: the batches of stage 01's train_epoch
/// (same order, same sizes), each one through forward_backward_shards and
/// reduce_and_update. Returns the loss and correct predictions seen.
inline EpochStats train_epoch_data_parallel(std::vector<std::unique_ptr<Replica<float>>>& replicas,
                                            const Dataset& data, const EngineConfig& cfg, int epoch,
                                            const BatchCallback& on_batch) {
  const Batcher batcher(data, cfg.batch, cfg.seed, epoch);
  std::vector<float> x(static_cast<std::size_t>(cfg.batch) * data.shape.size());
  std::vector<int> y(static_cast<std::size_t>(cfg.batch));
  EpochStats stats;
  for (int b = 0; b < batcher.num_batches(); ++b) {
    const int B = batcher.gather(b, x.data(), y.data());
    const std::vector<ShardResult> shards = forward_backward_shards(replicas, x.data(), y.data(), B, cfg.loss);
    reduce_and_update(replicas, shards, B, static_cast<float>(cfg.lr), static_cast<float>(cfg.momentum));
    for (const ShardResult& s : shards) {
      stats.loss_sum += s.loss_sum;
      stats.correct += s.correct;
      stats.abs_error_sum += s.abs_error_sum;
    }
    stats.seen += B;
    if (on_batch) on_batch(stats.seen, stats.loss_sum);
  }
  return stats;
}

}  // namespace course
