/// @file conv_block_shape.cpp
/// @brief Stage 08: the shape of a fused conv block, checked and described (glue, not a task).
#include "08_fused/conv_block_shape.hpp"

#include <stdexcept>
#include <string>

namespace course {

ConvBlockShape make_conv_block_shape(int C, int H, int W, int F, int K, int P, int Q, FusedAct act) {
  const int Ho = H + 2 * P - K + 1, Wo = W + 2 * P - K + 1;
  const ConvBlockShape s{.C = C, .H = H, .W = W, .F = F, .K = K, .P = P, .Q = Q, .act = act, .Ho = Ho, .Wo = Wo,
                         .Hq = Q > 0 ? Ho / Q : 0, .Wq = Q > 0 ? Wo / Q : 0};
  if (C < 1 || H < 1 || W < 1 || F < 1 || P < 0)
    throw std::invalid_argument(describe(s) + ": every size must be at least 1 and the padding at least 0");
  if (K != 1 && K != 3 && K != 5)
    throw std::invalid_argument(describe(s) + ": stage 08's fused conv kernels are built for 1x1, 3x3 and 5x5 kernels");
  if (Q != 1 && Q != 2)
    throw std::invalid_argument(describe(s) + ": stage 08's fused conv kernels pool 2x2 windows with stride 2, or not at all");
  if (s.Ho < 1 || s.Wo < 1 || s.Hq < 1 || s.Wq < 1)
    throw std::invalid_argument(describe(s) + ": the output would be " + std::to_string(s.Hq) + "x" +
                                std::to_string(s.Wq) + ", empty");
  return s;
}

std::string describe(const ConvBlockShape& s) {
  std::string text = "conv " + std::to_string(s.C) + " -> " + std::to_string(s.F) + ", " + std::to_string(s.K) + "x" +
                     std::to_string(s.K) + ", pad " + std::to_string(s.P);
  if (s.act != FusedAct::None) text += " + " + std::string(fused_act_name(s.act));
  if (s.Q > 1) text += " + max-pool " + std::to_string(s.Q);
  return text + " on " + std::to_string(s.C) + "x" + std::to_string(s.H) + "x" + std::to_string(s.W);
}

}  // namespace course
