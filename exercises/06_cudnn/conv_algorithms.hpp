/// @file conv_algorithms.hpp
/// @brief Stage 06 (Task 6.3): choosing each convolution's algorithms by measuring them, and one shared workspace.
///
/// cuDNN computes one convolution in many ways: implicit GEMM (the im2col
/// product of stage 05 without writing the K*K-fold copy), explicit GEMM,
/// FFT, Winograd, direct kernels. Which is fastest depends on the shapes and
/// the GPU, so cuDNN can *measure*: cudnnFindConvolutionForwardAlgorithm (and
/// ...BackwardData..., ...BackwardFilter...) runs every algorithm that
/// supports the shape on scratch buffers and returns them sorted by time, each
/// with its status, the workspace bytes it needs, whether it is deterministic
/// and its math type. Measuring takes milliseconds, so it is done once per
/// shape, before training, and never inside a graph capture (it synchronises).
///
/// Our rules for taking a result, in the order cuDNN returns them (fastest first):
/// - status CUDNN_STATUS_SUCCESS (an algorithm that failed to run has no time);
/// - CUDNN_DETERMINISTIC: some backward algorithms add partial sums with
///   atomics in whatever order the threads arrive, so two runs differ in the
///   last bits; we want the same seed to give the same model, and the graph
///   and the plain run to give the same numbers;
/// - math type CUDNN_FMA_MATH, the FP32 arithmetic set on the descriptor in
///   Task 6.2 (the descriptor's math type must then be the result's).
///
/// Each algorithm needs its own amount of scratch memory (the workspace, 0
/// for some). The layers run one after another on one stream, never two at
/// once, so one buffer of the largest size any of them needs serves them all.
#pragma once

#include <cudnn.h>

#include <cstddef>
#include <string>
#include <vector>

#include "06_cudnn/descriptors.hpp"
#include "06_cudnn/gpu_handles.hpp"

namespace course {

/// The three algorithms of one conv layer at one batch size, with what cuDNN measured.
struct ConvAlgorithms {
  cudnnConvolutionFwdAlgo_t forward = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnConvolutionBwdDataAlgo_t backward_data = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
  cudnnConvolutionBwdFilterAlgo_t backward_filter = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;
  std::size_t forward_bytes = 0, backward_data_bytes = 0, backward_filter_bytes = 0;  ///< workspace each needs
  float forward_ms = 0, backward_data_ms = 0, backward_filter_ms = 0;                ///< as cudnnFind measured them
  /// The math type they were measured with, set on the convolution descriptor
  /// (kept so that a checkpoint can record it: algorithm_choice.hpp).
  cudnnMathType_t math = CUDNN_FMA_MATH;

  /// The workspace this layer needs: the largest of the three.
  std::size_t workspace_bytes() const;
};

/// Measures every forward, backward-data and backward-filter algorithm cuDNN
/// has for the layer `d` describes (cudnnFind*Algorithm), takes the fastest
/// result of each that follows the rules above, and sets the convolution
/// descriptor's math type to that result's. Synchronises the GPU. Throws
/// course::GpuError when a call fails or no result qualifies (naming the
/// direction and listing what cuDNN returned).
///
/// The rule decides which results may be taken:
/// - AlgoRule::Deterministic (the default): the rules above. FFT and Winograd
///   algorithms may be chosen: they compute the same sums through a transform,
///   and round differently from a direct sum (by about 1e-6 of the largest
///   output for the `cnn`'s 3x3 layers, measured on the H100, as much as a
///   different summation order), but the same way every run.
/// - AlgoRule::Direct: also rounds_like_direct, so every product is summed
///   directly, as stage 02 and stage 05 do. Slower: for `cnn` on the H100 the
///   only such filter-gradient algorithm, ALGO_1, takes 5x longer than FFT.
/// - AlgoRule::Fastest: only the first rule and FMA math: the atomics of the
///   non-deterministic kernels are allowed too, so two runs differ in the last
///   bits.
enum class AlgoRule {
  Direct,         ///< deterministic, FMA math, rounds_like_direct
  Deterministic,  ///< deterministic, FMA math (the course's default)
  Fastest,        ///< the fastest result that ran with FMA math
};
ConvAlgorithms choose_conv_algorithms(const GpuHandles& h, const ConvDescriptors& d,
                                      AlgoRule rule = AlgoRule::Deterministic);

/// "direct", "deterministic" or "fastest".
const char* algo_rule_name(AlgoRule rule);
/// AlgoRule of "direct", "deterministic" or "fastest"; throws std::invalid_argument naming anything else.
AlgoRule parse_algo_rule(const std::string& name);

/// Bytes of the one workspace shared by all these layers: the largest any of them needs.
std::size_t shared_workspace_bytes(const std::vector<ConvAlgorithms>& layers);

/// False for the algorithms that transform their operands (FFT, FFT_TILING,
/// WINOGRAD, WINOGRAD_NONFUSED): they round differently from a direct sum of
/// products, by an amount that grows with the transform's size (measured on
/// the H100: 1e-6 of the largest output for FFT on the `cnn`'s 3x3 layers, but
/// 2.6e-3 for a Winograd variant on a 5x5 layer where the direct algorithms
/// stay under 1e-5). AlgoRule::Direct keeps to the others.
bool rounds_like_direct(cudnnConvolutionFwdAlgo_t a);
bool rounds_like_direct(cudnnConvolutionBwdDataAlgo_t a);
bool rounds_like_direct(cudnnConvolutionBwdFilterAlgo_t a);

/// "IMPLICIT_PRECOMP_GEMM", "WINOGRAD", "ALGO_1", ... (the enum without its prefix).
std::string algorithm_name(cudnnConvolutionFwdAlgo_t a);
std::string algorithm_name(cudnnConvolutionBwdDataAlgo_t a);
std::string algorithm_name(cudnnConvolutionBwdFilterAlgo_t a);

/// "FMA_MATH", "TENSOR_OP_MATH", ... (the enum without its prefix).
std::string math_type_name(cudnnMathType_t m);

/// One line: "forward IMPLICIT_GEMM 0.012 ms, backward-data ALGO_1 0.020 ms, backward-filter ALGO_1 0.031 ms, workspace 0 B".
std::string describe(const ConvAlgorithms& a);

}  // namespace course
