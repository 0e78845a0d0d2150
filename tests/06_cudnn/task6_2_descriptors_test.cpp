// Task 6.2: the descriptors say exactly what stage 02's layers compute, read
// back from cuDNN for every conv shape of stage 02's gradient checks.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../02_conv_pool/conv_cases.hpp"
#include "06_cudnn/descriptors.hpp"
#include "s06_support.hpp"

using namespace course;
using reference::ConvCase;

namespace {

const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> cases = {
      reference::kK3Pad1NonSquare, reference::kK3Pad0,        reference::kK5Pad2,        reference::kK3Pad2,
      reference::kK1,              reference::kK1Stride2,     reference::kK3Pad1Stride2, reference::kK5Pad1Stride2,
      reference::kK5Pad2Stride2,   reference::kK3Pad0Stride3, {64, ConvGeometry{1, 28, 28, 16, 3, 1, 1}},
      {64, ConvGeometry{16, 14, 14, 32, 3, 1, 1}}};
  return cases;
}

// A packed NCHW float tensor [n, c, h, w] with strides (c*h*w, h*w, w, 1).
void expect_nchw(cudnnTensorDescriptor_t d, int n, int c, int h, int w, const std::string& what) {
  cudnnDataType_t type{};
  int N, C, H, W, sn, sc, sh, sw;
  CUDNN_CHECK(cudnnGetTensor4dDescriptor(d, &type, &N, &C, &H, &W, &sn, &sc, &sh, &sw));
  EXPECT_EQ(type, CUDNN_DATA_FLOAT) << what;
  EXPECT_EQ((std::vector<int>{N, C, H, W}), (std::vector<int>{n, c, h, w})) << what << ": sizes [N, C, H, W]";
  EXPECT_EQ((std::vector<int>{sn, sc, sh, sw}), (std::vector<int>{c * h * w, h * w, w, 1}))
      << what << ": strides of the packed NCHW layout";
}

}  // namespace

TEST(Task6_2_Descriptors, TensorIsPackedNchwFloat) {
  S06_SKIP_WITHOUT_GPU();
  TensorDescriptor t;
  set_nchw(t, 64, 16, 28, 28);
  expect_nchw(t, 64, 16, 28, 28, "set_nchw(64, 16, 28, 28)");
  set_nchw(t, 3, 5, 7, 2);
  expect_nchw(t, 3, 5, 7, 2, "set_nchw(3, 5, 7, 2)");
}

TEST(Task6_2_Descriptors, ConvLayerForEveryShape) {
  S06_SKIP_WITHOUT_GPU();
  for (const ConvCase& c : conv_cases()) {
    const ConvGeometry& g = c.g;
    const std::string what = reference::describe(c);
    ConvDescriptors d;
    describe_conv(d, g, c.B);
    expect_nchw(d.x, c.B, g.C_in, g.H, g.W, what + ", x");
    expect_nchw(d.y, c.B, g.C_out, g.out_h(), g.out_w(), what + ", y");
    expect_nchw(d.bias, 1, g.C_out, 1, 1, what + ", bias");

    cudnnDataType_t type{};
    cudnnTensorFormat_t format{};
    int k, ch, kh, kw;
    CUDNN_CHECK(cudnnGetFilter4dDescriptor(d.w, &type, &format, &k, &ch, &kh, &kw));
    EXPECT_EQ(type, CUDNN_DATA_FLOAT) << what << ", filter";
    EXPECT_EQ(format, CUDNN_TENSOR_NCHW) << what << ": stage 02's weights are [C_out, C_in, K, K]";
    EXPECT_EQ((std::vector<int>{k, ch, kh, kw}), (std::vector<int>{g.C_out, g.C_in, g.K, g.K})) << what << ", filter";

    int ph, pw, u, v, dh, dw;
    cudnnConvolutionMode_t mode{};
    cudnnDataType_t compute{};
    CUDNN_CHECK(cudnnGetConvolution2dDescriptor(d.conv, &ph, &pw, &u, &v, &dh, &dw, &mode, &compute));
    EXPECT_EQ((std::vector<int>{ph, pw}), (std::vector<int>{g.P, g.P})) << what << ": padding";
    EXPECT_EQ((std::vector<int>{u, v}), (std::vector<int>{g.S, g.S})) << what << ": stride";
    EXPECT_EQ((std::vector<int>{dh, dw}), (std::vector<int>{1, 1})) << what << ": dilation";
    EXPECT_EQ(mode, CUDNN_CROSS_CORRELATION) << what << ": stage 02 slides the filter unflipped (cross-correlation)";
    EXPECT_EQ(compute, CUDNN_DATA_FLOAT) << what << ": compute type";
    cudnnMathType_t math{};
    CUDNN_CHECK(cudnnGetConvolutionMathType(d.conv, &math));
    EXPECT_EQ(math, CUDNN_FMA_MATH) << what << ": FP32 FMA math (no TF32)";
  }
}

TEST(Task6_2_Descriptors, MaxPoolLayerForEveryShape) {
  S06_SKIP_WITHOUT_GPU();
  const struct {
    int B;
    PoolGeometry g;
  } cases[] = {{2, {3, 6, 8, 2, 2, 0}}, {2, {2, 7, 6, 3, 2, 0}}, {2, {2, 7, 7, 3, 2, 1}}, {1, {1, 5, 5, 2, 2, 0}},
               {3, {2, 6, 5, 2, 2, 1}}, {2, {2, 8, 9, 3, 1, 1}}, {64, {16, 28, 28, 2, 2, 0}}};
  for (const auto& c : cases) {
    const PoolGeometry& g = c.g;
    const std::string what = g.str() + ", batch " + std::to_string(c.B);
    PoolDescriptors d;
    describe_pool(d, g, c.B);
    expect_nchw(d.x, c.B, g.C, g.H, g.W, what + ", x");
    expect_nchw(d.y, c.B, g.C, g.out_h(), g.out_w(), what + ", y");
    cudnnPoolingMode_t mode{};
    cudnnNanPropagation_t nan{};
    int wh, ww, vp, hp, vs, hs;
    CUDNN_CHECK(cudnnGetPooling2dDescriptor(d.pool, &mode, &nan, &wh, &ww, &vp, &hp, &vs, &hs));
    EXPECT_EQ(mode, CUDNN_POOLING_MAX_DETERMINISTIC) << what << ": the deterministic max";
    EXPECT_EQ((std::vector<int>{wh, ww}), (std::vector<int>{g.K, g.K})) << what << ": window";
    EXPECT_EQ((std::vector<int>{vp, hp}), (std::vector<int>{g.P, g.P})) << what << ": padding";
    EXPECT_EQ((std::vector<int>{vs, hs}), (std::vector<int>{g.S, g.S})) << what << ": stride";
  }
}
