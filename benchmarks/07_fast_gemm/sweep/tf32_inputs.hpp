// What cuBLAS's TF32 GEMM does with FP32 inputs: round them to the nearest TF32 value, or
// let the tensor cores drop their 13 low bits (the hardware reads only the top 19)? The
// answer decides what "the same input and compute types" asks of kernels 11 and 14, so
// the sweep measures it instead of assuming it.
#pragma once

#include <string>

namespace tf32_inputs {

struct Finding {
  int n = 0;                   // the product measured: n x n times n x n
  double from_nearest = 0;     // ||C - exact product of the inputs rounded to nearest|| / ||that||
  double from_truncated = 0;   // the same against the inputs truncated to TF32
  std::string verdict() const;  // "rounds to nearest", "truncates" or "neither clearly"
};

/// cuBLAS's TF32 product (course::cublas_gemm_tf32) of two n x n matrices of values uniform in
/// [-1, 1) with all 23 mantissa bits in use, against both exact products (in double on the CPU).
Finding measure(int n = 256);

}  // namespace tf32_inputs
