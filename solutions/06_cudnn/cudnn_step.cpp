/// @file cudnn_step.cpp
/// @brief Stage 06: the training step on cuDNN and cuBLAS: forward over the layers, loss, backward, update (glue, not a task).
///
/// Every call of Tasks 6.4 to 6.9, layer by layer, on the plan of the batch size that
/// the engine prepared. Everything goes on ctx.stream (the handles are bound to it) and
/// nothing waits for the GPU: the engine queues step after step, and records one as a CUDA graph.
#include <string>

#include "04_cuda_matmul/mlp_kernels.hpp"
#include "06_cudnn/avgpool_cudnn.hpp"
#include "06_cudnn/cudnn_step.hpp"
#include "06_cudnn/loss_cudnn.hpp"

namespace course {

const float* CudnnStep::forward(const StepContext& ctx, const float* x, int B) {
  const BatchPlan& plan = planned(B);
  const GpuHandles& h = handles();
  x_of_[0] = x;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = layers_[i];
    const LayerPlan& lp = plan.layers[i];
    const float* in = x_of_[i];
    if (l.kind == LayerKind::Flatten) {  // the same bytes, read as [B, C*H*W]
      x_of_[i + 1] = in;
      continue;
    }
    float* out = act_buf_[i + 1].get();
    const float* W = ctx.params + l.weight;
    const float* b = ctx.params + l.bias;
    ctx.time(i, Pass::Forward, [&] {
      switch (l.kind) {
        case LayerKind::Conv: conv_forward_cudnn(h, *lp.conv, lp.algos, workspace(), in, W, b, out); break;
        case LayerKind::MaxPool: maxpool_forward_cudnn(h, *lp.pool, in, out); break;
        case LayerKind::AvgPool: avgpool_forward_cudnn(h, *lp.pool, in, out); break;
        case LayerKind::Activation:
          if (l.act_on_cudnn)
            activation_forward_cudnn(h, *l.act_desc, *lp.act, in, out);
          else
            activation_forward_gpu(l.act, in, out, B * l.out.size(), l.slope, ctx.stream);
          break;
        case LayerKind::Dense:
          dense_forward_cublas(h, *lp.dense, in, W, b, out, B, static_cast<int>(l.in.size()), l.out.c);
          break;
        case LayerKind::Flatten: break;
      }
    });
    x_of_[i + 1] = out;
  }
  return x_of_.back();
}

void CudnnStep::loss(const StepContext& ctx, const float* logits, const int* labels, int B, int* predictions) {
  float* dlogits = ctx.training ? delta_buf_.back().get() : nullptr;
  DeviceSums& sums = *ctx.sums;
  if (cfg_.loss == "mse") {
    mse_gpu(logits, labels, B, cfg_.classes, dlogits, sums.loss_sum.get(), sums.correct.get(), predictions,
            ctx.stream);
    absolute_error_gpu(logits, labels, B, cfg_.classes, sums.abs_error_sum.get(), ctx.stream);  // the MAE
  } else {
    log_softmax_cudnn(handles(), planned(B).logits, logits, log_probs_.get());
    nll_from_log_softmax_gpu(log_probs_.get(), labels, B, cfg_.classes, dlogits, sums.loss_sum.get(),
                             sums.correct.get(), predictions, ctx.stream);
  }
}

void CudnnStep::backward(const StepContext& ctx, int B) {
  const BatchPlan& plan = planned(B);
  const GpuHandles& h = handles();
  dy_of_.back() = delta_buf_.back().get();
  for (std::size_t i = layers_.size(); i-- > 0;) {
    const Layer& l = layers_[i];
    const LayerPlan& lp = plan.layers[i];
    const float* dy = dy_of_[i + 1];
    if (l.kind == LayerKind::Flatten) {
      dy_of_[i] = dy;
      continue;
    }
    float* dx = i == 0 ? nullptr : delta_buf_[i].get();  // training never needs dL/dinput
    const float* x = x_of_[i];
    const float* y = x_of_[i + 1];
    const float* W = ctx.params + l.weight;
    float* dW = ctx.grads + l.weight;
    float* db = ctx.grads + l.bias;
    ctx.time(i, Pass::Backward, [&] {
      switch (l.kind) {
        case LayerKind::Conv: conv_backward_cudnn(h, *lp.conv, lp.algos, workspace(), x, W, dy, dW, db, dx); break;
        case LayerKind::MaxPool:
          if (dx != nullptr) maxpool_backward_cudnn(h, *lp.pool, x, y, dy, dx);
          break;
        case LayerKind::AvgPool:
          if (dx != nullptr) avgpool_backward_cudnn(h, *lp.pool, x, y, dy, dx);
          break;
        case LayerKind::Activation:
          if (dx == nullptr) break;
          if (l.act_on_cudnn)
            activation_backward_cudnn(h, *l.act_desc, *lp.act, x, y, dy, dx);
          else
            activation_backward_gpu(l.act, x, y, dy, dx, B * l.out.size(), l.slope, ctx.stream);
          break;
        case LayerKind::Dense:
          dense_backward_cublas(h, *lp.dense, x, W, dy, dW, db, dx, B, static_cast<int>(l.in.size()), l.out.c);
          break;
        case LayerKind::Flatten: break;
      }
    });
    if (l.range >= 0) ctx.gradients_queued(grad_ranges_[static_cast<std::size_t>(l.range)]);
    dy_of_[i] = dx;
  }
}

void CudnnStep::update(const StepContext& ctx) {
  sgd_update_gpu(ctx.params, ctx.grads, ctx.velocity, ctx.param_count, ctx.hyper, ctx.stream);
}

}  // namespace course
