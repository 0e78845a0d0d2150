/// @file partial_sums.hpp
/// @brief Stage 08: one layer's partial weight-gradient sums added into the engine's flat gradient buffer (glue, not a task).
///
/// Stage 08's backward kernels leave each gradient as slices of partial sums, which
/// the fused update adds as it reads them (Task 8.7). Under data parallelism the
/// all-reduce needs each gradient whole, in the engine's flat buffer, as soon as its
/// layer is done (a bucket's all-reduce may start then): this kernel adds the
/// slices of one layer's weight and bias there, in slice order, as the update would,
/// so a step that goes this way updates to the same bits.
#pragma once

#include <cuda_runtime.h>

namespace course {

/// A gradient of `count` values left as `slices` partial sums: slice s at partials[s * count, (s + 1) * count).
struct PartialSums {
  const float* partials;
  int slices;
  long long count;
};

/// out[j] = sum over s of w.partials[s * w.count + j] for j < w.count, then the same for b into
/// out[w.count + j] (a layer's weight, then its bias, as they lie in the flat buffer).
void add_partial_sums_gpu(const PartialSums& w, const PartialSums& b, float* out, cudaStream_t stream = 0);

}  // namespace course
