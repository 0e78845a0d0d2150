// Task 4.6: the dense layer of a whole batch as GEMMs, against stage 01's
// dense_forward / dense_backward on the same inputs and weights.
//
// The GEMMs run on cuBLAS (kernel 0) here, so these tests check the layer and
// not a matmul task. Each test runs the GPU code first, then stage 01's.
#include <gtest/gtest.h>

#include <vector>

#include "01_fc_softmax/dense.hpp"
#include "04_cuda_matmul/gemm.hpp"
#include "04_cuda_matmul/mlp_kernels.hpp"
#include "gpu_testkit.hpp"

using namespace course;
using namespace course::gputest;

namespace {

struct DenseShape {
  int B, IN, OUT;
};

const DenseShape kShapes[] = {{1, 1, 1}, {7, 33, 10}, {33, 100, 7}, {64, 784, 256}, {256, 128, 10}};

struct DenseCase {
  DenseShape s;
  std::vector<float> x, W, b, dy;
  explicit DenseCase(DenseShape shape, std::uint64_t seed) : s(shape) {
    x = random_floats(static_cast<std::size_t>(s.B) * s.IN, seed);
    W = random_floats(static_cast<std::size_t>(s.OUT) * s.IN, seed + 1, -0.1, 0.1);
    b = random_floats(static_cast<std::size_t>(s.OUT), seed + 2);
    dy = random_floats(static_cast<std::size_t>(s.B) * s.OUT, seed + 3);
  }
  std::string name() const {
    return "B=" + std::to_string(s.B) + " IN=" + std::to_string(s.IN) + " OUT=" + std::to_string(s.OUT);
  }
};

// Forward and backward of one shape on the GPU with gemm kernel `kernel`, compared with stage 01.
void check_dense(int kernel, const DenseCase& c, bool with_dx) {
  const DenseShape s = c.s;
  DeviceBuffer<float> x = to_device(c.x), W = to_device(c.W), b = to_device(c.b), dy = to_device(c.dy);
  DeviceBuffer<float> y(c.dy.size()), dW(c.W.size()), db(c.b.size()), dx(c.x.size());
  dense_forward_gpu(kernel, x.get(), W.get(), b.get(), y.get(), s.B, s.IN, s.OUT);
  dense_backward_gpu(kernel, x.get(), W.get(), dy.get(), dW.get(), db.get(), with_dx ? dx.get() : nullptr, s.B, s.IN,
                     s.OUT);
  const std::vector<float> y_gpu = to_host(y), dW_gpu = to_host(dW), db_gpu = to_host(db), dx_gpu = to_host(dx);

  std::vector<float> y_cpu(c.dy.size()), dW_cpu(c.W.size()), db_cpu(c.b.size()), dx_cpu(c.x.size());
  dense_forward(c.x.data(), c.W.data(), c.b.data(), y_cpu.data(), s.B, s.IN, s.OUT);
  dense_backward(c.x.data(), c.W.data(), c.dy.data(), dW_cpu.data(), db_cpu.data(), with_dx ? dx_cpu.data() : nullptr,
                 s.B, s.IN, s.OUT);
  const std::string tag = " (" + c.name() + ", gemm kernel " + std::to_string(kernel) + ")";
  EXPECT_TRUE(close_enough("y" + tag, y_gpu, y_cpu, {{"n", s.B}, {"o", s.OUT}}, sum_atol(s.IN), kSumRtol, kSumRelNorm));
  EXPECT_TRUE(
      close_enough("dW" + tag, dW_gpu, dW_cpu, {{"o", s.OUT}, {"i", s.IN}}, sum_atol(s.B), kSumRtol, kSumRelNorm));
  EXPECT_TRUE(close_enough("db" + tag, db_gpu, db_cpu, {{"o", s.OUT}}, sum_atol(s.B), kSumRtol, kSumRelNorm));
  if (with_dx) {
    EXPECT_TRUE(
        close_enough("dx" + tag, dx_gpu, dx_cpu, {{"n", s.B}, {"i", s.IN}}, sum_atol(s.OUT), kSumRtol, kSumRelNorm));
  }
}

}  // namespace

TEST(Task4_6_DenseGpu, ForwardMatchesStage01) {
  SKIP_WITHOUT_GPU();
  for (const DenseShape& s : kShapes) {
    const DenseCase c(s, 100 + s.B);
    DeviceBuffer<float> x = to_device(c.x), W = to_device(c.W), b = to_device(c.b),
                        y(static_cast<std::size_t>(s.B) * s.OUT);
    dense_forward_gpu(kGemmCublas, x.get(), W.get(), b.get(), y.get(), s.B, s.IN, s.OUT);
    const std::vector<float> got = to_host(y);
    std::vector<float> ref(got.size());
    dense_forward(c.x.data(), c.W.data(), c.b.data(), ref.data(), s.B, s.IN, s.OUT);
    EXPECT_TRUE(close_enough("y (" + c.name() + ")", got, ref, {{"n", s.B}, {"o", s.OUT}}, sum_atol(s.IN), kSumRtol,
                             kSumRelNorm));
  }
}

TEST(Task4_6_DenseGpu, BackwardMatchesStage01) {
  SKIP_WITHOUT_GPU();
  for (const DenseShape& s : kShapes) check_dense(kGemmCublas, DenseCase(s, 200 + s.B), /*with_dx=*/true);
}

// The first layer of a network needs no dL/dx: dx may be null, and dW, db must still be right.
TEST(Task4_6_DenseGpu, NullInputGradientIsAllowed) {
  SKIP_WITHOUT_GPU();
  check_dense(kGemmCublas, DenseCase({9, 50, 12}, 300), /*with_dx=*/false);
}

// The same layer on every hand-written kernel (needs Tasks 4.2 to 4.5 as well).
TEST(Stage04_DenseOnEveryKernel, MatchesStage01) {
  SKIP_WITHOUT_GPU();
  for (int kernel = kGemmGrid; kernel < kNumGemmKernels; ++kernel)
    for (const DenseShape& s : {DenseShape{33, 100, 7}, DenseShape{64, 784, 256}})
      check_dense(kernel, DenseCase(s, 400 + s.B), /*with_dx=*/true);
}
