/// @file epoch_order_ahead.cpp
/// @brief course::EpochOrderAhead (see the header).
#include "common/data/epoch_order_ahead.hpp"

#include <system_error>

#include "common/core/rng.hpp"

namespace course {

std::vector<int> EpochOrderAhead::order(int n, std::uint64_t seed, int epoch) {
  const bool ready = ahead_.valid() && ahead_of_.n == n && ahead_of_.seed == seed && ahead_of_.epoch == epoch;
  std::vector<int> result = ready ? ahead_.get() : epoch_order(n, seed, epoch);
  if (ready) ++handed_over_;
  // Replacing an unused future waits for its thread: a few tenths of a millisecond at most.
  ahead_of_ = {n, seed, epoch + 1};
  try {
    ahead_ = std::async(std::launch::async, epoch_order, n, seed, epoch + 1);
  } catch (const std::system_error&) {
    ahead_ = {};  // no thread to be had: the next epoch shuffles its own order
  }
  return result;
}

}  // namespace course
