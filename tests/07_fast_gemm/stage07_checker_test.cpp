// The check of stage 07 is itself checked: products with planted mistakes must fail it.
// The bound tests run on the CPU (in CI); the device-side ones (an unwritten element, a
// write past C) need a GPU.
#include <gtest/gtest.h>
#include <gtest/gtest-spi.h>

#include <cmath>
#include <string>
#include <vector>

#include "fast_gemm_check.hpp"

using namespace course;
using namespace course::s07test;

namespace {

struct Planted {
  Case c;
  std::vector<float> a, b, c0;
};

Planted make(Case c, std::uint64_t seed) {
  Planted p{c, random_floats(static_cast<std::size_t>(c.M) * c.K, seed), random_floats(static_cast<std::size_t>(c.K) * c.N, seed + 1),
            random_floats(static_cast<std::size_t>(c.M) * c.N, seed + 2)};
  return p;
}

std::vector<float> as_float(const std::vector<double>& v) { return {v.begin(), v.end()}; }

// Does the check accept `got` as the product of p at `precision`?
::testing::AssertionResult accepted(const Planted& p, const std::vector<float>& got, Precision precision) {
  const Product ref = cpu_product(p.c, rounded(p.a, precision), rounded(p.b, precision), p.c0);
  const Product exact = cpu_product(p.c, p.a, p.b, p.c0);
  return within_bounds("planted", p.c, p.c.K, got, ref, p.c0, precision, &exact);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

// The right answer, rounded to float, passes at every precision and size: the bound is not too tight.
TEST(Stage07_Checker, AcceptsTheExactProductRoundedToFloat) {
  for (const Precision precision : {Precision::FP32, Precision::TF32, Precision::BF16})
    for (const Case& c : {Case{33, 17, 1}, Case{64, 64, 64}, Case{40, 30, 1000, true, false, -0.75f, 0.5f}}) {
      const Planted p = make(c, 11);
      const Product ref = cpu_product(c, rounded(p.a, precision), rounded(p.b, precision), p.c0);
      EXPECT_TRUE(accepted(p, as_float(ref.c), precision)) << precision_name(precision) << " " << c.str();
    }
}

// One term of every sum left out (a tile edge off by one): caught at K = 1000, at every precision.
TEST(Stage07_Checker, RejectsASumMissingItsLastTerm) {
  for (const Precision precision : {Precision::FP32, Precision::TF32, Precision::BF16}) {
    Case c{40, 30, 1000};
    const Planted p = make(c, 21);
    Case shorter = c;
    const Product wrong = cpu_product(shorter, rounded(p.a, precision), rounded(p.b, precision), p.c0, 0, c.K - 1);
    EXPECT_FALSE(accepted(p, as_float(wrong.c), precision)) << precision_name(precision);
  }
}

// B read as if it were not transposed.
TEST(Stage07_Checker, RejectsAnOperandReadInTheWrongLayout) {
  Case c{48, 48, 48, false, true};
  const Planted p = make(c, 31);
  Case misread = c;
  misread.trans_b = false;
  EXPECT_FALSE(accepted(p, as_float(cpu_product(misread, p.a, p.b, p.c0).c), Precision::FP32));
}

// alpha or beta forgotten.
TEST(Stage07_Checker, RejectsAlphaOrBetaLeftOut) {
  Case c{20, 20, 20, false, false, -0.75f, 0.5f};
  const Planted p = make(c, 41);
  Case no_alpha = c, no_beta = c;
  no_alpha.alpha = 1.f;
  no_beta.beta = 0.f;
  const ::testing::AssertionResult a = accepted(p, as_float(cpu_product(no_alpha, p.a, p.b, p.c0).c), Precision::FP32);
  const ::testing::AssertionResult b = accepted(p, as_float(cpu_product(no_beta, p.a, p.b, p.c0).c), Precision::FP32);
  EXPECT_FALSE(a);
  EXPECT_FALSE(b);
  // The message names the slip.
  EXPECT_TRUE(has(a.message(), "diagnosis: actual is what op(A) op(B) + beta C0 (alpha left out) gives"))
      << a.message();
  EXPECT_TRUE(has(b.message(), "diagnosis: actual is what alpha op(A) op(B) without the beta C0 term gives"))
      << b.message();
  EXPECT_TRUE(has(b.message(), "shape [m=20, n=20]")) << b.message();
}

// A TF32 or BF16 kernel that does not round its operands (the tensor cores would then cut them,
// rounding toward zero) or that claims a precision it does not have, at K = 64.
TEST(Stage07_Checker, RejectsOperandsCutInsteadOfRoundedOrNotRoundedAtAll) {
  Case c{64, 64, 64};
  const Planted p = make(c, 51);
  for (const auto& [precision, keep] : {std::pair{Precision::TF32, 0xFFFFE000u}, std::pair{Precision::BF16, 0xFFFF0000u}}) {
    auto cut = [keep = keep](std::vector<float> v) {
      for (float& x : v) {
        std::uint32_t u;
        std::memcpy(&u, &x, 4);
        u &= keep;
        std::memcpy(&x, &u, 4);
      }
      return v;
    };
    EXPECT_FALSE(accepted(p, as_float(cpu_product(c, cut(p.a), cut(p.b), p.c0).c), precision))
        << precision_name(precision) << ": operands cut";
    const ::testing::AssertionResult not_rounded = accepted(p, as_float(cpu_product(c, p.a, p.b, p.c0).c), precision);
    EXPECT_FALSE(not_rounded) << precision_name(precision) << ": operands not rounded (FP32 math claiming "
                              << precision_name(precision) << ")";
    EXPECT_TRUE(has(not_rounded.message(), "actual is what operands not rounded to " + precision_name(precision)))
        << not_rounded.message();
  }
}

// A BF16 product that is wrong by more than BF16's own error fails the norm check even when
// compared with itself: the second bound is not vacuous.
TEST(Stage07_Checker, TheNormBoundCatchesALowerPrecisionThanClaimed) {
  Case c{64, 64, 256};
  const Planted p = make(c, 61);
  const std::vector<float> fp8ish = [&] {  // 4 significant bits: far below BF16's 8
    std::vector<float> a4 = p.a, b4 = p.b;
    for (float& x : a4) x = reference_round(x, 4);
    for (float& x : b4) x = reference_round(x, 4);
    return as_float(cpu_product(c, a4, b4, p.c0).c);
  }();
  EXPECT_FALSE(accepted(p, fp8ish, Precision::BF16));
}

namespace {
void leaves_one_element_unwritten(const Case& c, const float* A, const float* B, float* C) {
  gemm(kGemmCublas, c.trans_a, c.trans_b, c.M, c.N, c.K, c.alpha, A, B, c.beta, C);
  CUDA_CHECK(cudaMemset(C + 5, 0xFF, sizeof(float)));  // NaN, as if never written
}
void writes_past_c(const Case& c, const float* A, const float* B, float* C) {
  gemm(kGemmCublas, c.trans_a, c.trans_b, c.M, c.N, c.K, c.alpha, A, B, c.beta, C);
  CUDA_CHECK(cudaMemset(C + static_cast<std::size_t>(c.M) * c.N, 0, sizeof(float)));
}
void check_unwritten() {
  expect_products_right("planted", Precision::FP32, {Case{16, 16, 16}}, &leaves_one_element_unwritten, false);
}
void check_past_c() { expect_products_right("planted", Precision::FP32, {Case{16, 16, 16}}, &writes_past_c, false); }
}  // namespace

TEST(Stage07_Checker, RejectsAnUnwrittenElementAndAWritePastC) {
  SKIP_WITHOUT_GPU();
  EXPECT_FATAL_FAILURE(check_unwritten(), "planted");
  EXPECT_FATAL_FAILURE(check_past_c(), "wrote past C");
}
