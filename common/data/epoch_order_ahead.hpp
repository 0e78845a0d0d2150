/// @file epoch_order_ahead.hpp
/// @brief course::epoch_order, shuffled one epoch ahead on another thread (the GPU engines).
///
/// A GPU engine needs an epoch's order before the epoch's first step, and the
/// last epoch ended with the host waiting for the GPU, so the GPU idles while the
/// host shuffles: 60,000 indices take about 0.3 ms, a few steps of a fused
/// stage. Instead, as each epoch begins, the next epoch's order is shuffled on a
/// thread of its own while this epoch's steps run, and handed over when the next
/// epoch asks for it. An epoch that asks for another order than the one shuffled
/// (a resumed epoch's shorter set, another seed) gets it computed on the spot.
#pragma once

#include <cstdint>
#include <future>
#include <vector>

namespace course {

class EpochOrderAhead {
 public:
  /// course::epoch_order(n, seed, epoch), the same values; then starts shuffling
  /// epoch + 1's order (same n and seed) for the next call.
  std::vector<int> order(int n, std::uint64_t seed, int epoch);
  /// How many calls got their order from the thread (for the tests).
  long handed_over() const { return handed_over_; }

 private:
  struct Key {
    int n = -1;
    std::uint64_t seed = 0;
    int epoch = -1;
  };
  Key ahead_of_;                       ///< what `ahead_` is computing
  std::future<std::vector<int>> ahead_;  ///< empty when nothing is shuffled ahead
  long handed_over_ = 0;
};

}  // namespace course
