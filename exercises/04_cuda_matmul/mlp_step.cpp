/// @file mlp_step.cpp
/// @brief Stage 04 (Task 4.10): the MLP's training step on the GPU: forward over the layers, loss, backward, update.
///
/// Stage 01's training step (train.hpp), with every layer a kernel of this stage on the
/// batch at once. Every launch goes on ctx.stream and nothing waits for the GPU: the
/// engine queues step after step, and may record one as a CUDA graph.
#include "04_cuda_matmul/mlp_kernels.hpp"
#include "04_cuda_matmul/mlp_step.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

const float* MlpStep::forward(const StepContext& ctx, const float* x, int B) {
  input_ = x;
  // TODO(Task 4.10): the forward pass of x [B, D]: every layer in order, dense_forward_gpu (with gemm_kernel_) or activation_forward_gpu, on ctx.stream
  // HINT: layer i reads x (i = 0) or outputs_[i - 1] and writes outputs_[i]; its W starts at ctx.params + l.weight, its b at ctx.params + l.bias.
  // HINT: wrap each layer's work in ctx.time(i, Pass::Forward, [&] { ... }) so that --profile can time it; an activation passes l.slope.
  throw course::NotImplemented("Task 4.10", "04_cuda_matmul/mlp_step.cpp", "docs/lessons/04_cuda_matmul.md");
  return outputs_.back().get();
}

void MlpStep::loss(const StepContext& ctx, const float* logits, const int* labels, int B, int* predictions) {
  // TODO(Task 4.10): the loss of the batch with loss_gpu: the sums go to ctx.sums, dL/dlogits to output_grads_.back() when ctx.training (null otherwise)
  // HINT: ctx.sums->loss_sum.get(), ->correct.get() and ->abs_error_sum.get() are the device sums; pass `predictions` on as it is.
  throw course::NotImplemented("Task 4.10", "04_cuda_matmul/mlp_step.cpp", "docs/lessons/04_cuda_matmul.md");
}

void MlpStep::backward(const StepContext& ctx, int B) {
  // TODO(Task 4.10): the backward pass, last layer first: dense_backward_gpu writes dW and db (ctx.grads + l.weight, + l.bias) and dx; activation_backward_gpu writes dx; layer 0 needs no dx
  // HINT: layer i reads dy = output_grads_[i] and writes dx = output_grads_[i - 1] (null for i = 0); wrap its work in ctx.time(i, Pass::Backward, ...).
  // HINT: after each layer, ctx.gradients_queued(l.grads) tells the engine its gradients are queued (empty for activations).
  throw course::NotImplemented("Task 4.10", "04_cuda_matmul/mlp_step.cpp", "docs/lessons/04_cuda_matmul.md");
}

void MlpStep::update(const StepContext& ctx) {
  // TODO(Task 4.10): one SGD update of every parameter: ctx.params, ctx.grads and ctx.velocity are flat buffers of ctx.param_count values
  throw course::NotImplemented("Task 4.10", "04_cuda_matmul/mlp_step.cpp", "docs/lessons/04_cuda_matmul.md");
}

}  // namespace course
