/// @file partial_sums.cu
/// @brief Stage 08: one layer's partial sums into the flat gradient (see the header).
#include "08_fused/fused_common.hpp"
#include "08_fused/partial_sums.hpp"
#include "common/cuda_check.hpp"

namespace course {

namespace {

__global__ void add_partial_sums_kernel(PartialSums w, PartialSums b, float* out) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const bool weight = i < w.count;
  const PartialSums& t = weight ? w : b;
  const long long j = weight ? i : i - w.count;
  if (j >= t.count) return;
  float g = 0.f;
  for (int s = 0; s < t.slices; ++s) g += t.partials[s * t.count + j];  // slice order, as Task 8.7 adds them
  out[i] = g;
}

}  // namespace

void add_partial_sums_gpu(const PartialSums& w, const PartialSums& b, float* out, cudaStream_t stream) {
  const long long total = w.count + b.count;
  if (total == 0) return;
  const auto blocks = static_cast<unsigned>((total + kFusedThreads - 1) / kFusedThreads);
  add_partial_sums_kernel<<<blocks, kFusedThreads, 0, stream>>>(w, b, out);
  CUDA_CHECK_LAUNCH();
}

}  // namespace course
