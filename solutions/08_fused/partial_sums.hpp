/// @file partial_sums.hpp
/// @brief Stage 08: the layers' partial weight-gradient sums added into the engine's flat gradient buffer (glue, not a task).
///
/// Stage 08's backward kernels leave each gradient as slices of partial sums, which
/// the fused update adds as it reads them (Task 8.7). Under data parallelism the
/// all-reduce needs each gradient whole, in the engine's flat buffer: this kernel adds
/// the slices there, in slice order, as the update would, so a step that goes this way
/// updates to the same bits. A bucketed all-reduce starts as soon as a layer is done,
/// so it gets one launch per layer; an all-reduce that waits for the whole backward pass
/// gets one launch for every layer (a launch costs about as much as a small layer's sum).
#pragma once

#include <cuda_runtime.h>

#include <vector>

namespace course {

/// A gradient of `count` values left as `slices` partial sums: slice s at partials[s * count, (s + 1) * count).
struct PartialSums {
  const float* partials;
  int slices;
  long long count;
};

/// One layer's gradients as partial sums: its weight w, then its bias b, which go to
/// out[0, w.count) and out[w.count, w.count + b.count) (they lie that way in the flat buffer).
struct LayerPartialSums {
  PartialSums w, b;
  float* out;
};

/// out[j] = sum over s of partials[s * count + j], in slice order, for every weight and bias of
/// every layer given, in as few launches as the kernel's argument allows (8 layers a launch);
/// `early`: launched programmatically after the kernel before it (wait_for_previous_kernel).
void add_partial_sums_gpu(const std::vector<LayerPartialSums>& layers, cudaStream_t stream = 0, bool early = false);

}  // namespace course
