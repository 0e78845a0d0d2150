// What every stage 07 kernel test shares: a product computed on the CPU in double, the
// tolerance of each precision, the shape classes, and a check that names the worst element.
//
// The tolerances (u = 2^-24, FP32's unit roundoff; u_p the unit roundoff of the precision
// the operands are rounded to: 2^-11 for TF32, 2^-8 for BF16, u itself for FP32):
//
// 1. Against the exact product of the operands as the kernel rounds them (for TF32 and
//    BF16 the products of two rounded operands are exact in FP32: 11 + 11 and 8 + 8
//    significant bits fit in 24). What is left is the rounding of K additions in FP32,
//    at most u times each partial sum. Such errors have no preferred sign and add like a
//    random walk: their sum stays within a few u sqrt(K) max|partial sum|. Every partial
//    sum is at most S = sum_k |a_k b_k|, so per element
//
//        |C - ref| <= 4 u (sqrt(K) + 2) S + u |beta C0|
//
//    (+2: an FP32 kernel without FMA also rounds each product, and alpha, beta round once
//    more). For K = 1024 and inputs in [-1, 1) that is about 2e-3 while C ~ 10; one
//    missing or wrong term is about 0.25. Kernels 11 and 12 must meet it too: whatever
//    the tensor cores do inside an mma, they add in FP32.
//
// 2. For TF32 and BF16, against the exact product of the unrounded operands, in norm:
//    each product then carries two roundings, a relative error of at most 2 u_p; over
//    many elements the errors average out to about u_p, so
//
//        ||C - exact|| / ||exact|| <= 2 u_p        (TF32: 9.8e-4, BF16: 7.8e-3)
//
//    This is the precision's own price, the figure the lesson quotes.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "04_cuda_matmul/gemm.hpp"
#include "07_fast_gemm/fast_gemm.hpp"
#include "07_fast_gemm/fast_gemm_kernels.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/gpu/gpu_capability.hpp"
#include "common/core/rng.hpp"
#include "gpu_buffers.hpp"
#include "tensor_check.hpp"

/// Skips the test, saying why, without a Hopper GPU (compute capability 9.0) and a build for it:
/// `who_needs` names the kernels ("kernel 13 needs"), `fallback` what runs instead.
#define SKIP_WITHOUT_HOPPER(who_needs, fallback)                                                      \
  do {                                                                                                \
    SKIP_WITHOUT_GPU();                                                                               \
    if (!::course::wgmma_available())                                                                 \
      GTEST_SKIP() << who_needs << " a Hopper GPU (compute capability 9.0) and a build with 90 among " \
                   << "CMAKE_CUDA_ARCHITECTURES; here " << fallback;                                  \
  } while (0)

/// Skips the test, saying why, where the GPU (as COURSE_AS_CC may lower it) lacks `feature`
/// (common/gpu/gpu_features.def): `kernels` names the kernels under test ("kernel 11"). Where they
/// cannot run, course::gemm() runs another kernel in their place, which its own tests check.
#define SKIP_WITHOUT_FEATURE(feature, kernels)                                                 \
  do {                                                                                         \
    SKIP_WITHOUT_GPU();                                                                        \
    if (!::course::gpu_has(::course::GpuFeature::feature))                                     \
      GTEST_SKIP() << kernels << ": " << ::course::without_feature_note(::course::GpuFeature::feature); \
  } while (0)

