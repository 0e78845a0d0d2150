/// @file conv_algorithms.cpp
/// @brief Stage 06 (Task 6.3): measuring the convolution algorithms once per shape and taking the fastest usable one.
#include "06_cudnn/conv_algorithms.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "common/gpu/cudnn_check.hpp"
#include "common/core/not_implemented.hpp"

namespace course {

namespace {

const char* status_name(cudnnStatus_t s) { return cudnnGetErrorString(s); }

std::string bytes_text(std::size_t b) {
  if (b < 1024) return std::to_string(b) + " B";
  if (b < (std::size_t(1) << 20)) return std::to_string((b + 512) / 1024) + " KiB";
  char s[32];
  std::snprintf(s, sizeof s, "%.1f MiB", static_cast<double>(b) / (1 << 20));
  return s;
}

/// The first (fastest) of `count` results that ran and uses FMA math; with
/// AlgoRule::Deterministic also deterministic, with AlgoRule::Direct also
/// summing its products directly (no FFT or Winograd transform).
/// Perf is cudnnConvolutionFwdAlgoPerf_t, ...BwdDataAlgoPerf_t or ...BwdFilterAlgoPerf_t.
template <typename Perf>
const Perf& fastest_usable(const Perf* results, int count, const char* direction, AlgoRule rule) {
  // TODO(Task 6.3): the first result (cuDNN sorts them fastest first) with status CUDNN_STATUS_SUCCESS and mathType CUDNN_FMA_MATH; unless the rule is AlgoRule::Fastest also determinism CUDNN_DETERMINISTIC; for AlgoRule::Direct also rounds_like_direct(algo)
  throw course::NotImplemented("Task 6.3", "06_cudnn/conv_algorithms.cpp", "docs/lessons/06_cudnn.md");
  // None qualifies: say what cuDNN offered, so the reason is visible.
  std::string offered;
  for (int i = 0; i < count; ++i)
    offered += std::string(i ? "; " : "") + algorithm_name(results[i].algo) + " " + status_name(results[i].status) +
               (results[i].determinism == CUDNN_DETERMINISTIC ? " deterministic " : " non-deterministic ") +
               math_type_name(results[i].mathType);
  throw GpuError(std::string("cudnnFind: no ") + direction +
                 (rule == AlgoRule::Direct          ? " algorithm is deterministic, FMA-math, direct (no FFT or Winograd) and"
                  : rule == AlgoRule::Deterministic ? " algorithm is deterministic, FMA-math and"
                                                    : " algorithm is FMA-math and") +
                 " ran successfully for this convolution; cuDNN offered: " +
                 (offered.empty() ? "nothing" : offered));
}

}  // namespace

bool rounds_like_direct(cudnnConvolutionFwdAlgo_t a) {
  return a != CUDNN_CONVOLUTION_FWD_ALGO_FFT && a != CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING &&
         a != CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD && a != CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}
bool rounds_like_direct(cudnnConvolutionBwdDataAlgo_t a) {
  return a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT && a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING &&
         a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD && a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
}
bool rounds_like_direct(cudnnConvolutionBwdFilterAlgo_t a) {
  return a != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT && a != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING &&
         a != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
}

std::string math_type_name(cudnnMathType_t m) {
  switch (m) {
    case CUDNN_DEFAULT_MATH: return "DEFAULT_MATH";
    case CUDNN_TENSOR_OP_MATH: return "TENSOR_OP_MATH";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return "TENSOR_OP_MATH_ALLOW_CONVERSION";
    case CUDNN_FMA_MATH: return "FMA_MATH";
  }
  return "math type " + std::to_string(static_cast<int>(m));
}

std::size_t ConvAlgorithms::workspace_bytes() const {
  return std::max({forward_bytes, backward_data_bytes, backward_filter_bytes});
}

const char* algo_rule_name(AlgoRule rule) {
  switch (rule) {
    case AlgoRule::Direct: return "direct";
    case AlgoRule::Deterministic: return "deterministic";
    case AlgoRule::Fastest: return "fastest";
  }
  return "unknown";
}

AlgoRule parse_algo_rule(const std::string& name) {
  for (AlgoRule r : {AlgoRule::Direct, AlgoRule::Deterministic, AlgoRule::Fastest})
    if (name == algo_rule_name(r)) return r;
  throw std::invalid_argument("unknown conv algorithm rule '" + name + "': expected direct, deterministic or fastest");
}

ConvAlgorithms choose_conv_algorithms(const GpuHandles& h, const ConvDescriptors& d, AlgoRule rule) {
  ConvAlgorithms a;
  // TODO(Task 6.3): measure every algorithm of the three directions with cudnnFind*Algorithm, keep the fastest usable of each (time, workspace bytes), and set the convolution descriptor's math type to theirs
  // HINT: cudnnFindConvolutionForwardAlgorithm(h.cudnn, d.x, d.w, d.conv, d.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, results).
  // HINT: backward data reads dy (described by d.y) and writes dx (d.x); backward filter reads x and dy and writes dW (d.w).
  // HINT: each result's .algo, .memory (bytes) and .time (ms); then cudnnSetConvolutionMathType(d.conv, result.mathType).
  throw course::NotImplemented("Task 6.3", "06_cudnn/conv_algorithms.cpp", "docs/lessons/06_cudnn.md");
  CUDNN_CHECK(cudnnGetConvolutionMathType(d.conv, &a.math));  // what the descriptor runs them with, for the record

  // cudnnGet*WorkspaceSize states each algorithm's minimum; taking the larger of it and
  // what Find reported costs nothing and never hands an algorithm too little.
  std::size_t bytes = 0;
  CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(h.cudnn, d.x, d.w, d.conv, d.y, a.forward, &bytes));
  a.forward_bytes = std::max(a.forward_bytes, bytes);
  CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(h.cudnn, d.w, d.y, d.conv, d.x, a.backward_data, &bytes));
  a.backward_data_bytes = std::max(a.backward_data_bytes, bytes);
  CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(h.cudnn, d.x, d.y, d.conv, d.w, a.backward_filter, &bytes));
  a.backward_filter_bytes = std::max(a.backward_filter_bytes, bytes);
  return a;
}

