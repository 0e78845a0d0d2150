// Helpers shared by the stage 06 tests.
//
// Each task's tests need a stream, handles and descriptors, but must not wait
// for Tasks 6.1 and 6.2 to be done (a test of Task 6.5 should fail with
// "Task 6.5 is not implemented", not with Task 6.1's message). So this file
// makes them itself, with plain cuDNN calls, like the reference versions in
// tests/02_conv_pool/reference.hpp: TestGpu owns a stream and both handles,
// and the test_* functions fill descriptors. The algorithms come from
// cuDNN's heuristics (cudnnGet*Algorithm_v7), not from Task 6.3's measurement.
//
// Inputs are drawn in double, rounded to float for the GPU, and the CPU
// reference (stages 01 and 02, in double) runs on the same rounded values.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "06_cudnn/conv_algorithms.hpp"
#include "06_cudnn/descriptors.hpp"
#include "06_cudnn/gpu_handles.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/gpu/cudnn_check.hpp"
#include "common/check/gradcheck.hpp"
#include "conv_case_tests.hpp"
#include "conv_shapes.hpp"
#include "gpu_buffers.hpp"
#include "tensor_check.hpp"

/// Skips the test, printing why, on a machine without a usable GPU (gpu_buffers.hpp's
/// SKIP_WITHOUT_GPU, under the name this stage's tests use).
#define S06_SKIP_WITHOUT_GPU() SKIP_WITHOUT_GPU()

namespace course::s06test {

/// A stream and both library handles, made with plain calls (not Task 6.1), freed at the end.
class TestGpu {
 public:
  TestGpu() {
    try {
      CUDA_CHECK(cudaStreamCreate(&h_.stream));
      CUDNN_CHECK(cudnnCreate(&h_.cudnn));
      CUDNN_CHECK(cudnnSetStream(h_.cudnn, h_.stream));
      CUBLAS_CHECK(cublasCreate(&h_.cublas));
      CUBLAS_CHECK(cublasSetStream(h_.cublas, h_.stream));
      CUBLAS_CHECK(cublasSetMathMode(h_.cublas, CUBLAS_DEFAULT_MATH));
      CUDA_CHECK(cudaMalloc(&h_.cublas_workspace, kCublasWorkspaceBytes));
      CUBLAS_CHECK(cublasSetWorkspace(h_.cublas, h_.cublas_workspace, kCublasWorkspaceBytes));
    } catch (...) {
      destroy_gpu_handles(h_);
      throw;
    }
  }
  ~TestGpu() { destroy_gpu_handles(h_); }
  TestGpu(const TestGpu&) = delete;
  TestGpu& operator=(const TestGpu&) = delete;
  const GpuHandles& h() const { return h_; }
  cudaStream_t stream() const { return h_.stream; }
  void sync() const { CUDA_CHECK(cudaStreamSynchronize(h_.stream)); }

 private:
  GpuHandles h_;
};

/// Packed NCHW float tensor, set without Task 6.2.
inline void test_nchw(cudnnTensorDescriptor_t d, int n, int c, int h, int w) {
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w));
}

/// A conv layer's descriptors, set without Task 6.2 (FP32 FMA math, cross-correlation).
inline void test_conv_descriptors(ConvDescriptors& d, const ConvGeometry& g, int B) {
  test_nchw(d.x, B, g.C_in, g.H, g.W);
  test_nchw(d.y, B, g.C_out, g.out_h(), g.out_w());
  test_nchw(d.bias, 1, g.C_out, 1, 1);
  CUDNN_CHECK(cudnnSetFilter4dDescriptor(d.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, g.C_out, g.C_in, g.K, g.K));
  CUDNN_CHECK(cudnnSetConvolution2dDescriptor(d.conv, g.P, g.P, g.S, g.S, 1, 1, CUDNN_CROSS_CORRELATION,
                                              CUDNN_DATA_FLOAT));
  CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv, CUDNN_FMA_MATH));
}

/// A max-pool layer's descriptors, set without Task 6.2.
inline void test_pool_descriptors(PoolDescriptors& d, const PoolGeometry& g, int B) {
  test_nchw(d.x, B, g.C, g.H, g.W);
  test_nchw(d.y, B, g.C, g.out_h(), g.out_w());
  CUDNN_CHECK(cudnnSetPooling2dDescriptor(d.pool, CUDNN_POOLING_MAX_DETERMINISTIC, CUDNN_NOT_PROPAGATE_NAN, g.K, g.K,
                                          g.P, g.P, g.S, g.S));
}