namespace course::s07test {

constexpr double kU32 = 0x1p-24;

/// Significant bits of a precision (the stored mantissa bits plus the leading one).
inline int significand_bits(Precision p) { return p == Precision::TF32 ? 11 : p == Precision::BF16 ? 8 : 24; }
/// Its unit roundoff.
inline double unit_roundoff(Precision p) { return std::ldexp(1.0, -significand_bits(p)); }

/// x rounded to the nearest value with `bits` significant bits and FP32's exponent range
/// (ties to even, or away from zero when `ties_away`), worked out in double without looking
/// at x's bits: an independent check of rounding.cuh. Below FP32's smallest normal (2^-126)
/// the spacing stays that of 2^-126, as for subnormals; past the largest finite value the
/// result is infinite.
inline float reference_round(float x, int bits, bool ties_away = false) {
  if (!std::isfinite(x) || x == 0.f) return x;
  int e = 0;
  std::frexp(static_cast<double>(x), &e);  // |x| = m 2^e with m in [0.5, 1): the leading bit is 2^(e-1)
  const double quantum = std::ldexp(1.0, std::max(e - 1, -126) - (bits - 1));
  const double steps = static_cast<double>(x) / quantum;  // exact: a power-of-two scaling
  const double r = (ties_away ? std::round(steps) : std::nearbyint(steps)) * quantum;
  if (std::fabs(r) > static_cast<double>(std::numeric_limits<float>::max()))
    return std::copysign(std::numeric_limits<float>::infinity(), x);
  return static_cast<float>(r);
}

/// v rounded as the kernels of precision p round their operands: TF32 to nearest with ties away
/// from zero (the GPU's cvt.rna), BF16 with ties to even (rounding.cuh says why).
inline std::vector<float> rounded(const std::vector<float>& v, Precision p) {
  if (p == Precision::FP32) return v;
  std::vector<float> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = reference_round(v[i], significand_bits(p), p == Precision::TF32);
  return out;
}

/// The BF16 bits of values that are already BF16 (their low 16 bits are 0).
inline std::vector<std::uint16_t> bf16_bits(const std::vector<float>& bf16_values) {
  std::vector<std::uint16_t> out(bf16_values.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::uint32_t u;
    std::memcpy(&u, &bf16_values[i], 4);
    out[i] = static_cast<std::uint16_t>(u >> 16);
  }
  return out;
}

inline std::vector<float> random_floats(std::size_t n, std::uint64_t seed) {
  Rng rng(seed, 17);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng.uniform(-1.0, 1.0));
  return v;
}

/// One product to check: C[M, N] = alpha op(A) op(B) + beta C0, the layouts of gemm.hpp.
struct Case {
  int M, N, K;
  bool trans_a = false, trans_b = false;
  float alpha = 1.f, beta = 0.f;
  /// Elements of offset at the start of A, B and C in their buffers: 1 makes every row
  /// misaligned for 16-byte loads, so the kernels' single-float paths run.
  int offset = 0;
  std::string str() const {
    std::ostringstream o;
    o << "C[" << M << " x " << N << "] = " << alpha << " " << (trans_a ? "A^T" : "A") << "[" << M << " x " << K
      << "] " << (trans_b ? "B^T" : "B") << "[" << K << " x " << N << "] + " << beta << " C"
      << (offset ? " (misaligned by " + std::to_string(offset) + ")" : std::string());
    return o.str();
  }
};

/// op(A)[m][k] and op(B)[k][n] of row-major storage (gemm.hpp's table).
inline float op_a(const Case& c, const std::vector<float>& a, int m, int k) {
  return c.trans_a ? a[static_cast<std::size_t>(k) * c.M + m] : a[static_cast<std::size_t>(m) * c.K + k];
}
inline float op_b(const Case& c, const std::vector<float>& b, int k, int n) {
  return c.trans_b ? b[static_cast<std::size_t>(n) * c.K + k] : b[static_cast<std::size_t>(k) * c.N + n];
}

/// The exact product in double, with per element the sums of |a_k b_k| and (a_k b_k)^2.
struct Product {
  std::vector<double> c, abs_sum, sq_sum;
};

