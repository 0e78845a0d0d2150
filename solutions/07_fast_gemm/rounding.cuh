/// @file rounding.cuh
/// @brief Stage 07, Task 7.5: rounding an FP32 value to TF32 and to BF16, the way the tensor-core kernels do it.
///
/// The three formats share FP32's sign bit and 8 exponent bits, so they share its
/// range; they differ in how many of FP32's 23 stored mantissa bits they keep:
///
///     FP32  s eeeeeeee mmmmmmmmmmmmmmmmmmmmmmm   23 bits, unit roundoff u = 2^-24
///     TF32  s eeeeeeee mmmmmmmmmm               10 bits, u = 2^-11 (still stored in 32 bits)
///     BF16  s eeeeeeee mmmmmmm                   7 bits, u = 2^-8  (stored in 16 bits)
///
/// Rounding to nearest on the bits: add half a unit of the last kept place, then cut.
/// A carry out of the mantissa moves into the exponent, which is right: 1.11...1 x 2^e
/// rounds up to 1.0 x 2^(e+1), and the largest finite values round up to infinity.
/// Exact ties (the cut bits 100...0) need a rule:
///
/// - TF32 rounds ties away from zero (add exactly half, cut): what the GPU's own
///   conversion, `cvt.rna.tf32.f32`, does, so that the kernels can round a value in
///   one instruction and still agree with this function bit for bit.
/// - BF16 rounds ties to even (add half minus one, plus the last kept bit): what
///   `__float2bfloat16_rn` and every BF16 library do.
///
/// NaN and infinity have an all-ones exponent and must not be touched by the
/// addition (a NaN could become infinity): they pass through, a NaN staying a NaN.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

namespace course {

/// The bits of an FP32 value, and back (memcpy: the portable way; the compiler makes it a move).
__host__ __device__ inline std::uint32_t float_bits(float x) {
  std::uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}
__host__ __device__ inline float float_from_bits(std::uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

/// x rounded to the nearest TF32 value (ties away from zero, as cvt.rna.tf32.f32), as an FP32
/// value whose 13 lowest bits are 0.
__host__ __device__ inline float round_to_tf32(float x) {
  std::uint32_t u = float_bits(x);
  // BEGIN Task 7.5 (device): round the 23-bit mantissa to its 10 highest bits, ties away from zero; NaN and infinity pass unchanged
  // HINT: 13 bits go: add 0x1000 (half of the last kept place), then clear the 13 low bits; first return x itself when the exponent bits (0x7F800000) are all ones.
  if ((u & 0x7F800000u) == 0x7F800000u) return x;  // infinity or NaN
  u += 0x1000u;
  u &= 0xFFFFE000u;
  // END Task 7.5
  return float_from_bits(u);
}

/// The 16 bits of x rounded to the nearest BF16 value (ties to even); a NaN stays a (quiet) NaN.
__host__ __device__ inline std::uint16_t round_to_bf16_bits(float x) {
  std::uint32_t u = float_bits(x);
  // BEGIN Task 7.5 (device): round to the 16 high bits of x, ties to even; NaN stays NaN (set a mantissa bit so the cut cannot leave an infinity), infinity stays infinity
  // HINT: as for TF32 with 16 bits going: add 0x7FFF plus bit 16, then keep u >> 16. For a NaN return (u >> 16) | 0x0040.
  if ((u & 0x7F800000u) == 0x7F800000u)
    return static_cast<std::uint16_t>((u & 0x007FFFFFu) != 0 ? (u >> 16) | 0x0040u : u >> 16);
  u += 0x7FFFu + ((u >> 16) & 1u);
  // END Task 7.5
  return static_cast<std::uint16_t>(u >> 16);
}

/// The FP32 value of BF16 bits: exact (BF16 is the top half of an FP32).
__host__ __device__ inline float bf16_bits_to_float(std::uint16_t b) {
  return float_from_bits(static_cast<std::uint32_t>(b) << 16);
}

/// x rounded to the nearest BF16 value, as an FP32 value.
__host__ __device__ inline float round_to_bf16(float x) { return bf16_bits_to_float(round_to_bf16_bits(x)); }

}  // namespace course