/// Every algorithm cuDNN's heuristics offer for one direction that can run
/// here without tensor cores (the descriptor asks for FMA math). Perf is one
/// of the three cudnn*AlgoPerf_t; `get` calls the matching cudnnGet*Algorithm_v7.
template <typename Perf, int Count, typename Get>
std::vector<Perf> usable_heuristic_results(Get get) {
  Perf results[Count];
  int returned = 0;
  CUDNN_CHECK(get(Count, &returned, results));
  std::vector<Perf> out;
  for (int i = 0; i < returned; ++i)
    if (results[i].status == CUDNN_STATUS_SUCCESS &&
        (results[i].mathType == CUDNN_FMA_MATH || results[i].mathType == CUDNN_DEFAULT_MATH))
      out.push_back(results[i]);
  return out;
}

inline std::vector<cudnnConvolutionFwdAlgoPerf_t> forward_algorithms(const GpuHandles& h, const ConvDescriptors& d) {
  return usable_heuristic_results<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT>(
      [&](int n, int* got, cudnnConvolutionFwdAlgoPerf_t* r) {
        return cudnnGetConvolutionForwardAlgorithm_v7(h.cudnn, d.x, d.w, d.conv, d.y, n, got, r);
      });
}
inline std::vector<cudnnConvolutionBwdDataAlgoPerf_t> backward_data_algorithms(const GpuHandles& h,
                                                                                const ConvDescriptors& d) {
  return usable_heuristic_results<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT>(
      [&](int n, int* got, cudnnConvolutionBwdDataAlgoPerf_t* r) {
        return cudnnGetConvolutionBackwardDataAlgorithm_v7(h.cudnn, d.w, d.y, d.conv, d.x, n, got, r);
      });
}
inline std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> backward_filter_algorithms(const GpuHandles& h,
                                                                                    const ConvDescriptors& d) {
  return usable_heuristic_results<cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>(
      [&](int n, int* got, cudnnConvolutionBwdFilterAlgoPerf_t* r) {
        return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h.cudnn, d.x, d.y, d.conv, d.w, n, got, r);
      });
}

/// Workspace bytes of each algorithm, as cudnnGet*WorkspaceSize states them.
inline std::size_t workspace_of(const GpuHandles& h, const ConvDescriptors& d, cudnnConvolutionFwdAlgo_t a) {
  std::size_t b = 0;
  CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(h.cudnn, d.x, d.w, d.conv, d.y, a, &b));
  return b;
}
inline std::size_t workspace_of(const GpuHandles& h, const ConvDescriptors& d, cudnnConvolutionBwdDataAlgo_t a) {
  std::size_t b = 0;
  CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(h.cudnn, d.w, d.y, d.conv, d.x, a, &b));
  return b;
}
inline std::size_t workspace_of(const GpuHandles& h, const ConvDescriptors& d, cudnnConvolutionBwdFilterAlgo_t a) {
  std::size_t b = 0;
  CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(h.cudnn, d.x, d.y, d.conv, d.w, a, &b));
  return b;
}

// FFT and Winograd transform their operands and round more (2.6e-3 of the output scale
// measured on a 5x5 layer); the conv tests check them, with this looser bound, but they are
// never chosen for training (rounds_like_direct()).
constexpr double kAbsTransformed = 5e-3;

/// A conv test's absolute tolerance for algorithm `a`, of the output scale: `direct` where the
/// algorithm rounds like a direct sum, kAbsTransformed where it transforms.
template <typename Algo>
double abs_tolerance(Algo a, double direct) {
  return rounds_like_direct(a) ? direct : kAbsTransformed;
}

/// Values rounded to float and back: what the GPU sees, for the double-precision reference.
inline std::vector<double> as_float_values(std::vector<double> v) {
  for (double& x : v) x = static_cast<double>(static_cast<float>(x));
  return v;
}

/// A device copy of v in float.
inline DeviceBuffer<float> to_device(const std::vector<double>& v) {
  DeviceBuffer<float> d;
  d.upload(std::vector<float>(v.begin(), v.end()));
  return d;
}

