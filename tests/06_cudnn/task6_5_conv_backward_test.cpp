// Task 6.5: cuDNN's backward-data, backward-filter and backward-bias against
// stage 02's conv2d_backward_input and conv2d_backward_weight, for every shape
// of stage 02's gradient checks and every algorithm cuDNN offers for each.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../02_conv_pool/conv_cases.hpp"
#include "02_conv_pool/conv.hpp"
#include "06_cudnn/conv_cudnn.hpp"
#include "course_test.hpp"
#include "s06_support.hpp"

using namespace course;
using namespace course::s06test;
using reference::ConvCase;

namespace {

// As for the forward pass (task6_4): FP32 sums of at most a few hundred
// products of values in [-1, 1] (dW sums over B * Ho * Wo), checked to 1e-4 of
// the output scale; a missing flip, a wrong padding offset or a stride
// mistake is off by O(1).
constexpr double kAbs = 1e-4, kRel = 1e-4;
// FFT and Winograd transform their operands and round more (2.6e-3 of the
// output scale measured on a 5x5 layer); they are checked, with this looser
// bound, but never chosen for training (rounds_like_direct()).
constexpr double kAbsTransformed = 5e-3;
template <typename Algo>
double abs_tolerance(Algo a) { return rounds_like_direct(a) ? kAbs : kAbsTransformed; }

struct Inputs {
  std::vector<double> x, W, dy;
};

Inputs inputs(const ConvCase& c) {
  const ConvGeometry& g = c.g;
  return {as_float_values(testkit::random_vector(c.B * g.in_size(), 21)),
          as_float_values(testkit::random_vector(g.weight_size(), 22)),
          as_float_values(testkit::random_vector(c.B * g.out_size(), 23))};
}

void check_backward(const ConvCase& c) {
  S06_SKIP_WITHOUT_GPU();
  const ConvGeometry& g = c.g;
  const std::string what = reference::describe(c);
  TestGpu gpu;
  ConvDescriptors d;
  test_conv_descriptors(d, g, c.B);
  const Inputs in = inputs(c);
  const auto x = to_device(in.x), W = to_device(in.W), dy = to_device(in.dy);
  const auto data_algos = backward_data_algorithms(gpu.h(), d);
  const auto filter_algos = backward_filter_algorithms(gpu.h(), d);
  ASSERT_FALSE(data_algos.empty()) << what << ": cuDNN offers no FP32 backward-data algorithm";
  ASSERT_FALSE(filter_algos.empty()) << what << ": cuDNN offers no FP32 backward-filter algorithm";
  std::vector<double> want_dx, want_dW, want_db;
  // Pairs of (data, filter) algorithms: every one of each list runs at least once.
  const std::size_t runs = std::max(data_algos.size(), filter_algos.size());
  for (std::size_t r = 0; r < runs; ++r) {
    ConvAlgorithms a;
    a.backward_data = data_algos[r % data_algos.size()].algo;
    a.backward_filter = filter_algos[r % filter_algos.size()].algo;
    a.backward_data_bytes = workspace_of(gpu.h(), d, a.backward_data);
    a.backward_filter_bytes = workspace_of(gpu.h(), d, a.backward_filter);
    DeviceBuffer<unsigned char> ws(std::max<std::size_t>(a.workspace_bytes(), 1));
    // Stale values in every output: each must be overwritten, not added to.
    auto dx = filled(c.B * g.in_size(), 777.f), dW = filled(g.weight_size(), 777.f), db = filled(g.C_out, 777.f);
    conv_backward_cudnn(gpu.h(), d, a, {ws.get(), a.workspace_bytes()}, x.get(), W.get(), dy.get(), dW.get(), db.get(),
                        dx.get());
    const auto got_dx = to_host(dx), got_dW = to_host(dW), got_db = to_host(db);
    if (want_dx.empty()) {  // stage 02's layer in double (after the GPU: Task 6.5 fails first)
      want_dx.resize(got_dx.size());
      want_dW.resize(got_dW.size());
      want_db.resize(got_db.size());
      conv2d_backward_input(in.dy.data(), in.W.data(), want_dx.data(), c.B, g);
      conv2d_backward_weight(in.x.data(), in.dy.data(), want_dW.data(), want_db.data(), c.B, g);
    }
    const std::string data_name = ", backward-data " + algorithm_name(a.backward_data);
    const std::string filter_name = ", backward-filter " + algorithm_name(a.backward_filter);
    EXPECT_TRUE(all_close("dx of " + what + data_name, got_dx, want_dx, input_shape(c.B, g),
                          abs_tolerance(a.backward_data) * scale_of(want_dx), kRel));
    EXPECT_TRUE(all_close("dW of " + what + filter_name, got_dW, want_dW, weight_shape(g),
                          abs_tolerance(a.backward_filter) * scale_of(want_dW), kRel));
    EXPECT_TRUE(all_close("db of " + what, got_db, want_db, {{"o", g.C_out}}, kAbs * scale_of(want_db), kRel));
  }
}

}  // namespace

