/// @file sliced_layer.hpp
/// @brief Stage 03: loop-level parallelism: each layer splits its loop over the batch among the threads.
///
/// The alternative to data parallelism. The network stays one network, with
/// one set of activation buffers [B, ...]; what runs in parallel is the loop
/// over the B examples inside every layer: forward and backward of a layer
/// each open a parallel region, cut the batch into slices (shard.hpp), and
/// join again before the next layer starts.
///
/// The layer math is stages 01 and 02's, unchanged: slice t of the batch goes
/// through copy t of the layer, made by the same factory. Copies, because
/// backward *overwrites* a layer's weight gradient with the sum over the
/// examples it is given: T threads writing one dW would race. Each copy keeps
/// its own dW, the gradient of its slice (a per-thread partial sum), and the
/// partials are added into copy 0 afterwards. The loss divides by the whole
/// batch before backward starts, so the partials are simply added: no weights.
/// Copy 0 is the layer the network and the optimiser see (its params()); the
/// others copy its weights at every forward().
#pragma once

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "01_fc_softmax/network.hpp"
#include "03_openmp/first_error.hpp"
#include "03_openmp/param_chunks.hpp"
#include "03_openmp/shard.hpp"
#include "common/model/arch.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

/// A layer that runs `copies.size()` copies of one layer on slices of the batch in parallel.
template <typename T>
class SlicedLayer : public Layer<T> {
 public:
  /// `copies` are layers made by one factory call each, for input shape `in`; copies[0] is the master.
  SlicedLayer(std::vector<std::unique_ptr<Layer<T>>> copies, Shape3 in) : copies_(std::move(copies)), in_(in) {
    if (copies_.empty()) throw std::invalid_argument("a sliced layer needs at least one copy of the layer");
    for (auto& c : copies_) params_.push_back(c->params());
  }
  std::string name() const override { return copies_[0]->name(); }
  std::string token() const override { return copies_[0]->token(); }
  Shape3 out_shape() const override { return copies_[0]->out_shape(); }
  std::vector<Param<T>*> params() override { return params_[0]; }
  int fan_in() const override { return copies_[0]->fan_in(); }
  /// How many slices (and threads) the batch is cut into.
  int slices() const { return static_cast<int>(copies_.size()); }

  /// x [B, in] -> y [B, out]: copy t computes the rows of slice t.
  void forward(const T* x, T* y, int B) override {
    const int R = slices();
    const long in = in_.size(), out = out_shape().size();
    FirstError error;
    // BEGIN Task 3.3: loop-level forward: in parallel, copy t takes the master's weights and runs slice shard_of(B, R, t) of the batch
    // HINT: the same parallel loop over t as Task 3.1; copy t reads rows [begin, end) of x and writes the same rows of y.
#pragma omp parallel for num_threads(R) schedule(static, 1)
    for (int t = 0; t < R; ++t) {
      error.guard([&] {
        const Shard s = shard_of(B, R, t);
        if (s.size() == 0) return;
        if (t > 0) copy_weights(params_[0], params_[t]);
        copies_[t]->forward(x + s.begin * in, y + s.begin * out, s.size());
      });
    }
    // END Task 3.3
    error.rethrow();
  }

  /// dy [B, out] -> dx [B, in] (when not null) and the parameter gradients, summed over the batch.
  void backward(const T* x, const T* y, const T* dy, T* dx, int B) override {
    const int R = slices();
    const long in = in_.size(), out = out_shape().size();
    FirstError error;
    // BEGIN Task 3.3: loop-level backward: copy t runs backward on its slice in parallel, then the copies' weight gradients are added into copy 0's
    // HINT: x, y and dy are read at row begin of the slice, dx written there (it may be null); each copy's grads are then the sum over its slice.
    // HINT: then one parallel loop over param_chunks(params_[0]): g_0 += g_t for t = 1..R-1 in order, skipping empty slices.
#pragma omp parallel for num_threads(R) schedule(static, 1)
    for (int t = 0; t < R; ++t) {
      error.guard([&] {
        const Shard s = shard_of(B, R, t);
        if (s.size() == 0) return;
        copies_[t]->backward(x + s.begin * in, y + s.begin * out, dy + s.begin * out, dx ? dx + s.begin * in : nullptr,
                             s.size());
      });
    }
    error.rethrow();
    const std::vector<ParamChunk> chunks = param_chunks(params_[0]);
#pragma omp parallel for num_threads(R) schedule(static)
    for (long c = 0; c < static_cast<long>(chunks.size()); ++c) {
      const ParamChunk& k = chunks[c];
      T* g = params_[0][k.param]->grad.ptr();
      for (int t = 1; t < std::min(B, R); ++t) {  // slices t >= B are empty when B < R
        const T* gt = params_[t][k.param]->grad.ptr();
        for (long i = k.begin; i < k.end; ++i) g[i] += gt[i];
      }
    }
    // END Task 3.3
  }

 private:
  std::vector<std::unique_ptr<Layer<T>>> copies_;
  std::vector<std::vector<Param<T>*>> params_;  ///< params_[t] = copies_[t]->params()
  Shape3 in_;
};

/// A factory that builds every layer `make` builds as a SlicedLayer of `threads` copies.
template <typename T>
LayerFactory<T> sliced_layers(LayerFactory<T> make, int threads) {
  if (threads < 1) throw std::invalid_argument("loop-level parallelism needs at least 1 thread, not " + std::to_string(threads));
  return [make, threads](const LayerSpec& spec, Shape3 in, int index) -> std::unique_ptr<Layer<T>> {
    std::vector<std::unique_ptr<Layer<T>>> copies;
    for (int t = 0; t < threads; ++t) copies.push_back(make(spec, in, index));
    return std::make_unique<SlicedLayer<T>>(std::move(copies), in);
  };
}

}  // namespace course
