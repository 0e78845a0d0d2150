/// @file shard.hpp
/// @brief Stage 03: how a minibatch is cut into one contiguous shard per thread.
///
/// B examples among T shards: the first B mod T shards hold floor(B / T) + 1
/// examples, the rest floor(B / T). Shard t starts where shard t - 1 ends, so
/// a shard is a contiguous block of rows of every [B, ...] tensor, and its
/// examples are the rows [begin, end). When B < T the last T - B shards are
/// empty; shard 0 is never empty when B >= 1.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>

namespace course {

/// The rows [begin, end) of a batch that one thread works on.
struct Shard {
  int begin = 0, end = 0;
  int size() const { return end - begin; }
};

/// Shard t of a batch of B examples cut into `shards` pieces (layout above).
inline Shard shard_of(int B, int shards, int t) {
  if (B < 0 || shards < 1 || t < 0 || t >= shards)
    throw std::invalid_argument("shard " + std::to_string(t) + " of " + std::to_string(shards) +
                                " shards of a batch of " + std::to_string(B) + " does not exist");
  const int q = B / shards, r = B % shards;
  const int begin = t * q + std::min(t, r);
  return {begin, begin + q + (t < r ? 1 : 0)};
}

}  // namespace course
