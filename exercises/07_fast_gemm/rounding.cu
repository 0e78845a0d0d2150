/// @file rounding.cu
/// @brief Stage 07, Task 7.5: FP32 arrays rounded to BF16 storage or to TF32 values on the GPU.
///
/// The sweep and the tests make BF16 copies of FP32 matrices with these (cuBLAS's
/// BF16 GEMM and gemm_bf16() read BF16), and they show that the device rounds
/// exactly as the host does: rounding.cuh is compiled for both.
#include "07_fast_gemm/ptx.cuh"
#include "07_fast_gemm/rounding.cuh"
#include "07_fast_gemm/rounding_kernels.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads) convert_to_bf16_kernel(const float* __restrict__ in,
                                                                   std::uint16_t* __restrict__ out, long n) {
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long>(gridDim.x) * blockDim.x)
    out[i] = round_to_bf16_bits(in[i]);
}

// With the GPU's own conversion (cvt.rna.tf32.f32), which the tensor-core kernels use: the
// tests compare it with round_to_tf32 on the host, bit for bit.
__global__ void __launch_bounds__(kThreads) round_to_tf32_kernel(const float* __restrict__ in, float* __restrict__ out,
                                                                 long n) {
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long>(gridDim.x) * blockDim.x)
    out[i] = __uint_as_float(ptx::to_tf32(in[i]));
}

// Enough blocks to fill the GPU several times over; each thread strides through the rest.
unsigned grid_for(long n) { return static_cast<unsigned>(std::min<long>((n + kThreads - 1) / kThreads, 4096)); }

}  // namespace

void convert_to_bf16(const float* in, __nv_bfloat16* out, long n, cudaStream_t stream) {
  if (n < 0) throw std::invalid_argument("convert_to_bf16: n must not be negative, got " + std::to_string(n));
  if (n == 0) return;
  if (in == nullptr || out == nullptr) throw std::invalid_argument("convert_to_bf16: null pointer");
  // TODO(Task 7.5): launch one thread per element (grid-stride), each storing round_to_bf16_bits of its value
  throw course::NotImplemented("Task 7.5", "07_fast_gemm/rounding.cu", "docs/lessons/07_fast_gemm.md");
}

void round_array_to_tf32(const float* in, float* out, long n, cudaStream_t stream) {
  if (n < 0) throw std::invalid_argument("round_array_to_tf32: n must not be negative, got " + std::to_string(n));
  if (n == 0) return;
  if (in == nullptr || out == nullptr) throw std::invalid_argument("round_array_to_tf32: null pointer");
  round_to_tf32_kernel<<<grid_for(n), kThreads, 0, stream>>>(in, out, n);
  CUDA_CHECK_LAUNCH();
}

}  // namespace course
