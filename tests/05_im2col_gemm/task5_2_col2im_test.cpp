// Task 5.2: col2im on the GPU: a hand-worked example of the sum over
// overlapping patches, the plain CPU reference for every padding 0, 1, 2,
// stride 1, 2 and kernel 1, 3, 5, and the adjoint identity
// <im2col(x), c> = <x, col2im(c)>, with im2col taken from the CPU reference so
// that this task's tests need no other task.
//
// Tolerance: |got - ref| <= 1e-6 + 1e-5 |ref| (a sum of at most K*K = 25 float
// values, against a double reference).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "05_im2col_gemm/im2col.hpp"
#include "im2col_reference.hpp"
#include "stage05_support.hpp"

using namespace course;
using namespace course::s05test;

namespace {
constexpr double kAtol = 1e-6, kRtol = 1e-5;

std::vector<float> col2im_on_gpu(const std::vector<float>& dU, int B, const ConvGeometry& g) {
  const DeviceBuffer<float> d = to_device(dU);
  DeviceBuffer<float> dx = poisoned<float>(static_cast<std::size_t>(B) * g.in_size());
  col2im_gpu(d.get(), B, g, dx.get());
  return to_host(dx);
}

}  // namespace

// 2x2 patches with stride 1 on a 3x3 image: the middle value sits in all four
// patches, the edges in two, the corners in one. With every entry of dU equal
// to 1, col2im counts the copies.
TEST(Task5_2_Col2im, SumsOverlappingPatches) {
  SKIP_WITHOUT_GPU();
  const ConvGeometry g{1, 3, 3, 1, 2, 0, 1};
  const std::vector<float> ones(unrolled_floats(1, g), 1.f);
  EXPECT_TRUE(
      close("dx", col2im_on_gpu(ones, 1, g), std::vector<float>{1, 2, 1, 2, 4, 2, 1, 2, 1}, input_shape(1, g), 0, 0));
}

TEST(Task5_2_Col2im, MatchesTheReferenceForEveryPaddingStrideAndKernel) {
  SKIP_WITHOUT_GPU();
  for (const UnrollCase& c : unroll_cases()) {
    const std::vector<float> dU = random_floats(unrolled_floats(c.B, c.g), 13);
    EXPECT_TRUE(close("dx of " + c.g.str(), col2im_on_gpu(dU, c.B, c.g), col2im_reference(to_double(dU), c.B, c.g),
                      input_shape(c.B, c.g), kAtol, kRtol));
  }
}

// col2im is im2col transposed: for any x and c of matching shapes,
// sum(im2col(x) * c) = sum(x * col2im(c)). Checked in double on the GPU's
// col2im, to 1e-5 of the sum of the terms' magnitudes.
TEST(Task5_2_Col2im, IsTheAdjointOfIm2col) {
  SKIP_WITHOUT_GPU();
  for (const UnrollCase& c : unroll_cases()) {
    const std::vector<float> x = random_floats(static_cast<std::size_t>(c.B) * c.g.in_size(), 14);
    const std::vector<float> cols = random_floats(unrolled_floats(c.B, c.g), 15);
    const std::vector<float> U = im2col_reference(x, c.B, c.g);
    const std::vector<float> back = col2im_on_gpu(cols, c.B, c.g);
    double left = 0, right = 0, scale = 0;
    for (std::size_t i = 0; i < U.size(); ++i) {
      left += static_cast<double>(U[i]) * cols[i];
      scale += std::fabs(static_cast<double>(U[i]) * cols[i]);
    }
    for (std::size_t i = 0; i < x.size(); ++i) right += static_cast<double>(x[i]) * back[i];
    EXPECT_NEAR(right, left, 1e-5 * scale + 1e-12)
        << c.g.str() << ": <x, col2im(c)> (first) differs from <im2col(x), c> (second)";
  }
}