/// alpha op(A) op(B) + beta c0 over k in [k_begin, k_end) (the whole of K by default).
inline Product cpu_product(const Case& c, const std::vector<float>& a, const std::vector<float>& b,
                           const std::vector<float>& c0, int k_begin = 0, int k_end = -1) {
  if (k_end < 0) k_end = c.K;
  const std::size_t mn = static_cast<std::size_t>(c.M) * c.N;
  Product p{std::vector<double>(mn), std::vector<double>(mn), std::vector<double>(mn)};
  // op(B) as [N][K] so the inner loop runs over contiguous memory.
  std::vector<double> bt(static_cast<std::size_t>(c.N) * c.K);
  for (int k = 0; k < c.K; ++k)
    for (int n = 0; n < c.N; ++n) bt[static_cast<std::size_t>(n) * c.K + k] = op_b(c, b, k, n);
  std::vector<double> row(static_cast<std::size_t>(c.K));
  for (int m = 0; m < c.M; ++m) {
    for (int k = 0; k < c.K; ++k) row[static_cast<std::size_t>(k)] = op_a(c, a, m, k);
    for (int n = 0; n < c.N; ++n) {
      const double* bn = &bt[static_cast<std::size_t>(n) * c.K];
      double s = 0, s_abs = 0, s_sq = 0;
      for (int k = k_begin; k < k_end; ++k) {
        const double t = row[static_cast<std::size_t>(k)] * bn[k];
        s += t;
        s_abs += std::fabs(t);
        s_sq += t * t;
      }
      const std::size_t i = static_cast<std::size_t>(m) * c.N + n;
      p.c[i] = c.alpha * s + (c.beta != 0.f ? c.beta * static_cast<double>(c0[i]) : 0.0);
      p.abs_sum[i] = std::fabs(c.alpha) * s_abs;
      p.sq_sum[i] = static_cast<double>(c.alpha) * c.alpha * s_sq;
    }
  }
  return p;
}

/// Tolerance 1 of the file comment for element i.
inline double sum_bound(const Case& c, int K, const Product& p, const std::vector<float>& c0, std::size_t i) {
  return 4 * kU32 * (std::sqrt(static_cast<double>(std::max(K, 1))) + 2) * p.abs_sum[i] +
         (c.beta != 0.f ? kU32 * std::fabs(c.beta * c0[i]) : 0.0) + 1e-30;
}

/// Mistakes of a GEMM's epilogue as the values they would give, from the product `ref` of a case
/// with beta != 0: C = alpha op(A) op(B) + beta C0 with beta C0 left out, with alpha left out, or
/// with C0 added unscaled.
inline std::vector<testkit::KnownSlip> epilogue_slips(const Case& c, const Product& ref, const std::vector<float>& c0) {
  if (c.beta == 0.f || c0.size() != ref.c.size()) return {};
  std::vector<double> no_beta(ref.c.size()), no_alpha(ref.c.size()), unscaled(ref.c.size());
  for (std::size_t i = 0; i < ref.c.size(); ++i) {
    const double bc = static_cast<double>(c.beta) * c0[i], ab = ref.c[i] - bc;  // alpha op(A) op(B)
    no_beta[i] = ab;
    no_alpha[i] = ab / c.alpha + bc;
    unscaled[i] = ab + c0[i];
  }
  return {{"alpha op(A) op(B) without the beta C0 term", no_beta},
          {"op(A) op(B) + beta C0 (alpha left out)", no_alpha},
          {"alpha op(A) op(B) + C0 (C0 not scaled by beta)", unscaled}};
}

