// See tf32_inputs.hpp.
#include "tf32_inputs.hpp"

#include <cmath>
#include <cstdint>
#include <vector>

#include "07_fast_gemm/fast_gemm.hpp"
#include "07_fast_gemm/rounding.cuh"
#include "common/gpu/cuda_check.hpp"
#include "common/core/rng.hpp"

namespace tf32_inputs {

namespace {

// The exact product of n x n row-major matrices, in double (every product of two TF32 values
// and every sum of n = 256 of them fits in double's 53 bits without rounding).
std::vector<double> exact_product(const std::vector<float>& a, const std::vector<float>& b, int n) {
  std::vector<double> c(static_cast<std::size_t>(n) * n, 0.0);
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < n; ++k) {
      const double aik = a[static_cast<std::size_t>(i) * n + k];
      for (int j = 0; j < n; ++j) c[static_cast<std::size_t>(i) * n + j] += aik * b[static_cast<std::size_t>(k) * n + j];
    }
  return c;
}

double relative_distance(const std::vector<float>& got, const std::vector<double>& want) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    diff += (got[i] - want[i]) * (got[i] - want[i]);
    norm += want[i] * want[i];
  }
  return std::sqrt(diff / norm);
}

// x with its 13 low mantissa bits cleared: what the tensor cores read of an FP32 value.
float truncated(float x) { return course::float_from_bits(course::float_bits(x) & 0xFFFFE000u); }

}  // namespace

std::string Finding::verdict() const {
  if (from_nearest * 10 < from_truncated) return "rounds to nearest";
  if (from_truncated * 10 < from_nearest) return "truncates";
  return "neither clearly";
}

Finding measure(int n) {
  const std::size_t size = static_cast<std::size_t>(n) * n;
  course::Rng rng(7, 31);
  std::vector<float> a(size), b(size);
  for (float& x : a) x = static_cast<float>(rng.uniform(-1, 1));
  for (float& x : b) x = static_cast<float>(rng.uniform(-1, 1));
  course::DeviceBuffer<float> da, db, dc(size);
  da.upload(a);
  db.upload(b);
  course::cublas_gemm_tf32(false, false, n, n, n, 1.f, da.get(), db.get(), 0.f, dc.get(), 0);
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> c = dc.download();

  std::vector<float> a_near(size), b_near(size), a_cut(size), b_cut(size);
  for (std::size_t i = 0; i < size; ++i) {
    a_near[i] = course::round_to_tf32(a[i]);
    b_near[i] = course::round_to_tf32(b[i]);
    a_cut[i] = truncated(a[i]);
    b_cut[i] = truncated(b[i]);
  }
  Finding f;
  f.n = n;
  f.from_nearest = relative_distance(c, exact_product(a_near, b_near, n));
  f.from_truncated = relative_distance(c, exact_product(a_cut, b_cut, n));
  return f;
}

}  // namespace tf32_inputs
