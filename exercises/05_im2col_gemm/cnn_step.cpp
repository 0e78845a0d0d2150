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

// The layer loops are given code: each layer's work timed as its --profile row and, going back, the
// engine told when a layer's gradients are queued (data parallelism starts summing them across GPUs then).
// Flatten is a view: its output is its input, with no launch and no copy. The lesson is what one
// layer launches: forward_layer() and backward_layer().

const float* CnnStep::forward(const StepContext& ctx, const float* x, int B) {
  input_ = x;
  const ConvContext conv = conv_context(ctx.stream);
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const float* in = i == 0 ? x : outputs_[i - 1];
    if (layers_[i].kind == LayerKind::Flatten) {
      outputs_[i] = in;
      continue;
    }
    ctx.time(i, Pass::Forward, [&] { forward_layer(ctx, conv, i, in, B); });
    outputs_[i] = layers_[i].output.get();
  }
  return outputs_.back();
}

void CnnStep::forward_layer(const StepContext& ctx, const ConvContext& conv, std::size_t i, const float* in, int B) {
  // TODO(Task 5.9): layer i's forward pass on ctx.stream, from `in` to l.output: conv_forward_gpu, maxpool_forward_gpu (avgpool_forward_gpu, given, for average pools), stage 04's dense and activation kernels
  // HINT: W and b start at ctx.params + l.weight and + l.bias; a max-pool also writes l.argmax for its backward pass.
  // HINT: an activation passes its layer's leaky ReLU slope, l.slope (forward and backward alike).
  throw course::NotImplemented("Task 5.9", "05_im2col_gemm/cnn_step.cpp", "docs/lessons/05_im2col_gemm.md");
}

void CnnStep::loss(const StepContext& ctx, const float* logits, const int* labels, int B, int* predictions) {
  // TODO(Task 5.9): the loss of the batch with stage 04's loss_gpu into ctx.sums; dL/dlogits to output_grads_.back() when ctx.training (null otherwise)
  throw course::NotImplemented("Task 5.9", "05_im2col_gemm/cnn_step.cpp", "docs/lessons/05_im2col_gemm.md");
}

void CnnStep::backward(const StepContext& ctx, int B) {
  const ConvContext conv = conv_context(ctx.stream);
  for (std::size_t i = layers_.size(); i-- > 0;) {
    if (layers_[i].kind == LayerKind::Flatten) continue;  // output_grads_[i] already is output_grads_[i - 1]
    ctx.time(i, Pass::Backward, [&] { backward_layer(ctx, conv, i, B); });
    ctx.gradients_queued(layers_[i].grads);
  }
}

void CnnStep::backward_layer(const StepContext& ctx, const ConvContext& conv, std::size_t i, int B) {
  // TODO(Task 5.9): layer i's backward pass on ctx.stream: it reads dL/d(its output) from output_grads_[i] and writes its parameter gradients and dL/d(its input) into output_grads_[i - 1] (skipped when that is null: layer 0 needs none)
  // HINT: conv: conv_backward_weight_gpu, conv_backward_bias_gpu, and conv_backward_input_gpu when dx is not null; dense: dense_backward_gpu (it skips a null dx itself). dW and db start at ctx.grads + l.weight and + l.bias.
  throw course::NotImplemented("Task 5.9", "05_im2col_gemm/cnn_step.cpp", "docs/lessons/05_im2col_gemm.md");
}

void CnnStep::update(const StepContext& ctx) {
  // TODO(Task 5.9): one SGD update of every parameter with stage 04's sgd_update_gpu on the flat buffers (ctx.param_count values)
  throw course::NotImplemented("Task 5.9", "05_im2col_gemm/cnn_step.cpp", "docs/lessons/05_im2col_gemm.md");
}

}  // namespace course
