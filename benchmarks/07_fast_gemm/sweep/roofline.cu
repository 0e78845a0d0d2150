// The ceilings of roofline.hpp. Each kernel does nothing but the one operation it measures,
// on values that stay in registers, with enough independent chains per warp that the
// pipeline never waits on a result, and enough blocks to fill every SM several times.
#include "roofline.hpp"

#include <vector>

#include "07_fast_gemm/ptx.cuh"
#include "benchmarks/support/gpu_timing.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/gpu/gpu_capability.hpp"

namespace roofline {

namespace {

constexpr int kIterations = 4096;

// 8 independent FMA chains per thread; the result is stored only if it is impossible
// (never), so the compiler keeps the work without the kernel writing memory.
__global__ void fma_kernel(float* out, float seed) {
  float a[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) a[i] = seed + i;
  const float m = 0.999999f, c = 1e-7f;
  for (int it = 0; it < kIterations; ++it)
#pragma unroll
    for (int i = 0; i < 8; ++i) a[i] = a[i] * m + c;
  float s = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) s += a[i];
  if (s == -1.f) out[threadIdx.x] = s;
}

// 4 independent accumulator tiles per warp, operands fixed in registers.
__global__ void mma_bf16_kernel(float* out, unsigned seed) {
#if COURSE_DEVICE_ARCH >= 800  // these mma shapes: left out of an sm_75 build (ptx.cuh)
  unsigned a[4] = {seed, seed + 1, seed + 2, seed + 3}, b[2] = {seed + 4, seed + 5};
  float c[4][4] = {};
  for (int it = 0; it < kIterations; ++it)
#pragma unroll
    for (int j = 0; j < 4; ++j) course::ptx::mma_bf16_16x8x16(c[j], a, b);
  float s = 0;
#pragma unroll
  for (int j = 0; j < 4; ++j) s += c[j][0] + c[j][1] + c[j][2] + c[j][3];
  if (s == -1.f) out[threadIdx.x] = s;
#endif
}

__global__ void mma_tf32_kernel(float* out, unsigned seed) {
#if COURSE_DEVICE_ARCH >= 800  // these mma shapes: left out of an sm_75 build (ptx.cuh)
  unsigned a[4] = {seed, seed + 1, seed + 2, seed + 3}, b[2] = {seed + 4, seed + 5};
  float c[4][4] = {};
  for (int it = 0; it < kIterations; ++it)
#pragma unroll
    for (int j = 0; j < 4; ++j) course::ptx::mma_tf32_16x8x8(c[j], a, b);
  float s = 0;
#pragma unroll
  for (int j = 0; j < 4; ++j) s += c[j][0] + c[j][1] + c[j][2] + c[j][3];
  if (s == -1.f) out[threadIdx.x] = s;
#endif
}

// The median of five timed launches, after an untimed one (gpu_timing.hpp).
template <typename Launch>
double median_ms(Launch&& launch) {
  return course::bench::median_call_ms(launch, {/*min_runs=*/5, /*min_ms=*/0, /*max_runs=*/5});
}

}  // namespace

std::vector<Ceiling> measure() {
  int dev = 0, sms = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  course::DeviceBuffer<float> sink(1024);
  const int blocks = sms * 8, threads = 256;
  std::vector<Ceiling> out;

  double ms = median_ms([&] {
    fma_kernel<<<blocks, threads>>>(sink.get(), 1.f);
    CUDA_CHECK_LAUNCH();
  });
  out.push_back({"FP32 FMA (CUDA cores)", 2.0 * 8 * kIterations * blocks * threads / (ms * 1e9), "TFLOP/s",
                 "8 independent FMA chains per thread"});

  if (!course::gpu_has(course::GpuFeature::Bf16Mma) || !course::gpu_has(course::GpuFeature::Tf32Mma)) {
    out.push_back({"mma.sync (tensor cores)", 0, "-", course::without_feature_note(course::GpuFeature::Tf32Mma)});
  } else {
    ms = median_ms([&] {
      mma_bf16_kernel<<<blocks, threads>>>(sink.get(), 0x3F803F80u);
      CUDA_CHECK_LAUNCH();
    });
    out.push_back({"BF16 mma.sync m16n8k16", 2.0 * 16 * 8 * 16 * 4 * kIterations * blocks * (threads / 32) / (ms * 1e9),
                   "TFLOP/s", "4 independent mma per warp, operands in registers"});

    ms = median_ms([&] {
      mma_tf32_kernel<<<blocks, threads>>>(sink.get(), 0x3F800000u);
      CUDA_CHECK_LAUNCH();
    });
    out.push_back({"TF32 mma.sync m16n8k8", 2.0 * 16 * 8 * 8 * 4 * kIterations * blocks * (threads / 32) / (ms * 1e9),
                   "TFLOP/s", "4 independent mma per warp, operands in registers"});
  }

  const std::size_t bytes = std::size_t{1} << 30;
  course::DeviceBuffer<char> from(bytes), to(bytes);
  CUDA_CHECK(cudaMemset(from.get(), 1, bytes));
  ms = median_ms([&] { CUDA_CHECK(cudaMemcpyAsync(to.get(), from.get(), bytes, cudaMemcpyDeviceToDevice)); });
  out.push_back({"device memory (HBM3)", 2.0 * bytes / (ms * 1e9), "TB/s",
                 "cudaMemcpy of 1 GiB device to device, bytes read plus written"});
  return out;
}

}  // namespace roofline
