/// @file batcher.cpp
/// @brief Batcher: the minibatches of one epoch, in the same order in every stage.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>

#include "common/data/data.hpp"
#include "common/core/rng.hpp"

namespace course {

Batcher::Batcher(const Dataset& data, int batch_size, std::uint64_t seed, int epoch, bool shuffle)
    : data_(data), batch_(batch_size) {
  if (batch_size < 1)
    throw std::invalid_argument("batch size must be at least 1, got " + std::to_string(batch_size));
  if (shuffle) {
    // The shared shuffle: stage 01 and stage 06 with the same seed see the same batches.
    order_ = epoch_order(data.size(), seed, epoch);
  } else {
    order_.resize(static_cast<std::size_t>(data.size()));
    std::iota(order_.begin(), order_.end(), 0);
  }
}

int Batcher::num_batches() const { return (static_cast<int>(order_.size()) + batch_ - 1) / batch_; }

int Batcher::gather(int b, float* x, int* y) const {
  if (b < 0 || b >= num_batches())
    throw std::out_of_range("batch " + std::to_string(b) + " of " + std::to_string(num_batches()));
  const int n = static_cast<int>(order_.size());
  const int first = b * batch_;
  const int count = std::min(batch_, n - first);
  const long per = data_.shape.size();
  for (int i = 0; i < count; ++i) {
    const int idx = order_[static_cast<std::size_t>(first + i)];
    std::memcpy(x + static_cast<long>(i) * per, data_.image(idx),
                static_cast<std::size_t>(per) * sizeof(float));
    y[i] = data_.labels[static_cast<std::size_t>(idx)];
  }
  return count;
}

}  // namespace course
