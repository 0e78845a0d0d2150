/// @file bucket_plan.hpp
/// @brief Stage 09 (Task 9.3): the gradient buckets, planned once: which layers' gradients are all-reduced together.
///
/// The backward pass finishes the layers last to first. A layer's gradients
/// are final as soon as its own backward is done, so their all-reduce can
/// start then, on a second stream, while the GPU goes on with the layers
/// before it (Task 9.4). One all-reduce per layer would start earliest, but
/// every all-reduce costs a fixed latency (microseconds of synchronisation
/// between the GPUs) on top of its bytes, and the course's models have layers
/// of 160 values beside layers of 156,900. So consecutive layers are grouped
/// into *buckets* of at least `cap_bytes`, walking in the order the backward
/// pass finishes them:
///
///     cnn, cap 128 KiB      backward order   fc2 (3.9 KiB)  fc1 (612.9 KiB) | conv2 (18.1 KiB) conv1 (0.6 KiB)
///                           buckets          [---------- 1: 616.8 KiB -----] [------ 2: 18.8 KiB ----------]
///
/// Bucket 1 is all-reduced as soon as fc1's backward is queued, while conv2's
/// and conv1's run; bucket 2 (the rest, smaller than the cap) only at the end.
/// Layers lie in the flat buffer in model order, so layers consecutive in the
/// backward order are neighbours in memory (each ends where the one finished
/// before it begins): a bucket is one contiguous range, all-reduced in place
/// with one call.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/gpu/engine_parts.hpp"

namespace course {

/// Consecutive layers' gradients, all-reduced with one call.
struct Bucket {
  std::size_t begin = 0, end = 0;  ///< values [begin, end) of the flat gradient buffer
  std::size_t first = 0, last = 0;  ///< the ranges it holds: [first, last] of the backward-order list
  std::size_t size() const { return end - begin; }
  std::size_t bytes() const { return size() * sizeof(float); }
};

/// Buckets for gradient ranges listed in the order the backward pass finishes
/// them (course::GpuEngine::gradient_ranges()): each bucket takes ranges in
/// that order until it holds at least `cap_bytes`, and the last takes what is
/// left. cap_bytes 0 gives one bucket per range; a cap above the whole buffer,
/// one bucket. Throws std::invalid_argument, naming the ranges, when a range is
/// empty or does not end where the range before it in the list begins.
std::vector<Bucket> plan_buckets(const std::vector<GradientRange>& in_backward_order, std::size_t cap_bytes);

/// "fc2-fc1" or "conv1": the names of a bucket's first and last layers (their first word).
std::string bucket_layers(const Bucket& bucket, const std::vector<GradientRange>& in_backward_order);

}  // namespace course