/// A device buffer of n floats, every one set to `fill` (a value no correct result has).
inline DeviceBuffer<float> filled(std::size_t n, float fill) {
  DeviceBuffer<float> d;
  d.upload(std::vector<float>(n, fill));
  return d;
}

/// The device buffer's values, in double (waits for all GPU work first).
inline std::vector<double> to_host(const DeviceBuffer<float>& d) {
  CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> f = d.download();
  return std::vector<double>(f.begin(), f.end());
}

/// A pooling layer's shape at batch size B.
struct PoolCase {
  int B;
  PoolGeometry g;
};

/// A pooling layer's calls: what fills its descriptors, and its two passes (max and average
/// pools have the same signatures).
struct PoolCalls {
  void (*describe)(PoolDescriptors& d, const PoolGeometry& g, int B);
  void (*forward)(const GpuHandles& h, const PoolDescriptors& d, const float* x, float* y);
  void (*backward)(const GpuHandles& h, const PoolDescriptors& d, const float* x, const float* y, const float* dy,
                   float* dx);
};

/// y and dx of a pooling layer, in double.
struct Pooled {
  std::vector<double> y, dx;
};

/// The layer's forward pass on x and its backward pass from dy, on cuDNN with a stream of its
/// own. y starts as y_fill and dx as 99, values no correct output has: one never written shows.
inline Pooled run_pool(const PoolCalls& layer, const PoolCase& c, const std::vector<double>& x,
                       const std::vector<double>& dy, float y_fill) {
  TestGpu gpu;
  PoolDescriptors d;
  layer.describe(d, c.g, c.B);
  const auto dev_x = to_device(x), dev_dy = to_device(dy);
  auto y = filled(static_cast<std::size_t>(c.B) * c.g.out_size(), y_fill);
  auto dx = filled(static_cast<std::size_t>(c.B) * c.g.in_size(), 99.f);
  layer.forward(gpu.h(), d, dev_x.get(), y.get());
  layer.backward(gpu.h(), d, dev_x.get(), y.get(), dev_dy.get(), dx.get());
  return {to_host(y), to_host(dx)};
}

/// Passes when |got - want| <= atol + rtol * |want| everywhere (and no NaN); otherwise says
/// what tensor_matches() says (tests/support/tensor_check.hpp): the tensor and its shape,
/// expected and actual at the first wrong entries and at the worst, the tolerance, and the
/// slip that explains them where one does (a transpose, a sign, a factor, a term, an index
/// off by one, entries never written, where the wrong ones lie). Name the axes where the
/// caller knows them: {{"n", B}, {"c", C}, {"h", H}, {"w", W}}; `slips` are mistakes the test
/// knows and computes (the values each would give).
inline ::testing::AssertionResult all_close(const std::string& what, const std::vector<double>& got,
                                            const std::vector<double>& want, const TensorShape& shape, double atol,
                                            double rtol, const std::vector<testkit::KnownSlip>& slips = {}) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << what << ": " << got.size() << " values, expected " << want.size()
                                         << " (shape " << shape.str() << ")";
  for (std::size_t i = 0; i < want.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= atol + rtol * std::fabs(want[i])))  // also catches NaN
      return ::testing::AssertionFailure()
             << testkit::describe_mismatch(what, shape, got, want, testkit::Tolerance{atol, rtol}, slips);
  return ::testing::AssertionSuccess();
}

/// The same with the axes unnamed.
inline ::testing::AssertionResult all_close(const std::string& what, const std::vector<double>& got,
                                            const std::vector<double>& want, const std::vector<int>& shape,
                                            double atol, double rtol) {
  return all_close(what, got, want, TensorShape(shape), atol, rtol);
}

// Shapes with named axes: a conv layer's x, y and W (tests/support/conv_shapes.hpp).
using testkit::input_shape;
using testkit::output_shape;
using testkit::weight_shape;

/// The largest |v|, at least 1: the scale of the absolute tolerances.
inline double scale_of(const std::vector<double>& v) {
  double m = 1.0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

/// "NAME (value)": v by its name in `names`, the enumerators `values` holds, in their order
/// and separated by commas ("CUDNN_DATA_FLOAT, CUDNN_DATA_DOUBLE"); or by `type` where none is v.
inline void print_named(std::ostream* os, const char* type, int v, std::initializer_list<int> values,
                        const std::string& names) {
  std::string name = type, listed;
  std::istringstream list(names);
  for (const int value : values) {
    std::getline(list >> std::ws, listed, ',');
    if (value == v) name = listed;
  }
  *os << name << " (" << v << ")";
}

}  // namespace course::s06test

