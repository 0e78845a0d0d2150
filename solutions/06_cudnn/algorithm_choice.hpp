/// @file algorithm_choice.hpp
/// @brief Stage 06: the conv algorithms a run chose, as its checkpoint records them, and taking them back (glue, not a task).
///
/// cudnnFind (Task 6.3) chooses by timing, on a GPU that other programs may be
/// using at the same moment, so two runs of one model can choose different
/// algorithms, and different algorithms round differently (FFT and Winograd
/// transform their operands; even two direct ones sum in other orders). A
/// resumed run that measured again would then not continue the run it was
/// stopped from: after an epoch their weights can be percents apart. So the
/// engine records what it chose (Engine::engine_state(), under
/// kAlgorithmRecordName) and the engine of a resumed run takes the record back
/// (EngineConfig::engine_state) instead of measuring, after checking that
/// cuDNN here can still run each algorithm (cudnnGet*WorkspaceSize answers the
/// workspace it needs, or that it does not support the layer).
///
/// The record is JSON text, one entry per conv layer and batch size met:
///
///     {"format": 1, "rule": "deterministic", "gpu": "NVIDIA H100 80GB HBM3 (sm_90)", "cudnn": 91000,
///      "layers": [{"layer": "conv1 (conv16k3p1)", "batch": 8, "shape": "8|1x28x28|16k3p1s1",
///                  "math": "FMA_MATH", "forward": "IMPLICIT_PRECOMP_GEMM", "backward_data": "ALGO_1",
///                  "backward_filter": "FFT", "bytes": [0, 0, 4196352], "ms": [0.012, 0.02, 0.031]}, ...]}
///
/// "bytes" and "ms" (forward, backward-data, backward-filter) are what the
/// choosing run measured: kept for the --verbose report, never trusted for the
/// workspace.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "06_cudnn/conv_algorithms.hpp"
#include "06_cudnn/descriptors.hpp"
#include "06_cudnn/gpu_handles.hpp"
#include "common/train/engine.hpp"

namespace course {

/// The name of stage 06's record among a checkpoint's engine records.
inline constexpr char kAlgorithmRecordName[] = "cudnn_conv_algorithms";

/// One conv layer's algorithms at one batch size, as recorded.
struct RecordedAlgorithms {
  std::string layer;     ///< the engine's name of the layer, "conv1 (conv16k3p1)"
  int batch = 0;         ///< the batch size they were measured at (cudnnFind measures per shape)
  std::string shape;     ///< conv_shape_key() of the layer at that batch size
  ConvAlgorithms algos;  ///< the three algorithms and their math type (with the bytes and times measured then)
};

/// A run's choices: the rule it chose by and every conv layer at every batch size it met.
struct AlgorithmRecord {
  std::string rule;  ///< algo_rule_name() of the choosing run
  std::string gpu;   ///< gpu_name() there, and
  int cudnn = 0;     ///< cudnnGetVersion(): told when they differ from this run's
  std::vector<RecordedAlgorithms> layers;
};

/// "8|1x28x28|16k3p1s1": what a conv layer's algorithms are measured for, at batch size B.
std::string conv_shape_key(const ConvGeometry& g, int B);

/// The record as JSON text (the layout above).
std::string encode_algorithm_record(const AlgorithmRecord& record);

/// Reads what encode_algorithm_record() wrote. Throws std::invalid_argument
/// naming the problem: not JSON, another format, a missing or mistyped field,
/// an algorithm or math type this cuDNN has no name for, a batch size below 1,
/// or one layer and batch size recorded twice.
AlgorithmRecord decode_algorithm_record(const std::string& text);

/// The entries of `state`'s record that a run choosing by `rule` may take. None
/// when there is no record; none, with a warning on stderr saying that the
/// algorithms are measured again, when the record cannot be read or was made
/// by another rule (--conv-algos). A note on stderr when it was made on another
/// GPU or cuDNN: its algorithms are still taken where cuDNN can run them here.
std::vector<RecordedAlgorithms> recorded_algorithms(const EngineState& state, AlgoRule rule);

/// The algorithms of the conv layer `g` at batch size B that `rule` chooses
/// (choose_conv_algorithms), with `d` describing it: measured the first time
/// this process meets the shape and remembered for the whole process after
/// that, so that however many engines (tests, benchmarks) meet a shape, they
/// run the very same algorithms.
ConvAlgorithms measured_conv_algorithms(const GpuHandles& h, const ConvDescriptors& d, const ConvGeometry& g, int B,
                                        AlgoRule rule);

/// The entry of `recorded` for `layer` at batch B, taken (take_recorded_algorithms())
/// for the layer `d` describes; nullopt when there is none, and nullopt with a
/// warning on stderr when it cannot be used here (another shape, or an algorithm
/// cuDNN cannot run): the caller measures instead.
std::optional<ConvAlgorithms> take_recorded(const std::vector<RecordedAlgorithms>& recorded, const std::string& layer,
                                            const ConvGeometry& g, int B, const GpuHandles& h,
                                            const ConvDescriptors& d);

/// The engine state of a run that chose `chosen` by `rule`: the record of those,
/// and of the entries of `recorded` (the record it was given) for layers and
/// batch sizes it has not met (yet), so that a checkpoint passes them on. None
/// when both are empty (a model without conv layers).
EngineState algorithm_state(const std::vector<RecordedAlgorithms>& chosen,
                            const std::vector<RecordedAlgorithms>& recorded, AlgoRule rule);

/// Takes recorded algorithms for the layer `d` describes: "" when cuDNN can run
/// all three here, after setting `a`'s math type on d.conv and raising `a`'s
/// workspace bytes to what cudnnGet*WorkspaceSize says each needs; else why
/// not (the direction, the algorithm, cuDNN's answer), with `d` and `a` as
/// they were. Throws nothing for an unsupported algorithm.
std::string take_recorded_algorithms(const GpuHandles& h, const ConvDescriptors& d, ConvAlgorithms& a);

}  // namespace course
