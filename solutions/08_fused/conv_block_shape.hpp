/// @file conv_block_shape.hpp
/// @brief Stage 08: the shape of a fused conv block, which its forward and backward kernels share (glue, not a task).
#pragma once

#include <string>

#include "08_fused/fused_common.hpp"

namespace course {

/// Output positions a conv block tile gives its threads (kFusedThreads / kConvSlots
/// thread groups of 4 filters or channels each).
constexpr int kConvSlots = 64;
/// Filters (forward) or input channels (input gradient) one conv block takes: 4 per thread group.
constexpr int kConvGroup = kFusedThreads / kConvSlots * 4;

/// A fused conv block: conv (F filters of K x K, padding P, stride 1) + bias +
/// activation + max-pool with a Q x Q window and stride Q, no padding (Q = 1: no
/// pool). Make one with make_conv_block_shape(), which fills the derived sizes.
///
///     x [B, C, H, W]  ->  z [B, F, Ho, Wo] = conv(x) + b  ->  a = act(z)  ->  y [B, F, Hq, Wq] = maxpool(a)
///     Ho = H + 2P - K + 1, Wo = W + 2P - K + 1, Hq = floor(Ho / Q), Wq = floor(Wo / Q)
///
/// Only y and the window offset of each maximum, argmax [B, F, Hq, Wq] (dh * Q + dw,
/// one byte), are written: z and a never reach memory.
struct ConvBlockShape {
  int C, H, W;   ///< input example [C, H, W]
  int F, K, P;   ///< filters, kernel size, padding
  int Q;         ///< pool window and stride (1: no pool)
  FusedAct act;  ///< activation between the conv and the pool
  int Ho, Wo;    ///< conv output
  int Hq, Wq;    ///< block output, after the pool
};

/// The shape of a fused conv block, checked: K in {1, 3, 5} and Q in {1, 2}
/// (the instantiated kernels), every size at least 1, an output of at least
/// 1 x 1 after the pool. Throws std::invalid_argument naming what does not fit.
ConvBlockShape make_conv_block_shape(int C, int H, int W, int F, int K, int P, int Q, FusedAct act);
/// "conv 16 -> 32, 3x3, pad 1 + relu + max-pool 2 on 16x14x14"
std::string describe(const ConvBlockShape& s);

}  // namespace course
