/// @file init.hpp
/// @brief Stage 01: He initialisation.
///
/// A layer followed by a ReLU keeps the variance of its activations from layer
/// to layer when Var(W) = 2 / fan_in (He et al., 2015): half of the inputs are
/// zeroed by the ReLU, and the factor 2 makes up for them.
#pragma once

#include <algorithm>
#include <cmath>

#include "common/core/not_implemented.hpp"
#include "common/core/rng.hpp"

namespace course {

/// W[0..w_count) ~ N(0, 2 / fan_in), drawn from rng in order; b[0..b_count) = 0.
///
/// Every stage calls this with the same Rng, in the same layer order, so the
/// same seed gives bit-identical initial weights everywhere.
template <typename T>
void he_init(T* W, long w_count, T* b, long b_count, int fan_in, Rng& rng) {
  // BEGIN Task 1.5: He initialisation, W ~ N(0, 2 / fan_in) and b = 0
  // HINT: rng.fill_normal(W, w_count, stddev) draws the numbers in the order every stage uses.
  rng.fill_normal(W, static_cast<std::size_t>(w_count), std::sqrt(2.0 / fan_in));
  std::fill(b, b + b_count, T(0));
  // END Task 1.5
}

}  // namespace course
