/// @file partial_sums.cu
/// @brief Stage 08: the layers' partial sums into the flat gradient (see the header).
#include "08_fused/fused_common.cuh"
#include "08_fused/fused_common.hpp"
#include "08_fused/partial_sums.hpp"
#include "common/gpu/cuda_check.hpp"

namespace course {

namespace {

constexpr int kLayersPerLaunch = 8;

// Up to kLayersPerLaunch layers, passed by value; thread i sums value i of their
// weights and biases laid end to end: layer L owns [first[L], first[L + 1]).
struct PartialSumsLaunch {
  LayerPartialSums layer[kLayersPerLaunch];
  long long first[kLayersPerLaunch + 1];
  int layers;
};

__global__ void add_partial_sums_kernel(PartialSumsLaunch a) {
  wait_for_previous_kernel();
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= a.first[a.layers]) return;
  int L = 0;
  while (i >= a.first[L + 1]) ++L;
  const LayerPartialSums& l = a.layer[L];
  const long long k = i - a.first[L];  // index into the layer's weight, then its bias
  const bool weight = k < l.w.count;
  const PartialSums& t = weight ? l.w : l.b;
  const long long j = weight ? k : k - l.w.count;
  float g = 0.f;
  for (int s = 0; s < t.slices; ++s) g += t.partials[s * t.count + j];  // slice order, as Task 8.7 adds them
  l.out[k] = g;
}

}  // namespace

void add_partial_sums_gpu(const std::vector<LayerPartialSums>& layers, cudaStream_t stream, bool early) {
  for (std::size_t done = 0; done < layers.size();) {
    PartialSumsLaunch a{};
    a.first[0] = 0;
    for (; a.layers < kLayersPerLaunch && done < layers.size(); ++done) {
      a.layer[a.layers] = layers[done];
      a.first[a.layers + 1] = a.first[a.layers] + layers[done].w.count + layers[done].b.count;
      ++a.layers;
    }
    const long long total = a.first[a.layers];
    if (total == 0) continue;
    const auto blocks = static_cast<int>((total + kFusedThreads - 1) / kFusedThreads);
    launch_fused_kernel(add_partial_sums_kernel, blocks, 0, stream, a, early);
    CUDA_CHECK_LAUNCH();
  }
}

}  // namespace course
