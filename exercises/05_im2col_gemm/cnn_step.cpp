/// @file cnn_step.cpp
/// @brief Stage 05 (Task 5.9): the CNN's training step on the GPU: forward over the layers, loss, backward, update.
///
/// Stage 02's network, every layer a kernel of this stage or of stage 04, on the whole
/// batch at once. Every launch goes on ctx.stream and nothing waits for the GPU: the
/// engine queues step after step, and may record one as a CUDA graph.
#include "04_cuda_matmul/mlp_kernels.hpp"
#include "05_im2col_gemm/cnn_step.hpp"
#include "05_im2col_gemm/pool_gpu.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

const float* CnnStep::forward(const StepContext& ctx, const float* x, int B) {
  input_ = x;
  const ConvContext conv = conv_context(ctx.stream);
  // TODO(Task 5.9): the forward pass through every layer on ctx.stream: conv_forward_gpu, maxpool_forward_gpu (avgpool_forward_gpu, given, for average pools), stage 04's dense and activation kernels; Flatten is a view (its output is its input: no launch, no copy)
  // HINT: layer i reads outputs_[i - 1] (x for i = 0) and writes layers_[i].output, whose pointer it stores in outputs_[i]; a Flatten layer stores its input pointer there instead.
  // HINT: wrap each layer's work in ctx.time(i, Pass::Forward, [&] { ... }) so that --profile can time it; W and b start at ctx.params + l.weight and + l.bias.
  // HINT: an activation passes its layer's leaky ReLU slope, l.slope (forward and backward alike).
  throw course::NotImplemented("Task 5.9", "05_im2col_gemm/cnn_step.cpp", "docs/lessons/05_im2col_gemm.md");
  return outputs_.back();
}

void CnnStep::loss(const StepContext& ctx, const float* logits, const int* labels, int B, int* predictions) {
  // TODO(Task 5.9): the loss of the batch with stage 04's loss_gpu into ctx.sums; dL/dlogits to output_grads_.back() when ctx.training (null otherwise)
  throw course::NotImplemented("Task 5.9", "05_im2col_gemm/cnn_step.cpp", "docs/lessons/05_im2col_gemm.md");
}

void CnnStep::backward(const StepContext& ctx, int B) {
  const ConvContext conv = conv_context(ctx.stream);
  // TODO(Task 5.9): the backward pass, last layer first: each layer reads dL/d(its output) from output_grads_[i] and writes its parameter gradients and dL/d(its input) into output_grads_[i - 1] (skipped when that is null: layer 0 needs none); Flatten does nothing
  // HINT: conv: conv_backward_weight_gpu, conv_backward_bias_gpu, and conv_backward_input_gpu when dx is not null; dense: dense_backward_gpu (it skips a null dx itself). dW and db start at ctx.grads + l.weight and + l.bias.
  // HINT: after each layer with parameters, ctx.gradients_queued(l.grads) tells the engine its gradients are queued.
  throw course::NotImplemented("Task 5.9", "05_im2col_gemm/cnn_step.cpp", "docs/lessons/05_im2col_gemm.md");
}

void CnnStep::update(const StepContext& ctx) {
  // TODO(Task 5.9): one SGD update of every parameter with stage 04's sgd_update_gpu on the flat buffers (ctx.param_count values)
  throw course::NotImplemented("Task 5.9", "05_im2col_gemm/cnn_step.cpp", "docs/lessons/05_im2col_gemm.md");
}

}  // namespace course
