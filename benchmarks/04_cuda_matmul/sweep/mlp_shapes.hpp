// The GEMMs of one training step of the 784-256-128-10 MLP, for stage 04's matmul sweep (--mlp)
// and those of the later stages that reuse it.
#pragma once

#include <string>
#include <vector>

namespace course::bench {

/// The GEMMs of one training step of the MLP at batch B, as stage 04's engine runs them
/// (mlp_step.cpp, dense_gpu.cu), C[M, N] = op(A)[M, K] op(B)[K, N]: per layer the
/// forward Y = X W^T, the weight gradient dW = dY^T X and, past the first layer (whose
/// input needs no gradient), the input gradient dX = dY W. `Shape` is the sweep's own
/// shape type, an aggregate that begins {label, M, N, K, trans_a, trans_b}.
template <typename Shape>
std::vector<Shape> mlp_shapes(int B) {
  const int sizes[] = {784, 256, 128, 10};
  std::vector<Shape> out;
  for (int l = 0; l < 3; ++l) {
    const int in = sizes[l], o = sizes[l + 1];
    const std::string name = "fc" + std::to_string(l + 1) + " B=" + std::to_string(B) + " ";
    out.push_back({name + "Y=XW^T", B, o, in, false, true});
    out.push_back({name + "dW=dY^T X", o, in, B, true, false});
    if (l > 0) out.push_back({name + "dX=dY W", B, in, o, false, false});
  }
  return out;
}

}  // namespace course::bench