/// Checks `got` against tolerance 1 (every element) and, for TF32 and BF16, `exact` against
/// tolerance 2 (in norm). On failure it says what tensor_matches() says (tests/support/
/// tensor_check.hpp): the kernel and the case, C's shape [m, n], expected and actual at the
/// first elements past their bound and at the worst (each with its bound), and the slip that
/// explains them where one does: a transpose, a sign, a factor, an index off by one, elements
/// never written, where the wrong ones lie, a slip of the epilogue (epilogue_slips()), operands
/// not rounded (the `exact` product), or one of `slips()` (mistakes the caller knows and
/// computes, asked for only on failure).
inline ::testing::AssertionResult within_bounds(const std::string& what, const Case& c, int K,
                                                const std::vector<float>& got, const Product& ref,
                                                const std::vector<float>& c0, Precision precision, const Product* exact,
                                                const std::function<std::vector<testkit::KnownSlip>()>& slips = {}) {
  double worst_ratio = -1;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(static_cast<double>(got[i]) - ref.c[i]);
    const double ratio = std::isfinite(got[i]) ? err / sum_bound(c, K, ref, c0, i) : INFINITY;
    if (ratio > worst_ratio) worst_ratio = ratio;
  }
  const TensorShape shape{{"m", c.M}, {"n", c.N}};
  if (worst_ratio > 1) {
    // Entry i passes within its own bound; the diagnosis, which compares values across entries,
    // uses the largest bound of any entry.
    double largest = 0;
    for (std::size_t i = 0; i < got.size(); ++i) largest = std::max(largest, sum_bound(c, K, ref, c0, i));
    const testkit::EntryRule rule{
        [&](std::size_t i, double) { return sum_bound(c, K, ref, c0, i); },
        [largest](double a, double e) { return std::fabs(a - e) <= largest; },
        "an element passes within 4 u (sqrt(K) + 2) sum|a b| + u |beta C0| of the exact product of the operands "
        "as the kernel rounds them",
        true};
    std::vector<std::string> notes;
    std::ostringstream worst_note;
    worst_note << "the worst is " << worst_ratio << " x its bound";
    notes.push_back(worst_note.str());
    bool nan = false;
    for (float v : got) nan = nan || std::isnan(v);
    if (nan && c.beta == 0.f)
      notes.push_back(
          "C starts as NaN when beta = 0: an element never written stays NaN, and so does one computed as "
          "alpha AB + 0 x C (C must not be read when beta is 0)");
    std::vector<testkit::KnownSlip> known = epilogue_slips(c, ref, c0);
    if (exact && precision != Precision::FP32)  // a TF32 or BF16 kernel that does not round its operands
      known.push_back(
          {"operands not rounded to " + precision_name(precision) + " (the product of the FP32 values)", exact->c});
    if (slips) {
      const std::vector<testkit::KnownSlip> more = slips();
      known.insert(known.end(), more.begin(), more.end());
    }
    return ::testing::AssertionFailure() << testkit::describe_mismatch(
               what + ", " + c.str(), shape, std::vector<double>(got.begin(), got.end()), ref.c, rule, known, notes);
  }
  if (exact && precision != Precision::FP32) {
    double diff = 0, norm = 0, far = -1;
    std::size_t at = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      const double d = got[i] - exact->c[i];
      diff += d * d;
      norm += exact->c[i] * exact->c[i];
      if (std::fabs(d) > far) far = std::fabs(d), at = i;
    }
    const double rel = std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
    const double bound = 2 * unit_roundoff(precision);
    if (rel > bound)
      return ::testing::AssertionFailure()
             << what << ", " << c.str() << ", shape " << shape.str()
             << ": every element is within its bound of the product of the operands rounded to "
             << precision_name(precision) << ", but against the exact product of the unrounded ones ||C - exact|| / "
             << "||exact|| = " << rel << " > 2 u_" << precision_name(precision) << " = " << bound
             << "\n    the element farthest from it at " << shape.where(at) << ": exact " << exact->c[at] << ", actual "
             << got[at] << ", the product of the rounded operands " << ref.c[at] << "\n";
  }
  return ::testing::AssertionSuccess();
}

/// Shapes that are not multiples of any tile (8, 16, 32, 64, 128), tiles +- 1, single rows and
/// columns, tall and wide, a long K, an empty K.
inline std::vector<Case> shape_classes() {
  return {{1, 1, 1},       {7, 7, 7},       {33, 31, 17},     {64, 64, 16},   {65, 63, 33},   {127, 129, 100},
          {1, 200, 50},    {200, 1, 50},    {1, 1, 1000},     {300, 7, 64},   {7, 300, 64},   {129, 257, 1025},
          {128, 128, 128}, {256, 256, 256}, {1000, 16, 9},    {16, 9, 3000},  {50, 60, 0}};
}

/// A few large products: every tile and stage of the big configurations in use.
inline std::vector<Case> large_cases() {
  return {{1024, 1024, 1024}, {2048, 64, 512, true, false}, {64, 2048, 512, false, true}, {520, 1000, 777, true, true}};
}