std::size_t shared_workspace_bytes(const std::vector<ConvAlgorithms>& layers) {
  std::size_t bytes = 0;
  // TODO(Task 6.3): the bytes of one workspace that serves every layer: the largest any of them needs
  // HINT: the layers run one at a time on one stream, so they can all use the same buffer.
  throw course::NotImplemented("Task 6.3", "06_cudnn/conv_algorithms.cpp", "docs/lessons/06_cudnn.md");
  return bytes;
}

std::string algorithm_name(cudnnConvolutionFwdAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    default: break;
  }
  return "forward algorithm " + std::to_string(static_cast<int>(a));
}

std::string algorithm_name(cudnnConvolutionBwdDataAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_0: return "ALGO_0";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_1: return "ALGO_1";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING: return "FFT_TILING";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    default: break;
  }
  return "backward-data algorithm " + std::to_string(static_cast<int>(a));
}

std::string algorithm_name(cudnnConvolutionBwdFilterAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0: return "ALGO_0";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1: return "ALGO_1";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3: return "ALGO_3";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING: return "FFT_TILING";
    default: break;
  }
  return "backward-filter algorithm " + std::to_string(static_cast<int>(a));
}

std::string describe(const ConvAlgorithms& a) {
  char times[3][32];
  std::snprintf(times[0], sizeof times[0], "%.3f ms", a.forward_ms);
  std::snprintf(times[1], sizeof times[1], "%.3f ms", a.backward_data_ms);
  std::snprintf(times[2], sizeof times[2], "%.3f ms", a.backward_filter_ms);
  return "forward " + algorithm_name(a.forward) + " " + times[0] + ", backward-data " +
         algorithm_name(a.backward_data) + " " + times[1] + ", backward-filter " + algorithm_name(a.backward_filter) +
         " " + times[2] + ", workspace " + bytes_text(a.workspace_bytes());
}

}  // namespace course
