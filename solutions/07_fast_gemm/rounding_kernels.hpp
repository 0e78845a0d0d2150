/// @file rounding_kernels.hpp
/// @brief Stage 07: whole arrays rounded on the GPU (rounding.cu), for the sweep, the tests and cuBLAS's BF16 inputs.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace course {

/// out[i] = in[i] rounded to BF16 (round_to_bf16_bits, rounding.cuh), i < n. Asynchronous on
/// `stream`; throws std::invalid_argument for n < 0 or a null pointer with n > 0.
void convert_to_bf16(const float* in, __nv_bfloat16* out, long n, cudaStream_t stream = 0);

/// out[i] = in[i] rounded to TF32 by the GPU's own conversion (cvt.rna.tf32.f32, which
/// round_to_tf32 must match), i < n (out may be in). Same rules.
void round_array_to_tf32(const float* in, float* out, long n, cudaStream_t stream = 0);

}  // namespace course
