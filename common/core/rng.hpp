/// @file rng.hpp
/// @brief A seeded random number generator that gives the same numbers everywhere.
///
/// The standard library's distributions are implementation-defined, so two
/// compilers may draw different weights from the same seed. This generator
/// (xoshiro256**, seeded through splitmix64) and its Box-Muller normal are
/// written out here, so every stage draws bit-identical initial weights.
#pragma once

#include <cstdint>
#include <vector>

namespace course {

/// Deterministic pseudo-random numbers: same seed, same sequence, every stage.
class Rng {
 public:
  /// A generator for `seed`; `stream` picks an independent sequence for the same
  /// seed (the trainers use one stream for weights, another for shuffling).
  explicit Rng(std::uint64_t seed, std::uint64_t stream = 0);

  std::uint64_t next_u64();          ///< 64 uniformly random bits
  double uniform();                  ///< uniform in [0, 1), 53 random bits
  double uniform(double lo, double hi);  ///< uniform in [lo, hi)
  std::uint64_t below(std::uint64_t n);  ///< uniform integer in [0, n), unbiased; n > 0
  double normal();                   ///< standard normal (Box-Muller)

  /// Fills `out[0..n)` with normal numbers of mean 0 and standard deviation `stddev`.
  void fill_normal(float* out, std::size_t n, double stddev);
  void fill_normal(double* out, std::size_t n, double stddev);

 private:
  std::uint64_t s_[4];
  bool have_spare_ = false;
  double spare_ = 0.0;
};

/// The order in which one epoch visits `n` examples: a Fisher-Yates shuffle
/// drawn from (seed, epoch), so every stage sees the same batches.
std::vector<int> epoch_order(int n, std::uint64_t seed, int epoch);

}  // namespace course
