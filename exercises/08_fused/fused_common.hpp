/// @file fused_common.hpp
/// @brief Stage 08: what every fused kernel shares on the host: its threads, its shared-memory budget, the activation of its epilogue, the loss, and how its traffic is counted.
#pragma once

#include <string>

#include "common/model/arch.hpp"

namespace course {

/// Threads per block of every stage 08 kernel.
constexpr int kFusedThreads = 256;
/// The most shared memory a planner gives one block, in bytes: under the 48 KiB a
/// kernel may use without opting in, with room for the persistent kernel's own.
constexpr int kFusedSharedBudget = 46 * 1024;

/// The activation a fused kernel applies in its epilogue (None: the identity).
enum class FusedAct : int { None = 0, ReLU, LeakyReLU, Sigmoid, Tanh, Softplus };
/// The FusedAct of a spec's activation.
FusedAct fused_act(Activation a);
/// "relu", ..., "none".
const char* fused_act_name(FusedAct a);

/// The loss of the softmax head.
enum class FusedLoss : int { CrossEntropy = 0, Mse };

/// Bytes a kernel reads and writes, each tensor counted once per kernel: the
/// traffic the kernel cannot avoid. A tile that several blocks read again is
/// served by the L2 cache and not counted.
struct KernelTraffic {
  std::string kernel;  ///< "conv block forward", ...
  std::string layers;  ///< the fused layer's name
  int launches = 1;
  long long bytes_read = 0, bytes_written = 0;
};

/// The bytes of n floats (or of n ints: both are 4 bytes).
constexpr long long float_bytes(long long n) { return 4 * n; }

}  // namespace course
