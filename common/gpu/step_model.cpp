/// @file step_model.cpp
/// @brief StepModel's defaults: a training step run layer by layer, the engine's part around it, and
/// the config checks every step makes (given code).
#include "common/gpu/step_model.hpp"

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "common/gpu/device_epoch.hpp"
#include "common/model/arch.hpp"

namespace course {

void check_step_config(const EngineConfig& cfg, const std::string& stage) {
  if (cfg.loss != "cross-entropy" && cfg.loss != "mse")
    throw std::invalid_argument("unknown loss '" + cfg.loss + "' (" + stage + " has cross-entropy and mse)");
  if (cfg.batch < 1) throw std::invalid_argument("batch size must be at least 1, got " + std::to_string(cfg.batch));
  if (cfg.classes < 1) throw std::invalid_argument("classes must be at least 1, got " + std::to_string(cfg.classes));
  check_output_activation(cfg.arch, cfg.loss);  // sigmoid outputs go with mse
}

nlohmann::json StepModel::stage_results() const { return nullptr; }

void StepModel::prepare(const StepContext& /*ctx*/, int /*B*/) {}

void StepModel::queue_gradients(const StepContext& ctx, int B) {
  const TrainingBatch& t = *ctx.batch;
  ctx.time(t.gather_row, GpuProfiler::Pass::Forward, [&] {
    gather_batch_at_device_step(t.images, t.labels, t.order, t.step, t.full_batch, B, t.D, t.x, t.y, ctx.stream);
  });
  const float* logits = forward(ctx, t.x, B);
  ctx.time(t.loss_row, GpuProfiler::Pass::Forward, [&] { loss(ctx, logits, t.y, B, nullptr); });
  backward(ctx, B);
  // Also in a warm-up pass: whatever the sync's hooks queued joins the stream.
  if (ctx.sync != nullptr) ctx.sync->before_update(ctx.stream);
}

void StepModel::train_step(const StepContext& ctx, int B) {
  queue_gradients(ctx, B);
  const TrainingBatch& t = *ctx.batch;
  if (!t.update) return;  // a warm-up pass: nothing updated, the step not ended
  ctx.time(t.update_row, GpuProfiler::Pass::Backward, [&] {
    update(ctx);
    end_training_step(ctx);
  });
}

void end_training_step(const StepContext& ctx) {
  const TrainingBatch& t = *ctx.batch;
  end_training_step_gpu(t.step, ctx.sums->loss_sum.get(), t.loss_slots, t.loss_slot_count, ctx.stream);
}

}  // namespace course