/// Runs `run(case, A, B, C)` on the device for every case and layout: with beta = 0, C starts
/// as NaN, so an element the kernel never writes fails; 64 guard values on each side of C
/// must come back untouched. Inputs are drawn afresh for every case. Stops at the first failure.
template <typename Run>
void expect_products_right(const std::string& what, Precision precision, std::vector<Case> cases, Run&& run,
                           bool every_layout = true) {
  constexpr int kGuard = 64;
  constexpr float kSentinel = 12345.f;
  std::vector<Case> all;
  for (const Case& c : cases)
    for (int t = 0; t < (every_layout ? 4 : 1); ++t)
      for (int ab = 0; ab < (every_layout ? 2 : 1); ++ab) {
        Case x = c;
        x.trans_a = every_layout ? (t & 1) != 0 : c.trans_a;
        x.trans_b = every_layout ? (t & 2) != 0 : c.trans_b;
        if (ab == 1) x.alpha = -0.75f, x.beta = 0.5f;
        all.push_back(x);
      }
  std::uint64_t seed = 1;
  for (const Case& c : all) {
    ++seed;
    const std::size_t a_n = static_cast<std::size_t>(c.M) * c.K, b_n = static_cast<std::size_t>(c.K) * c.N,
                      mn = static_cast<std::size_t>(c.M) * c.N;
    const std::vector<float> a = random_floats(a_n, 7 * seed), b = random_floats(b_n, 7 * seed + 1);
    const std::vector<float> c0 = c.beta == 0.f ? std::vector<float>(mn, std::numeric_limits<float>::quiet_NaN())
                                                : random_floats(mn, 7 * seed + 2);
    std::vector<float> a_buf(c.offset, 0.f), b_buf(c.offset, 0.f), c_buf(kGuard + c.offset, kSentinel);
    a_buf.insert(a_buf.end(), a.begin(), a.end());
    b_buf.insert(b_buf.end(), b.begin(), b.end());
    c_buf.insert(c_buf.end(), c0.begin(), c0.end());
    c_buf.insert(c_buf.end(), kGuard, kSentinel);
    DeviceBuffer<float> A, B, C;
    A.upload(a_buf.empty() ? std::vector<float>{0.f} : a_buf);
    B.upload(b_buf.empty() ? std::vector<float>{0.f} : b_buf);
    C.upload(c_buf);
    run(c, A.get() + c.offset, B.get() + c.offset, C.get() + kGuard + c.offset);
    CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<float> out = C.download();
    for (int g = kGuard + c.offset - 1; g >= 0; --g)  // nearest C first
      ASSERT_EQ(out[static_cast<std::size_t>(g)], kSentinel)
          << what << ", " << c.str() << ": wrote before C [m=" << c.M << ", n=" << c.N << "], at C["
          << g - kGuard - c.offset << "] (" << kGuard + c.offset - g << " floats before C[0]; the guard value is "
          << kSentinel << ")";
    for (std::size_t g = kGuard + c.offset + mn; g < out.size(); ++g)
      ASSERT_EQ(out[g], kSentinel) << what << ", " << c.str() << ": wrote past C [m=" << c.M << ", n=" << c.N
                                   << "], at C[" << g - kGuard - c.offset << "] (" << g - kGuard - c.offset - mn + 1
                                   << " floats past its last element; the guard value is " << kSentinel << ")";
    const std::vector<float> got(out.begin() + kGuard + c.offset, out.begin() + kGuard + c.offset + static_cast<long>(mn));
    const Product ref = cpu_product(c, rounded(a, precision), rounded(b, precision), c0);
    const Product exact = precision == Precision::FP32 ? Product{} : cpu_product(c, a, b, c0);
    const ::testing::AssertionResult ok =
        within_bounds(what, c, c.K, got, ref, c0, precision, precision == Precision::FP32 ? nullptr : &exact);
    if (!ok) FAIL() << ok.message();
  }
}

/// expect_products_right() for course::gemm(kernel, ...).
inline void expect_kernel_right(int kernel, const std::vector<Case>& cases, bool every_layout = true) {
  register_fast_gemm_kernels();
  const std::string what = "gemm kernel " + std::to_string(kernel) + " (" + gemm_kernel_name(kernel) + ")";
  expect_products_right(what, gemm_precision(kernel), cases,
                        [kernel](const Case& c, const float* A, const float* B, float* C) {
                          gemm(kernel, c.trans_a, c.trans_b, c.M, c.N, c.K, c.alpha, A, B, c.beta, C);
                        },
                        every_layout);
}

/// Misaligned copies of some shape classes, for the kernels' single-float loads.
inline std::vector<Case> misaligned_cases() {
  std::vector<Case> out;
  for (Case c : {Case{64, 64, 64}, Case{100, 36, 40}, Case{33, 65, 128}}) {
    c.offset = 1;
    out.push_back(c);
  }
  return out;
}

