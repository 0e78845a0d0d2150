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
#include "common/cuda_check.hpp"
#include "common/cudnn_check.hpp"
#include "common/gradcheck.hpp"
#include "tensor_check.hpp"

/// Skips the test, printing why, on a machine without a usable GPU.
#define S06_SKIP_WITHOUT_GPU()                                 \
  do {                                                         \
    std::string s06_why_;                                      \
    if (!::course::gpu_available(&s06_why_)) GTEST_SKIP() << s06_why_; \
  } while (0)

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

/// Shapes with named axes: a conv layer's x [n, c, h, w], y [n, c, h, w] (c its output
/// channel), W [o, c, kh, kw].
inline TensorShape input_shape(int B, const ConvGeometry& g) {
  return {{"n", B}, {"c", g.C_in}, {"h", g.H}, {"w", g.W}};
}
inline TensorShape output_shape(int B, const ConvGeometry& g) {
  return {{"n", B}, {"c", g.C_out}, {"h", g.out_h()}, {"w", g.out_w()}};
}
inline TensorShape weight_shape(const ConvGeometry& g) {
  return {{"o", g.C_out}, {"c", g.C_in}, {"kh", g.K}, {"kw", g.K}};
}

/// The largest |v|, at least 1: the scale of the absolute tolerances.
inline double scale_of(const std::vector<double>& v) {
  double m = 1.0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

/// "NAME (value)": an enum value by the name `names` gives it, or by its type's name.
inline void print_named(std::ostream* os, const char* type, int v,
                        std::initializer_list<std::pair<int, const char*>> names) {
  const char* name = type;
  for (const auto& [value, n] : names)
    if (value == v) name = n;
  *os << name << " (" << v << ")";
}

}  // namespace course::s06test

// Names for the library enums the stage 06 tests compare, so that a failed EXPECT_EQ prints
// "CUDNN_CONVOLUTION (0)" rather than "0". GoogleTest finds them by argument-dependent lookup
// (the enums are declared in the global namespace).
#define S06_NAMED(value) \
  { static_cast<int>(value), #value }
inline void PrintTo(cudnnDataType_t v, std::ostream* os) {
  course::s06test::print_named(
      os, "cudnnDataType_t", v,
      {S06_NAMED(CUDNN_DATA_FLOAT), S06_NAMED(CUDNN_DATA_DOUBLE), S06_NAMED(CUDNN_DATA_HALF),
       S06_NAMED(CUDNN_DATA_BFLOAT16), S06_NAMED(CUDNN_DATA_INT8), S06_NAMED(CUDNN_DATA_INT32)});
}
inline void PrintTo(cudnnTensorFormat_t v, std::ostream* os) {
  course::s06test::print_named(
      os, "cudnnTensorFormat_t", v,
      {S06_NAMED(CUDNN_TENSOR_NCHW), S06_NAMED(CUDNN_TENSOR_NHWC), S06_NAMED(CUDNN_TENSOR_NCHW_VECT_C)});
}
inline void PrintTo(cudnnConvolutionMode_t v, std::ostream* os) {
  course::s06test::print_named(os, "cudnnConvolutionMode_t", v,
                               {S06_NAMED(CUDNN_CONVOLUTION), S06_NAMED(CUDNN_CROSS_CORRELATION)});
}
inline void PrintTo(cudnnMathType_t v, std::ostream* os) {
  course::s06test::print_named(os, "cudnnMathType_t", v,
                               {S06_NAMED(CUDNN_DEFAULT_MATH), S06_NAMED(CUDNN_TENSOR_OP_MATH),
                                S06_NAMED(CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION), S06_NAMED(CUDNN_FMA_MATH)});
}
inline void PrintTo(cudnnPoolingMode_t v, std::ostream* os) {
  course::s06test::print_named(
      os, "cudnnPoolingMode_t", v,
      {S06_NAMED(CUDNN_POOLING_MAX), S06_NAMED(CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING),
       S06_NAMED(CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING), S06_NAMED(CUDNN_POOLING_MAX_DETERMINISTIC)});
}
inline void PrintTo(cudnnActivationMode_t v, std::ostream* os) {
  course::s06test::print_named(os, "cudnnActivationMode_t", v,
                               {S06_NAMED(CUDNN_ACTIVATION_SIGMOID), S06_NAMED(CUDNN_ACTIVATION_RELU),
                                S06_NAMED(CUDNN_ACTIVATION_TANH), S06_NAMED(CUDNN_ACTIVATION_CLIPPED_RELU),
                                S06_NAMED(CUDNN_ACTIVATION_ELU), S06_NAMED(CUDNN_ACTIVATION_IDENTITY)});
}
inline void PrintTo(cudnnConvolutionFwdAlgo_t v, std::ostream* os) {
  course::s06test::print_named(
      os, "cudnnConvolutionFwdAlgo_t", v,
      {S06_NAMED(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM), S06_NAMED(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM),
       S06_NAMED(CUDNN_CONVOLUTION_FWD_ALGO_GEMM), S06_NAMED(CUDNN_CONVOLUTION_FWD_ALGO_DIRECT),
       S06_NAMED(CUDNN_CONVOLUTION_FWD_ALGO_FFT), S06_NAMED(CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING),
       S06_NAMED(CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD), S06_NAMED(CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED)});
}
inline void PrintTo(cudnnConvolutionBwdDataAlgo_t v, std::ostream* os) {
  course::s06test::print_named(
      os, "cudnnConvolutionBwdDataAlgo_t", v,
      {S06_NAMED(CUDNN_CONVOLUTION_BWD_DATA_ALGO_0), S06_NAMED(CUDNN_CONVOLUTION_BWD_DATA_ALGO_1),
       S06_NAMED(CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT), S06_NAMED(CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING),
       S06_NAMED(CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD),
       S06_NAMED(CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED)});
}
inline void PrintTo(cudnnConvolutionBwdFilterAlgo_t v, std::ostream* os) {
  course::s06test::print_named(
      os, "cudnnConvolutionBwdFilterAlgo_t", v,
      {S06_NAMED(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0), S06_NAMED(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1),
       S06_NAMED(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT), S06_NAMED(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3),
       S06_NAMED(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED),
       S06_NAMED(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING)});
}
inline void PrintTo(cublasMath_t v, std::ostream* os) {
  course::s06test::print_named(
      os, "cublasMath_t", v,
      {S06_NAMED(CUBLAS_DEFAULT_MATH), S06_NAMED(CUBLAS_PEDANTIC_MATH), S06_NAMED(CUBLAS_TF32_TENSOR_OP_MATH)});
}
inline void PrintTo(cudaMemoryType v, std::ostream* os) {
  course::s06test::print_named(os, "cudaMemoryType", v,
                               {S06_NAMED(cudaMemoryTypeUnregistered), S06_NAMED(cudaMemoryTypeHost),
                                S06_NAMED(cudaMemoryTypeDevice), S06_NAMED(cudaMemoryTypeManaged)});
}
inline void PrintTo(cudaStreamCaptureStatus v, std::ostream* os) {
  course::s06test::print_named(os, "cudaStreamCaptureStatus", v,
                               {S06_NAMED(cudaStreamCaptureStatusNone), S06_NAMED(cudaStreamCaptureStatusActive),
                                S06_NAMED(cudaStreamCaptureStatusInvalidated)});
}
#undef S06_NAMED
