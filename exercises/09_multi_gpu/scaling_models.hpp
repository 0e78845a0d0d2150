/// @file scaling_models.hpp
/// @brief Stage 09: `wide`, the model the lesson adds to measure scaling where compute dominates (glue, not a task).
///
/// Data parallelism pays when a step's compute is large beside its
/// all-reduce. A convolution's arithmetic grows with its image size times its
/// weights, its gradient only with its weights; a dense layer does one
/// multiply-add per weight and example. So the course's `cnn` (most of its
/// 162,710 parameters in fc1, 6.8 MFLOP of training per image) sends a lot for
/// little arithmetic, and the lesson defines `wide`: three wide 3x3
/// convolutions (64, 128, 128 filters) and a small head. Per image it trains
/// about 134 MFLOP (20 times `cnn`) for 370,954 parameters (2.3 times). The
/// trainer takes it as `--arch` (course::wide_model_spec()).
#pragma once

#include <string>

namespace course {

/// The spec of `wide`, for --arch: conv64, conv128, conv128 (3x3, padding 1), each ReLU and max-pool 2, then 128 ReLU, 10.
inline std::string wide_model_spec() {
  return "conv64k3p1,relu,pool2,conv128k3p1,relu,pool2,conv128k3p1,relu,pool2,flatten,fc128,relu,fc10";
}

}  // namespace course
