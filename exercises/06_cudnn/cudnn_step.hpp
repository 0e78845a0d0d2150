/// @file cudnn_step.hpp
/// @brief Stage 06: any model of the course on cuDNN and cuBLAS, as the step model the GPU engine drives (glue, not a task).
///
/// The engine (common/gpu/gpu_engine.hpp) owns the data set on the device, the epoch's
/// order and the batch gather, the loss sums, the flat parameter, gradient and velocity
/// buffers, the profiler, evaluation, checkpoints and the CUDA graph of a step. This step
/// owns what cuDNN and cuBLAS need:
///
/// | on the device, owned here                                  | layout                     |
/// |------------------------------------------------------------|----------------------------|
/// | each layer's output and dL/d(its input)                    | [B, C, H, W]               |
/// | the log-probabilities of the softmax                       | [B, classes]               |
/// | one cuDNN workspace every conv layer shares                | the largest need of any batch size met |
///
/// | on the host, once per batch size                           | made                       |
/// |------------------------------------------------------------|----------------------------|
/// | descriptors of every layer (Task 6.2)                      | prepare(): the first time a batch size is seen |
/// | each conv layer's algorithms (Task 6.3)                    | measured once per shape per process, or taken from a checkpoint's record (algorithm_choice.hpp) |
///
/// A step queues, on the engine's stream (the handles of Task 6.1 are bound to it): every
/// layer's forward pass (6.4, 6.6, 6.7, 6.9), the loss (6.8), every layer's backward pass
/// (6.5, 6.6, 6.7, 6.9) and stage 04's SGD update of the flat buffers. A workspace grown
/// for a new batch size moves: captured_memory() tells the engine to capture its graph again.
///
/// Flatten costs nothing: in NCHW the flattened vector is the same bytes, so
/// the layer after a flatten reads the flatten's input buffer directly.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "06_cudnn/activation_cudnn.hpp"
#include "06_cudnn/algorithm_choice.hpp"
#include "06_cudnn/conv_algorithms.hpp"
#include "06_cudnn/conv_cudnn.hpp"
#include "06_cudnn/dense_cublas.hpp"
#include "06_cudnn/descriptors.hpp"
#include "06_cudnn/gpu_handles.hpp"
#include "06_cudnn/pool_cudnn.hpp"
#include "common/model/arch.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/train/engine.hpp"
#include "common/gpu/step_model.hpp"

namespace course {

/// Any model of the course (dense, conv, max-pool, average-pool, flatten, activations) as a step on cuDNN and cuBLAS.
class CudnnStep : public StepModel {
 public:
  /// cfg's model; its conv algorithms are chosen by `rule` (conv_algorithms.hpp) for every
  /// batch size the engine prepares, or, where cfg.engine_state records the algorithms a run
  /// chose (a resumed run's checkpoint: algorithm_choice.hpp), taken from that record.
  /// Throws std::invalid_argument before touching the GPU for a loss other than
  /// cross-entropy and mse, a batch size below 1 or a model that does not fit its input;
  /// course::GpuError when the GPU, cuDNN or cuBLAS cannot be used.
  explicit CudnnStep(const EngineConfig& cfg, AlgoRule rule = AlgoRule::Deterministic);
  ~CudnnStep() override;
  CudnnStep(const CudnnStep&) = delete;
  CudnnStep& operator=(const CudnnStep&) = delete;

  const ParamLayout& layout() const override { return layout_; }
  /// course::initial_parameters(..., make_cnn_layer<float>): the weights every stage starts from.
  std::vector<NamedTensor> initial_parameters() const override;
  std::vector<std::string> layer_rows() const override;
  std::vector<GradientRange> gradient_ranges() const override { return grad_ranges_; }
  void allocate(int batch) override;
  /// Binds the handles to ctx.stream and makes the descriptors and algorithms of batch size B
  /// (once per batch size), growing the shared workspace when they need more.
  void prepare(const StepContext& ctx, int B) override;
  /// The shared workspace: it moves when a new batch size needs more.
  const void* captured_memory() const override { return workspace_.get(); }

  const float* forward(const StepContext& ctx, const float* x, int B) override;
  void loss(const StepContext& ctx, const float* logits, const int* labels, int B, int* predictions) override;
  void backward(const StepContext& ctx, int B) override;
  void update(const StepContext& ctx) override;

