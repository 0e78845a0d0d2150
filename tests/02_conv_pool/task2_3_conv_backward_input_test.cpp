// Task 2.3: the input gradient of conv2d (a full convolution of the output
// gradient with the flipped kernel), checked by central differences of the
// plain reference forward (reference.hpp), so these tests need Task 2.3 alone.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "02_conv_pool/conv.hpp"
#include "conv_cases.hpp"
#include "course_test.hpp"
#include "planted_mistakes.hpp"
#include "reference.hpp"
#include "tensor_check.hpp"

using namespace course;
using reference::ConvCase;

namespace {
void check_input_gradient(const ConvCase& c) {
  const ConvGeometry& g = c.g;
  auto x = testkit::random_vector(c.B * g.in_size(), 31);
  const auto W = testkit::random_vector(g.weight_size(), 32), b = testkit::random_vector(g.C_out, 33),
             r = testkit::random_vector(c.B * g.out_size(), 34);
  std::vector<double> dx(x.size(), 777.0);  // stale values must be overwritten
  conv2d_backward_input(r.data(), W.data(), dx.data(), c.B, g);
  auto loss = [&] { return testkit::weighted_sum(reference::conv_forward(x, W, b, c.B, g), r); };
  GradCheckOptions opt;
  opt.tolerance = 1e-6;  // linear in x: only rounding separates the two
  opt.max_samples = 128;  // the input is the tensor where padding and stride mistakes show: look harder
  auto result = check_gradient("dx of conv (" + reference::describe(c) + ")", x.data(),
                               {{"n", c.B}, {"ci", g.C_in}, {"ih", g.H}, {"iw", g.W}}, dx.data(), loss, opt);
  planted::name_mistake(result, planted::conv_input_mistake(dx, r, W, c.B, g));
  EXPECT_GRADIENT_OK(result);
}
}  // namespace

TEST(Task2_3_ConvBackwardInput, K3Pad1NonSquareBatch) { check_input_gradient(reference::kK3Pad1NonSquare); }
TEST(Task2_3_ConvBackwardInput, K3Pad0) { check_input_gradient(reference::kK3Pad0); }
TEST(Task2_3_ConvBackwardInput, K5Pad2) { check_input_gradient(reference::kK5Pad2); }
TEST(Task2_3_ConvBackwardInput, K3Pad2) { check_input_gradient(reference::kK3Pad2); }
TEST(Task2_3_ConvBackwardInput, K1) { check_input_gradient(reference::kK1); }
TEST(Task2_3_ConvBackwardInput, K1Stride2) { check_input_gradient(reference::kK1Stride2); }
TEST(Task2_3_ConvBackwardInput, K3Pad1Stride2) { check_input_gradient(reference::kK3Pad1Stride2); }
TEST(Task2_3_ConvBackwardInput, K5Pad1Stride2) { check_input_gradient(reference::kK5Pad1Stride2); }
TEST(Task2_3_ConvBackwardInput, K5Pad2Stride2) { check_input_gradient(reference::kK5Pad2Stride2); }
TEST(Task2_3_ConvBackwardInput, K3Pad0Stride3) { check_input_gradient(reference::kK3Pad0Stride3); }

// Where one output's gradient lands, worked by hand. With dy = 1 at output
// (oh, ow) and 0 elsewhere, dx is the kernel itself laid over that output's
// window (rows oh*S - P ..., columns ow*S - P ...), cut off where the window
// covers padding. Summing over outputs, each dx cell meets the kernel from the
// other side, which is why the formula has the kernel flipped.
TEST(Task2_3_ConvBackwardInput, OneOutputGradientLandsOnItsWindow) {
  const std::vector<double> W = {1, 2, 3, 4, 5, 6, 7, 8, 9};  // 3x3, one channel
  // dx of the one-hot dy `dy` against `want`, and against what the classic slips give.
  const auto check = [&](const ConvGeometry& g, const std::vector<double>& dy, const std::vector<double>& want,
                         const std::string& what) {
    std::vector<double> dx(16, -1.0);  // a cell never written stays -1
    conv2d_backward_input(dy.data(), W.data(), dx.data(), 1, g);
    std::vector<testkit::KnownSlip> slips;
    planted::ConvMistakes unflipped;
    unflipped.flip_kernel = false;
    slips.push_back({"the kernel NOT flipped", planted::conv_input_gradient(dy, W, 1, g, unflipped)});
    for (int shift : {-1, 1}) {
      planted::ConvMistakes shifted;
      shifted.input_pad_shift = shift;
      slips.push_back({"landing as if the padding were " + std::to_string(g.P + shift) + ", not " + std::to_string(g.P),
                       planted::conv_input_gradient(dy, W, 1, g, shifted)});
    }
    EXPECT_TRUE(testkit::tensor_matches("dx of a 3x3 kernel 1..9 on a 4x4 image, " + what, {{"ih", 4}, {"iw", 4}}, dx,
                                        want, testkit::kDoubleEq, slips));
  };
  {  // pad 1, output (0, 0): its window starts at (-1, -1), so only W[1..2][1..2] lands, at dx[0..1][0..1]
    std::vector<double> dy(16, 0.0);
    dy[0] = 1;
    check({1, 4, 4, 1, 3, 1, 1}, dy, {5, 6, 0, 0, 8, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, "pad 1, dy = 1 at output (0, 0)");
  }
  {  // pad 0, output (1, 1) of a 4x4 image: the whole kernel lands at dx[1..3][1..3]
    std::vector<double> dy(4, 0.0);
    dy[3] = 1;
    check({1, 4, 4, 1, 3, 0, 1}, dy, {0, 0, 0, 0, 0, 1, 2, 3, 0, 4, 5, 6, 0, 7, 8, 9}, "pad 0, dy = 1 at output (1, 1)");
  }
}
