/// @file fused_kernels.cu
/// @brief Stage 08: the shapes of fused conv blocks and the phases of a step: one launcher for every kernel (glue, not a task).
#include <stdexcept>
#include <string>

#include "06_cudnn/step_graph.hpp"
#include "08_fused/fused_common.cuh"
#include "08_fused/fused_kernels.hpp"

namespace course {

FusedAct fused_act(Activation a) {
  switch (a) {
    case Activation::ReLU: return FusedAct::ReLU;
    case Activation::LeakyReLU: return FusedAct::LeakyReLU;
    case Activation::Sigmoid: return FusedAct::Sigmoid;
    case Activation::Tanh: return FusedAct::Tanh;
    case Activation::Softplus: return FusedAct::Softplus;
  }
  return FusedAct::None;
}

const char* fused_act_name(FusedAct a) {
  switch (a) {
    case FusedAct::ReLU: return "relu";
    case FusedAct::LeakyReLU: return "leaky";
    case FusedAct::Sigmoid: return "sigmoid";
    case FusedAct::Tanh: return "tanh";
    case FusedAct::Softplus: return "softplus";
    case FusedAct::None: break;
  }
  return "none";
}

ConvBlockShape make_conv_block_shape(int C, int H, int W, int F, int K, int P, int Q, FusedAct act) {
  ConvBlockShape s{};
  s.C = C;
  s.H = H;
  s.W = W;
  s.F = F;
  s.K = K;
  s.P = P;
  s.Q = Q;
  s.act = act;
  s.Ho = H + 2 * P - K + 1;
  s.Wo = W + 2 * P - K + 1;
  s.Hq = Q > 0 ? s.Ho / Q : 0;
  s.Wq = Q > 0 ? s.Wo / Q : 0;
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

int phase_blocks(const FusedPhase& p) {
  if (p.kind == PhaseKind::DenseChain) return p.dense_chain->blocks;
  if (p.kind == PhaseKind::DenseChainUpdate) return p.dense_chain_update->blocks;
  return fused_phase_blocks(p);
}

int phase_smem_bytes(const FusedPhase& p) {
  switch (p.kind) {
    case PhaseKind::ConvForward: return p.conv_forward.smem_bytes;
    case PhaseKind::ConvBackward: return p.conv_backward.smem_bytes;
    case PhaseKind::DenseForward: return p.dense_forward.smem_bytes;
    case PhaseKind::DenseBackward: return p.dense_backward.smem_bytes;
    case PhaseKind::Head: return p.head.smem_bytes;
    case PhaseKind::DenseChain: return p.dense_chain->smem_bytes;
    case PhaseKind::DenseChainUpdate: return p.dense_chain_update->smem_bytes;
    case PhaseKind::Gather:
    case PhaseKind::Sgd: break;
  }
  return 0;
}

void launch_phase(const FusedPhase& p, cudaStream_t stream, bool early) {
  switch (p.kind) {
    case PhaseKind::Gather: {
      const GatherArgs& g = p.gather;
      gather_batch_at_step_gpu(g.images, g.labels, g.order, g.step, g.batch, g.B, static_cast<long>(g.D), g.x, g.y,
                               stream);
      break;
    }
    case PhaseKind::ConvForward: conv_block_forward_gpu(p.conv_forward, stream, early); break;
    case PhaseKind::ConvBackward: conv_block_backward_gpu(p.conv_backward, stream, early); break;
    case PhaseKind::DenseForward: dense_forward_gpu(p.dense_forward, stream, early); break;
    case PhaseKind::DenseBackward: dense_backward_gpu(p.dense_backward, stream, early); break;
    case PhaseKind::Head: softmax_head_gpu(p.head, stream, early); break;
    case PhaseKind::Sgd: sgd_multi_tensor_gpu(p.sgd, stream, early); break;
    case PhaseKind::DenseChain: dense_chain_gpu(*p.dense_chain, stream, early); break;
    case PhaseKind::DenseChainUpdate: dense_chain_update_gpu(*p.dense_chain_update, stream, early); break;
  }
}

}  // namespace course