  /// Non-empty for AlgoRule::Fastest, whose algorithms may add with atomics: then two
  /// runs, and a resumed run and an uninterrupted one, differ in the last bits.
  std::string nondeterminism() const override;
  /// The record of the conv algorithms of every batch size met (and of those the
  /// record it was given holds for batch sizes not met yet), for a checkpoint.
  EngineState engine_state() const override;

  /// One line per conv layer at batch cfg.batch: the algorithms cudnnFind chose, their
  /// measured times and workspaces, then the shared workspace (once the engine prepared that batch).
  std::string algorithm_report() const;
  /// "2 of 2 conv layers at batch 8 run the recorded algorithms (not measured
  /// again)" when cfg.engine_state holds a record of conv algorithms, else "".
  std::string recorded_algorithms_note() const;
  /// The library handles, bound to the engine's stream once it prepared a batch.
  const GpuHandles& handles() const { return bound_; }

 private:
  /// A layer as this step runs it (batch-size independent).
  struct Layer {
    LayerKind kind = LayerKind::Dense;
    std::string name;                  ///< "conv1 (conv16k3p1)"
    Shape3 in, out;                    ///< one example's input and output
    ConvGeometry conv;                 ///< conv layers
    PoolGeometry pool;                 ///< max-pool and average-pool layers
    std::size_t weight = 0, bias = 0;  ///< offsets of W and b in the flat parameter buffer
    int range = -1;                    ///< its entry in grad_ranges_ (layers with parameters)
    Activation act = Activation::ReLU;
    float slope = 0.01f;               ///< leaky ReLU's (LayerSpec::slope), for stage 04's kernel
    bool act_on_cudnn = false;         ///< false: stage 04's kernel (leaky ReLU, softplus)
    std::unique_ptr<ActivationDescriptor> act_desc;
  };
  /// What cuDNN needs of one layer at one batch size (only the member of the layer's kind is set).
  struct LayerPlan {
    std::unique_ptr<ConvDescriptors> conv;
    ConvAlgorithms algos;
    std::unique_ptr<PoolDescriptors> pool;
    std::unique_ptr<TensorDescriptor> act;  ///< activation input and output [B, C, H, W]
    std::unique_ptr<DenseDescriptors> dense;
  };
  struct BatchPlan {
    int B = 0;
    std::vector<LayerPlan> layers;
    TensorDescriptor logits;  ///< [B, classes, 1, 1] for the softmax
    std::size_t workspace_bytes = 0;
    int recorded = 0;  ///< conv layers that run algorithms taken from the record (cfg.engine_state)
  };
  using Pass = GpuProfiler::Pass;

  static EngineConfig checked(const EngineConfig& cfg);
  void bind(cudaStream_t stream);
  Workspace workspace() { return {workspace_.get(), workspace_.size()}; }
  /// The plan of batch size B, made now (on the bound stream) when it is the first of its size.
  const BatchPlan& plan_for(int B);
  /// The plan prepare() made for batch size B (std::logic_error when it made none).
  const BatchPlan& planned(int B) const;

  EngineConfig cfg_;  // checked before anything touches the GPU
  AlgoRule algo_rule_;
  std::vector<RecordedAlgorithms> recorded_;  ///< the record of cfg.engine_state that this rule may take
  GpuContext ctx_;    // declared before every GPU resource, so destroyed after them
  GpuHandles bound_;  ///< ctx_'s handles, their stream the one they are bound to now
  std::vector<Layer> layers_;
  ParamLayout layout_;  ///< the parameters' names and shapes, in model order
  std::vector<GradientRange> grad_ranges_;      ///< layers with parameters, last layer first
  std::vector<DeviceBuffer<float>> act_buf_;    ///< act_buf_[i + 1]: layer i's output (none for flatten)
  std::vector<DeviceBuffer<float>> delta_buf_;  ///< delta_buf_[i]: dL/d(input of layer i), i >= 1; [L]: dL/dlogits
  std::vector<const float*> x_of_;              ///< input of layer i in the last forward() (flatten passes its input on)
  std::vector<const float*> dy_of_;             ///< dL/d(output of layer i - 1) in the last backward()
  DeviceBuffer<float> log_probs_;
  DeviceBuffer<unsigned char> workspace_;
  std::map<int, std::unique_ptr<BatchPlan>> plans_;
};

}  // namespace course
