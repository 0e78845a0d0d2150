/// @file gradient_sync.hpp
/// @brief Where data parallelism hooks its all-reduce into a GPU engine's step (given code).
#pragma once

#include <cstddef>
#include <string>

#include <cuda_runtime.h>

namespace course {

/// Values [begin, end) of an engine's flat gradient buffer that one layer's
/// backward pass writes (its weight, then its bias), with the layer's name.
struct GradientRange {
  std::size_t begin = 0, end = 0;
  std::string name;  ///< "fc1 (fc100)"
  std::size_t size() const { return end - begin; }
};

/// What data parallelism adds to a GPU engine's training step: the
/// engine calls these while it queues a step, captured into a CUDA graph or not,
/// so their work becomes part of the step.
///
/// An engine that takes a GradientSync (GpuEngine::set_gradient_sync, gpu_engine.hpp)
/// calls gradients_queued() once per layer with parameters, in the order of
/// its gradient_ranges(), right after queueing that layer's last write to its
/// gradients; then before_update() once the whole backward pass is queued and
/// before anything reads a gradient. A step of a rank that has no examples
/// (the end of an epoch split over more ranks than examples) zeroes the
/// gradients and makes the same calls. Capturing a step is a collective choice
/// when the step holds NCCL calls (every rank captures, or none does), so the
/// engine replays its graph only for steps that step_may_be_captured() allows.
class GradientSync {
 public:
  virtual ~GradientSync() = default;
  /// The layer whose gradients are `range` has queued its last write to them on `stream`.
  virtual void gradients_queued(const GradientRange& range, cudaStream_t stream) = 0;
  /// Everything of the backward pass is queued on `stream`: make `stream` wait until the gradients are final.
  virtual void before_update(cudaStream_t stream) = 0;
  /// Whether gradients_queued() starts work (a bucket's all-reduce as soon as its layers are done).
  /// When it does not, a step model may finish every layer's gradients together at the end of
  /// the backward pass (stage 08 adds its partial sums in one launch instead of one a layer).
  virtual bool uses_each_layer() const { return true; }
  /// Whether the coming step may run as a CUDA graph (true unless the layer above says otherwise).
  virtual bool step_may_be_captured() const { return true; }
};

}  // namespace course