/// gemm_bf16(kernel, ...) on BF16 copies of the case's operands (rounded on the host by the test's own
/// rounding); the misaligned cases stay misaligned in BF16 (offset by one 2-byte value).
inline void run_on_bf16_inputs(int kernel, const Case& c, const float* A, const float* B, float* C) {
  const std::size_t a_n = static_cast<std::size_t>(c.M) * c.K, b_n = static_cast<std::size_t>(c.K) * c.N;
  std::vector<float> a(a_n), b(b_n);
  if (a_n) CUDA_CHECK(cudaMemcpy(a.data(), A, a_n * 4, cudaMemcpyDeviceToHost));
  if (b_n) CUDA_CHECK(cudaMemcpy(b.data(), B, b_n * 4, cudaMemcpyDeviceToHost));
  const std::vector<std::uint16_t> a16 = bf16_bits(rounded(a, Precision::BF16)), b16 = bf16_bits(rounded(b, Precision::BF16));
  DeviceBuffer<std::uint16_t> A16(a_n + 8), B16(b_n + 8);  // 16-byte aligned, with room for the offset
  const int off = c.offset;
  if (a_n) CUDA_CHECK(cudaMemcpy(A16.get() + off, a16.data(), a_n * 2, cudaMemcpyHostToDevice));
  if (b_n) CUDA_CHECK(cudaMemcpy(B16.get() + off, b16.data(), b_n * 2, cudaMemcpyHostToDevice));
  gemm_bf16(kernel, c.trans_a, c.trans_b, c.M, c.N, c.K, c.alpha, reinterpret_cast<const __nv_bfloat16*>(A16.get() + off),
            reinterpret_cast<const __nv_bfloat16*>(B16.get() + off), c.beta, C);
  CUDA_CHECK(cudaDeviceSynchronize());  // before the BF16 copies are freed
}

/// expect_products_right() for gemm_bf16(kernel, ...) at every shape class, misaligned case and large case.
inline void expect_bf16_inputs_right(int kernel) {
  register_fast_gemm_kernels();
  const std::string what = "gemm_bf16 on kernel " + std::to_string(kernel) + " (BF16 inputs)";
  const auto run = [kernel](const Case& c, const float* A, const float* B, float* C) { run_on_bf16_inputs(kernel, c, A, B, C); };
  expect_products_right(what, Precision::BF16, shape_classes(), run);
  expect_products_right(what, Precision::BF16, misaligned_cases(), run);
  expect_products_right(what, Precision::BF16, large_cases(), run, /*every_layout=*/false);
}

