// The H100's ceilings, measured: the rates no kernel of this stage can beat (the lesson's roofline).
#pragma once

#include <string>
#include <vector>

namespace roofline {

struct Ceiling {
  std::string what;   // "FP32 FMA (CUDA cores)"
  double rate = 0;    // TFLOP/s, or TB/s for memory
  std::string unit;   // "TFLOP/s" or "TB/s"
  std::string how;    // how it was measured
};

/// FP32 FMAs, mma.sync BF16 and TF32 on registers only, and a device-to-device copy:
/// each timed with CUDA events (median of 5 after a warm-up) on the current GPU.
std::vector<Ceiling> measure();

}  // namespace roofline
