/// @file fused_common.cuh
/// @brief Stage 08: what the fused kernels share on the device: the epilogue's activations and their slopes.
///
/// A fused kernel applies the activation in its epilogue, where the sum leaves
/// its registers, and the backward kernels need its slope act'(z). Every
/// activation of the course has a slope that can be written with the output
/// a = act(z) alone:
///
///     relu      a > 0 ? 1 : 0                 (a > 0 exactly when z > 0)
///     leaky     a > 0 ? 1 : 0.01              (the same sign as z)
///     sigmoid   a (1 - a)
///     tanh      1 - a^2
///     softplus  sigmoid(z) = 1 - e^(-a)       (since e^a = 1 + e^z), computed as -expm1(-a)
///
/// So a fused layer keeps only its output, never its pre-activation z: one
/// tensor fewer to write in the forward pass and to read in the backward pass.
#pragma once

#include <cuda_runtime.h>

#include "01_fc_softmax/activations.hpp"
#include "08_fused/fused_common.hpp"

namespace course {

/// act(z), stage 01's formulas in float.
__device__ __forceinline__ float fused_activate(FusedAct act, float z) {
  switch (act) {
    case FusedAct::ReLU: return z > 0.f ? z : 0.f;
    case FusedAct::LeakyReLU: return z > 0.f ? z : static_cast<float>(kLeakySlope) * z;
    case FusedAct::Sigmoid: return 1.f / (1.f + expf(-z));
    case FusedAct::Tanh: return tanhf(z);
    case FusedAct::Softplus: return fmaxf(z, 0.f) + log1pf(expf(-fabsf(z)));
    case FusedAct::None: break;
  }
  return z;
}

/// act'(z), from a = act(z) (the table above).
__device__ __forceinline__ float fused_slope(FusedAct act, float a) {
  switch (act) {
    case FusedAct::ReLU: return a > 0.f ? 1.f : 0.f;
    case FusedAct::LeakyReLU: return a > 0.f ? 1.f : static_cast<float>(kLeakySlope);
    case FusedAct::Sigmoid: return a * (1.f - a);
    case FusedAct::Tanh: return 1.f - a * a;
    case FusedAct::Softplus: return -expm1f(-a);
    case FusedAct::None: break;
  }
  return 1.f;
}

/// n rounded up to a multiple of 4: shared-memory arrays placed one after another
/// start on 16-byte boundaries, so that float4 loads from the next one are aligned.
__host__ __device__ __forceinline__ int round_up_to_4(int n) { return (n + 3) / 4 * 4; }

/// The first line of every stage 08 `__global__` wrapper: programmatic dependent launch (Hopper and later).
///
/// In a stream (and in the graph captured from it) a kernel is normally launched
/// only once the kernel before it has finished and its writes are flushed: then
/// its grid is set up and its blocks are scheduled, while the GPU idles. A kernel
/// launched with cudaLaunchAttributeProgrammaticStreamSerialization may be set up
/// before that; its blocks then wait in `griddepcontrol.wait` until the kernel
/// before it has finished and its writes are visible. Waiting first, before any
/// load or store, keeps every hazard of the stream order (a kernel may overwrite
/// what an earlier one still reads): a kernel passes its wait only once the one
/// before it has finished, which passed its own wait only once the one before
/// that had finished, and so on. The kernel before could also let its dependents
/// start earlier still, with `griddepcontrol.launch_dependents`; stage 08 does
/// not: measured on the H100, that made the `cnn` step slower (lesson 08). Without
/// the attribute, or before sm_90, the wait is a no-op.
__device__ __forceinline__ void wait_for_previous_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/// Launches one of stage 08's kernels (blocks of kFusedThreads), programmatically after the kernel before it in
/// the stream when `early` is set (wait_for_previous_kernel says what that means), in clusters of `cluster`
/// blocks when it is above 1 (sm_90; `blocks` a multiple of it).
template <class Args>
void launch_fused_kernel(void (*kernel)(Args), int blocks, int smem_bytes, cudaStream_t stream, const Args& a,
                         bool early, int cluster = 1) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(blocks));
  config.blockDim = dim3(kFusedThreads);
  config.dynamicSmemBytes = static_cast<std::size_t>(smem_bytes);
  config.stream = stream;
  cudaLaunchAttribute attributes[2]{};
  unsigned count = 0;
  if (early) {
    attributes[count].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attributes[count].val.programmaticStreamSerializationAllowed = 1;
    ++count;
  }
  if (cluster > 1) {
    attributes[count].id = cudaLaunchAttributeClusterDimension;
    attributes[count].val.clusterDim.x = static_cast<unsigned>(cluster);
    attributes[count].val.clusterDim.y = 1;
    attributes[count].val.clusterDim.z = 1;
    ++count;
  }
  config.attrs = attributes;
  config.numAttrs = count;
  // The error, if any, is left for CUDA_CHECK_LAUNCH at the call, which names the launcher.
  static_cast<void>(cudaLaunchKernelEx(&config, kernel, a));
}

/// Stages `count` values into shared memory: value i = load(i) goes where store(i, value) puts it, for
/// i = threadIdx.x, threadIdx.x + blockDim.x, ... kInFlight values are loaded before any is stored, so
/// that a thread waits on memory once for kInFlight loads. (In a plain loop, load then store, each store
/// waits for its load, and the compiler may not move the next load above it: it cannot always prove that
/// the store does not change what the load reads.)
template <int kInFlight = 4, class Load, class Store>
__device__ __forceinline__ void stage_in_flight(int count, Load load, Store store) {
  const int stride = static_cast<int>(blockDim.x);
  for (int base = static_cast<int>(threadIdx.x); base < count; base += kInFlight * stride) {
    decltype(load(0)) v[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u)
      if (base + u * stride < count) v[u] = load(base + u * stride);
#pragma unroll
    for (int u = 0; u < kInFlight; ++u)
      if (base + u * stride < count) store(base + u * stride, v[u]);
  }
}

/// The block's dynamic shared memory as floats, 16-byte aligned.
__device__ __forceinline__ float* fused_shared_memory() {
  extern __shared__ float4 fused_smem[];
  return reinterpret_cast<float*>(fused_smem);
}

}  // namespace course
