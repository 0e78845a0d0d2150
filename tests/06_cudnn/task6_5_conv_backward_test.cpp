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
// (FFT and Winograd get the looser kAbsTransformed: abs_tolerance(), s06_support.hpp.)
constexpr double kGradAbs = 1e-4, kGradRel = 1e-4;

struct Inputs {
  std::vector<double> x, W, dy;
};

Inputs inputs(const ConvCase& c) {
  const ConvGeometry& g = c.g;
  return {as_float_values(testkit::random_vector(c.B * g.in_size(), 21)),
          as_float_values(testkit::random_vector(g.weight_size(), 22)),
          as_float_values(testkit::random_vector(c.B * g.out_size(), 23))};
}

// dx, dW and db of B examples on g, for every backward algorithm cuDNN offers (the caller
// skips without a GPU).
void check_backward(int B, const ConvGeometry& g) {
  const std::string what = reference::describe({B, g});
  TestGpu gpu;
  ConvDescriptors d;
  test_conv_descriptors(d, g, B);
  const Inputs in = inputs({B, g});
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
    auto dx = filled(B * g.in_size(), 777.f), dW = filled(g.weight_size(), 777.f), db = filled(g.C_out, 777.f);
    conv_backward_cudnn(gpu.h(), d, a, {ws.get(), a.workspace_bytes()}, x.get(), W.get(), dy.get(), dW.get(), db.get(),
                        dx.get());
    const auto got_dx = to_host(dx), got_dW = to_host(dW), got_db = to_host(db);
    if (want_dx.empty()) {  // stage 02's layer in double (after the GPU: Task 6.5 fails first)
      want_dx.resize(got_dx.size());
      want_dW.resize(got_dW.size());
      want_db.resize(got_db.size());
      conv2d_backward_input(in.dy.data(), in.W.data(), want_dx.data(), B, g);
      conv2d_backward_weight(in.x.data(), in.dy.data(), want_dW.data(), want_db.data(), B, g);
    }
    const std::string data_name = ", backward-data " + algorithm_name(a.backward_data);
    const std::string filter_name = ", backward-filter " + algorithm_name(a.backward_filter);
    EXPECT_TRUE(all_close("dx of " + what + data_name, got_dx, want_dx, input_shape(B, g),
                          abs_tolerance(a.backward_data, kGradAbs) * scale_of(want_dx), kGradRel));
    EXPECT_TRUE(all_close("dW of " + what + filter_name, got_dW, want_dW, weight_shape(g),
                          abs_tolerance(a.backward_filter, kGradAbs) * scale_of(want_dW), kGradRel));
    EXPECT_TRUE(all_close("db of " + what, got_db, want_db, {{"o", g.C_out}}, kGradAbs * scale_of(want_db), kGradRel));
  }
}

}  // namespace

// One test per shape of stage 02's gradient checks, and `cnn`'s conv layers at batch 64
// (S06_CONV_LAYER_TESTS, s06_support.hpp).
S06_CONV_LAYER_TESTS(Task6_5_ConvBackward, check_backward)

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
  EXPECT_TRUE(all_close("dW with dx null", got_dW, want_dW, weight_shape(g), kGradAbs * scale_of(want_dW), kGradRel));
  EXPECT_TRUE(all_close("db with dx null", got_db, want_db, {{"o", g.C_out}}, kGradAbs * scale_of(want_db), kGradRel));
}