TEST(Task6_5_ConvBackward, K3Pad1NonSquareBatch) { check_backward(reference::kK3Pad1NonSquare); }
TEST(Task6_5_ConvBackward, K3Pad0) { check_backward(reference::kK3Pad0); }
TEST(Task6_5_ConvBackward, K5Pad2) { check_backward(reference::kK5Pad2); }
TEST(Task6_5_ConvBackward, K3Pad2) { check_backward(reference::kK3Pad2); }
TEST(Task6_5_ConvBackward, K1) { check_backward(reference::kK1); }
TEST(Task6_5_ConvBackward, K1Stride2) { check_backward(reference::kK1Stride2); }
TEST(Task6_5_ConvBackward, K3Pad1Stride2) { check_backward(reference::kK3Pad1Stride2); }
TEST(Task6_5_ConvBackward, K5Pad1Stride2) { check_backward(reference::kK5Pad1Stride2); }
TEST(Task6_5_ConvBackward, K5Pad2Stride2) { check_backward(reference::kK5Pad2Stride2); }
TEST(Task6_5_ConvBackward, K3Pad0Stride3) { check_backward(reference::kK3Pad0Stride3); }
TEST(Task6_5_ConvBackward, CnnLayersAtBatch64) {
  check_backward({64, ConvGeometry{1, 28, 28, 16, 3, 1, 1}});
  check_backward({64, ConvGeometry{16, 14, 14, 32, 3, 1, 1}});
}

// The first layer passes a null dx: its input gradient is skipped, and the
// weight and bias gradients come out the same.
TEST(Task6_5_ConvBackward, NullDxSkipsTheInputGradient) {
  S06_SKIP_WITHOUT_GPU();
  const ConvCase c = reference::kK3Pad1NonSquare;
  const ConvGeometry& g = c.g;
  TestGpu gpu;
  ConvDescriptors d;
  test_conv_descriptors(d, g, c.B);
  const Inputs in = inputs(c);
  const auto x = to_device(in.x), W = to_device(in.W), dy = to_device(in.dy);
  ConvAlgorithms a;
  a.backward_filter = backward_filter_algorithms(gpu.h(), d).at(0).algo;
  a.backward_filter_bytes = workspace_of(gpu.h(), d, a.backward_filter);
  a.backward_data_bytes = 1u << 30;  // would not fit: a call for dx would be refused
  DeviceBuffer<unsigned char> ws(std::max<std::size_t>(a.backward_filter_bytes, 1));
  auto dW = filled(g.weight_size(), 777.f), db = filled(g.C_out, 777.f);
  conv_backward_cudnn(gpu.h(), d, a, {ws.get(), a.backward_filter_bytes}, x.get(), W.get(), dy.get(), dW.get(),
                      db.get(), nullptr);
  std::vector<double> want_dW(g.weight_size()), want_db(g.C_out);
  const auto got_dW = to_host(dW), got_db = to_host(db);
  conv2d_backward_weight(in.x.data(), in.dy.data(), want_dW.data(), want_db.data(), c.B, g);
  EXPECT_TRUE(all_close("dW with dx null", got_dW, want_dW, weight_shape(g), kAbs * scale_of(want_dW), kRel));
  EXPECT_TRUE(all_close("db with dx null", got_db, want_db, {{"o", g.C_out}}, kAbs * scale_of(want_db), kRel));
}
