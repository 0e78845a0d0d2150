/// @file fused_common.cpp
/// @brief Stage 08: the activations of the fused kernels' epilogues, by name (glue, not a task).
#include "08_fused/fused_common.hpp"

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

}  // namespace course