/// The conv layer tests of Tasks 6.4 and 6.5, in suite `Suite`: one per shape of stage 02's
/// gradient checks (conv_case_tests.hpp; the first, with its batch of 2, is K3Pad1NonSquareBatch),
/// and CnnLayersAtBatch64, the two conv layers of `cnn` as training runs them. Each skips
/// without a GPU, then runs check(B, g).
#define S06_CONV_LAYER_TESTS(Suite, check)                                           \
  COURSE_CONV_CASE_TESTS(Suite, K3Pad1NonSquareBatch, S06_SKIP_WITHOUT_GPU(), check) \
  TEST(Suite, CnnLayersAtBatch64) {                                                  \
    S06_SKIP_WITHOUT_GPU();                                                          \
    check(64, ::course::ConvGeometry{1, 28, 28, 16, 3, 1, 1});                       \
    check(64, ::course::ConvGeometry{16, 14, 14, 32, 3, 1, 1});                      \
  }

// Names for the library enums the stage 06 tests compare, so that a failed EXPECT_EQ prints
// "CUDNN_CONVOLUTION (0)" rather than "0". GoogleTest finds them by argument-dependent lookup
// (the enums are declared in the global namespace). S06_NAMES(Type, enumerators...) writes
// PrintTo for Type, naming the enumerators listed.
#define S06_NAMES(Type, ...)                                                                        \
  inline void PrintTo(Type v, std::ostream* os) {                                                   \
    course::s06test::print_named(os, #Type, static_cast<int>(v), {__VA_ARGS__}, #__VA_ARGS__);      \
  }
S06_NAMES(cudnnDataType_t, CUDNN_DATA_FLOAT, CUDNN_DATA_DOUBLE, CUDNN_DATA_HALF, CUDNN_DATA_BFLOAT16, CUDNN_DATA_INT8,
          CUDNN_DATA_INT32)
S06_NAMES(cudnnTensorFormat_t, CUDNN_TENSOR_NCHW, CUDNN_TENSOR_NHWC, CUDNN_TENSOR_NCHW_VECT_C)
S06_NAMES(cudnnConvolutionMode_t, CUDNN_CONVOLUTION, CUDNN_CROSS_CORRELATION)
S06_NAMES(cudnnMathType_t, CUDNN_DEFAULT_MATH, CUDNN_TENSOR_OP_MATH, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION,
          CUDNN_FMA_MATH)
S06_NAMES(cudnnPoolingMode_t, CUDNN_POOLING_MAX, CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
          CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING, CUDNN_POOLING_MAX_DETERMINISTIC)
S06_NAMES(cudnnActivationMode_t, CUDNN_ACTIVATION_SIGMOID, CUDNN_ACTIVATION_RELU, CUDNN_ACTIVATION_TANH,
          CUDNN_ACTIVATION_CLIPPED_RELU, CUDNN_ACTIVATION_ELU, CUDNN_ACTIVATION_IDENTITY)
S06_NAMES(cudnnConvolutionFwdAlgo_t, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
          CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_GEMM,
          CUDNN_CONVOLUTION_FWD_ALGO_DIRECT, CUDNN_CONVOLUTION_FWD_ALGO_FFT, CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING,
          CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD, CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED)
S06_NAMES(cudnnConvolutionBwdDataAlgo_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
          CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT, CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING,
          CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD, CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED)
S06_NAMES(cudnnConvolutionBwdFilterAlgo_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1,
          CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3,
          CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING)
S06_NAMES(cublasMath_t, CUBLAS_DEFAULT_MATH, CUBLAS_PEDANTIC_MATH, CUBLAS_TF32_TENSOR_OP_MATH)
S06_NAMES(cudaMemoryType, cudaMemoryTypeUnregistered, cudaMemoryTypeHost, cudaMemoryTypeDevice, cudaMemoryTypeManaged)
S06_NAMES(cudaStreamCaptureStatus, cudaStreamCaptureStatusNone, cudaStreamCaptureStatusActive,
          cudaStreamCaptureStatusInvalidated)
#undef S06_NAMES