/// Split-K in one launch: `run(c, k_slice, A, B, P)` writes the partial products of c over
/// slices of k_slice into P. Every partial product must be written (they start as NaN),
/// nothing past the last one, and partial z must be the product over slice z of K alone.
template <typename Run>
void expect_slices_right(const std::string& what, Precision precision, const std::vector<Case>& cases,
                         const std::vector<int>& k_slices, Run&& run) {
  constexpr float kSentinel = 12345.f;
  for (Case c : cases) {
    for (int t = 0; t < 4; ++t) {
      c.trans_a = t & 1, c.trans_b = t & 2;
      for (const int k_slice : k_slices) {
        const int slices = (c.K + k_slice - 1) / k_slice;
        const std::size_t mn = static_cast<std::size_t>(c.M) * c.N;
        const std::vector<float> a = random_floats(static_cast<std::size_t>(c.M) * c.K, 5 + t);
        const std::vector<float> b = random_floats(static_cast<std::size_t>(c.K) * c.N, 9 + t);
        std::vector<float> init(mn * slices, std::numeric_limits<float>::quiet_NaN());
        init.resize(mn * slices + 64, kSentinel);
        DeviceBuffer<float> A, B, P;
        A.upload(a), B.upload(b), P.upload(init);
        run(c, k_slice, A.get(), B.get(), P.get());
        CUDA_CHECK(cudaDeviceSynchronize());
        const std::vector<float> parts = P.download();
        for (std::size_t g = mn * slices; g < parts.size(); ++g)
          ASSERT_EQ(parts[g], kSentinel) << what << ", " << c.str() << ": wrote past the last partial [" << slices
                                         << " x " << c.M << " x " << c.N << "], " << g - mn * slices + 1
                                         << " floats past its end (the guard value is " << kSentinel << ")";
        const std::vector<float> ar = rounded(a, precision), br = rounded(b, precision);
        for (int z : {0, slices / 2, slices - 1}) {
          const int k0 = z * k_slice, k1 = std::min(c.K, k0 + k_slice);
          const Product ref = cpu_product(c, ar, br, {}, k0, k1);
          const std::vector<float> got(parts.begin() + static_cast<long>(z * mn), parts.begin() + static_cast<long>((z + 1) * mn));
          // Slips of the slicing: the product over all of K, or over k < the slice's end (the slices' sums
          // accumulated), and the slice next to it.
          const auto slicing_slips = [&, z, k0, k1, k_slice] {
            std::vector<testkit::KnownSlip> v = {
                {"the product over all of K (the slice's range ignored)", cpu_product(c, ar, br, {}).c},
                {"the product over k < " + std::to_string(k1) + " (the sums of slices 0 to " + std::to_string(z) +
                     " accumulated)",
                 cpu_product(c, ar, br, {}, 0, k1).c}};
            if (k1 < c.K)
              v.push_back({"the next slice's product (over k in [" + std::to_string(k1) + ", " +
                               std::to_string(std::min(c.K, k1 + k_slice)) + "))",
                           cpu_product(c, ar, br, {}, k1, std::min(c.K, k1 + k_slice)).c});
            if (k0 > 0)
              v.push_back({"the previous slice's product (over k in [" + std::to_string(k0 - k_slice) + ", " +
                               std::to_string(k0) + "))",
                           cpu_product(c, ar, br, {}, k0 - k_slice, k0).c});
            return v;
          };
          const ::testing::AssertionResult ok =
              within_bounds(what + ", split-K slice " + std::to_string(z) + " of " + std::to_string(slices) +
                                " (slices of " + std::to_string(k_slice) + ", this one over k in [" +
                                std::to_string(k0) + ", " + std::to_string(k1) + "))",
                            c, k1 - k0, got, ref, {}, precision, nullptr, slicing_slips);
          if (!ok) FAIL() << ok.message();
        }
      }
    }
  }
}

/// Split-K through gemm_k_slices() for kernel `kernel`, at sizes and slices that leave partial
/// tiles and slices of every kind.
inline void expect_k_slices_right(int kernel) {
  register_fast_gemm_kernels();
  expect_slices_right("kernel " + std::to_string(kernel), gemm_precision(kernel),
                      {Case{16, 9, 5000}, Case{65, 63, 1000}, Case{7, 130, 33}, Case{32, 144, 2048}},
                      {1, 7, 16, 100, 256, 5000}, [&](const Case& c, int k_slice, const float* A, const float* B, float* P) {
                        gemm_k_slices(kernel, c.trans_a, c.trans_b, c.M, c.N, c.K, k_slice, A, B, P);
                      });
}

}  // namespace course::s07test

/// The four checks every GEMM kernel of this stage answers to, as four tests of suite `Suite`,
/// each starting with `skip` (SKIP_WITHOUT_GPU() or a narrower one): every shape class and
/// layout; misaligned and odd rows (which a kernel may take with narrower loads, or hand to a
/// simpler kernel); large products (one layout); split-K slices. A task's own tests follow it.
#define COURSE_GEMM_KERNEL_TESTS(Suite, kernel, skip)                                      \
  TEST(Suite, EveryShapeClassAndLayout) {                                                 \
    skip;                                                                                 \
    ::course::s07test::expect_kernel_right(kernel, ::course::s07test::shape_classes());    \
  }                                                                                       \
  TEST(Suite, MisalignedAndOddRows) {                                                     \
    skip;                                                                                 \
    ::course::s07test::expect_kernel_right(kernel, ::course::s07test::misaligned_cases()); \
  }                                                                                       \
  TEST(Suite, LargeProducts) {                                                            \
    skip;                                                                                 \
    ::course::s07test::expect_kernel_right(kernel, ::course::s07test::large_cases(),       \
                                           /*every_layout=*/false);                       \
  }                                                                                       \
  TEST(Suite, SplitKSlices) {                                                             \
    skip;                                                                                 \
    ::course::s07test::expect_k_slices_right(kernel);                                     \
  }
