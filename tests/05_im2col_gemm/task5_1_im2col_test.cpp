// Task 5.1: im2col on the GPU, against a hand-worked example and the plain CPU
// reference for every padding 0, 1, 2, stride 1, 2 and kernel 1, 3, 5. im2col
// only copies, so the result must be exact.
#include <gtest/gtest.h>

#include <vector>

#include "05_im2col_gemm/im2col.hpp"
#include "im2col_reference.hpp"
#include "stage05_support.hpp"

using namespace course;
using namespace course::s05test;

namespace {
std::vector<float> im2col_on_gpu(const std::vector<float>& x, int B, const ConvGeometry& g) {
  const DeviceBuffer<float> dx = to_device(x);
  DeviceBuffer<float> U = poisoned<float>(unrolled_floats(B, g));
  im2col_gpu(dx.get(), B, g, U.get());
  return to_host(U);
}

// U [B*Ho*Wo, C_in*K*K] seen as the [n, oh, ow, c, kh, kw] it is laid out as (a row per output
// pixel, its patch in (c, kh, kw) order): a wrong entry is named by the pixel and the tap, and an
// index off by one by the axis it is off along.
TensorShape unrolled_shape(int B, const ConvGeometry& g) {
  return {{"n", B}, {"oh", g.out_h()}, {"ow", g.out_w()}, {"c", g.C_in}, {"kh", g.K}, {"kw", g.K}};
}
}  // namespace

// x = 1 2 3    2x2 patches, padding 1, stride 2: four output pixels, each a row of U
//     4 5 6    holding its patch in (kh, kw) order, 0 where the patch hangs over
//     7 8 9    the border.
TEST(Task5_1_Im2col, HandExample) {
  SKIP_WITHOUT_GPU();
  const ConvGeometry g{1, 3, 3, 1, 2, 1, 2};
  const std::vector<float> want = {0, 0, 0, 1,   // pixel (0, 0): rows -1..0, columns -1..0
                                   0, 0, 2, 3,   // pixel (0, 1): rows -1..0, columns 1..2
                                   0, 4, 0, 7,   // pixel (1, 0): rows 1..2, columns -1..0
                                   5, 6, 8, 9};  // pixel (1, 1)
  EXPECT_TRUE(close("U", im2col_on_gpu({1, 2, 3, 4, 5, 6, 7, 8, 9}, 1, g), want, unrolled_shape(1, g), 0, 0));
}

// The grid of shapes: U must equal the reference element for element, padding zeros included.
TEST(Task5_1_Im2col, MatchesTheReferenceForEveryPaddingStrideAndKernel) {
  SKIP_WITHOUT_GPU();
  for (const UnrollCase& c : unroll_cases()) {
    const std::vector<float> x = random_floats(static_cast<std::size_t>(c.B) * c.g.in_size(), 11);
    EXPECT_TRUE(close("U of " + c.g.str(), im2col_on_gpu(x, c.B, c.g), im2col_reference(x, c.B, c.g),
                      unrolled_shape(c.B, c.g), 0, 0));
  }
}

// The rows of image n in a batch are the rows of image n unrolled alone, in
// place: the batch layout is the single-image layout stacked.
TEST(Task5_1_Im2col, BatchIsTheImagesStacked) {
  SKIP_WITHOUT_GPU();
  const ConvGeometry g{3, 6, 5, 1, 3, 1, 1};
  const int B = 3;
  const std::vector<float> x = random_floats(static_cast<std::size_t>(B) * g.in_size(), 12);
  const std::vector<float> batch = im2col_on_gpu(x, B, g);
  for (int n = 0; n < B; ++n) {
    const std::vector<float> image(x.begin() + n * g.in_size(), x.begin() + (n + 1) * g.in_size());
    const std::vector<float> alone = im2col_on_gpu(image, 1, g);
    const std::vector<float> rows(batch.begin() + static_cast<long>(n * alone.size()),
                                  batch.begin() + static_cast<long>((n + 1) * alone.size()));
    EXPECT_TRUE(close("rows of image " + std::to_string(n), rows, alone, unrolled_shape(1, g), 0, 0));
  }
}
