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

// The layer loops are given code: each layer's work timed as its --profile row and, going back, the
// engine told when a layer's gradients are queued (data parallelism starts summing them across GPUs then).
// The lesson is what one layer launches: forward_layer() and backward_layer().

const float* MlpStep::forward(const StepContext& ctx, const float* x, int B) {
  input_ = x;
  for (std::size_t i = 0; i < layers_.size(); ++i)
    ctx.time(i, Pass::Forward, [&] { forward_layer(ctx, i, i == 0 ? x : outputs_[i - 1].get(), B); });
  return outputs_.back().get();
}

void MlpStep::forward_layer(const StepContext& ctx, std::size_t i, const float* in, int B) {
  // TODO(Task 4.10): layer i's forward pass on ctx.stream, from `in` [B, l.in] to outputs_[i] [B, l.out]: dense_forward_gpu (with gemm_kernel_) or activation_forward_gpu
  // HINT: W starts at ctx.params + l.weight, b at ctx.params + l.bias; an activation passes l.slope.
  throw course::NotImplemented("Task 4.10", "04_cuda_matmul/mlp_step.cpp", "docs/lessons/04_cuda_matmul.md");
}

void MlpStep::loss(const StepContext& ctx, const float* logits, const int* labels, int B, int* predictions) {
  // TODO(Task 4.10): the loss of the batch with loss_gpu: the sums go to ctx.sums, dL/dlogits to output_grads_.back() when ctx.training (null otherwise)
  // HINT: ctx.sums->loss_sum.get(), ->correct.get() and ->abs_error_sum.get() are the device sums; pass `predictions` on as it is.
  throw course::NotImplemented("Task 4.10", "04_cuda_matmul/mlp_step.cpp", "docs/lessons/04_cuda_matmul.md");
}

void MlpStep::backward(const StepContext& ctx, int B) {
  for (std::size_t i = layers_.size(); i-- > 0;) {
    ctx.time(i, Pass::Backward, [&] { backward_layer(ctx, i, B); });
    ctx.gradients_queued(layers_[i].grads);
  }
}

void MlpStep::backward_layer(const StepContext& ctx, std::size_t i, int B) {
  // TODO(Task 4.10): layer i's backward pass on ctx.stream: dense_backward_gpu writes dW and db (ctx.grads + l.weight, + l.bias) and dx; activation_backward_gpu writes dx; layer 0 needs no dx
  // HINT: layer i reads its input (input_ for i = 0, else outputs_[i - 1]) and dy = output_grads_[i], and writes dx = output_grads_[i - 1] (null for i = 0).
  throw course::NotImplemented("Task 4.10", "04_cuda_matmul/mlp_step.cpp", "docs/lessons/04_cuda_matmul.md");
}

void MlpStep::update(const StepContext& ctx) {
  // TODO(Task 4.10): one SGD update of every parameter: ctx.params, ctx.grads and ctx.velocity are flat buffers of ctx.param_count values
  throw course::NotImplemented("Task 4.10", "04_cuda_matmul/mlp_step.cpp", "docs/lessons/04_cuda_matmul.md");
}

}  // namespace course
