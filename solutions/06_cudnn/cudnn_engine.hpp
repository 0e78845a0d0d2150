/// @file cudnn_engine.hpp
/// @brief Stage 06: the engine the shared trainer drives: any model of the course on cuDNN and cuBLAS (glue, not a task).
///
/// Where everything lives (as in stage 04, plus what cuDNN needs):
///
/// | on the device                                              | moved to / from the host              |
/// |------------------------------------------------------------|---------------------------------------|
/// | the training and test sets                                 | uploaded once, on first use           |
/// | every parameter, gradient and velocity, one flat buffer each | parameters at start and on get/set  |
/// | each layer's output and gradient; one shared workspace     | never                                 |
/// | the epoch's shuffled order and the step counter            | order uploaded once per epoch         |
/// | the epoch's loss sum and correct count                     | read once per epoch; the loss sum also copied back after every step, read a few steps late (the NaN check) |
///
/// | on the host, once per batch size                           | made                                  |
/// |------------------------------------------------------------|---------------------------------------|
/// | descriptors of every layer (Task 6.2)                      | the first time a batch size is seen   |
/// | each conv layer's algorithms (Task 6.3)                    | measured once per shape per process, or taken from a checkpoint's record (algorithm_choice.hpp) |
///
/// A training step queues, on the one stream of Task 6.1: the batch gather
/// (Task 6.10), every layer's forward pass (6.4, 6.6, 6.7, 6.9), the loss
/// (6.8), every layer's backward pass (6.5, 6.6, 6.7, 6.9), one SGD update of
/// the flat parameter buffer (stage 04's kernel) and the step counter. With the
/// graph on (the default), the first full batch records that sequence as a
/// CUDA graph and every full batch replays it, until the learning rate or an
/// address in it changes (under the default cosine schedule: at each epoch's
/// first full batch, recorded again); a last, smaller batch runs the same
/// sequence uncaptured. With --profile every step runs uncaptured, with
/// CUDA events around each layer.
///
/// Flatten costs nothing: in NCHW the flattened vector is the same bytes, so
/// the layer after a flatten reads the flatten's input buffer directly.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/gpu/engine_parts.hpp"
#include "06_cudnn/activation_cudnn.hpp"
#include "06_cudnn/algorithm_choice.hpp"
#include "06_cudnn/conv_algorithms.hpp"
#include "06_cudnn/conv_cudnn.hpp"
#include "06_cudnn/dense_cublas.hpp"
#include "06_cudnn/descriptors.hpp"
#include "06_cudnn/gpu_handles.hpp"
#include "06_cudnn/pool_cudnn.hpp"
#include "06_cudnn/step_graph.hpp"
#include "common/arch.hpp"
#include "common/cuda_check.hpp"
#include "common/engine.hpp"
#include "common/epoch_order_ahead.hpp"

namespace course {

/// Trains any model of the course (dense, conv, max-pool, average-pool, flatten, activations) on cuDNN and cuBLAS.
class CudnnEngine : public Engine {
 public:
  /// Builds cfg's model on the GPU from `initial` (tensors in model order), or,
  /// when `initial` is empty, from initial_parameters(): the weights every
  /// stage starts from for cfg.seed. Describes every layer and chooses the conv
  /// algorithms for batch size cfg.batch by `rule` (conv_algorithms.hpp); where
  /// cfg.engine_state records the algorithms a run chose (a resumed run's
  /// checkpoint: algorithm_choice.hpp), it takes those instead, at every batch size they cover.
  /// `use_graph` replays each full training batch as one CUDA graph.
  ///
  /// Throws std::invalid_argument before touching the GPU for a loss other than
  /// cross-entropy and mse or a batch size below 1 (and, from the layer
  /// factory, for a model that does not fit its input); course::GpuError when
  /// the GPU, cuDNN or cuBLAS cannot be used.
  explicit CudnnEngine(const EngineConfig& cfg, bool use_graph = true, const std::vector<NamedTensor>& initial = {},
                       AlgoRule rule = AlgoRule::Deterministic);
  ~CudnnEngine() override;
  CudnnEngine(const CudnnEngine&) = delete;
  CudnnEngine& operator=(const CudnnEngine&) = delete;

  /// course::gpu_name(), e.g. "NVIDIA H100 80GB HBM3 (sm_90)".
  std::string device() const override;
  /// Read by every SGD step that follows.
  void set_learning_rate(double lr) override { cfg_.lr = lr; }
  /// begin_epoch(), train_batch() for every batch in order, end_epoch().
  /// `on_batch` gets NaN for the loss, which stays on the device; a NaN or Inf loss
  /// throws NonFiniteLoss a few steps later (train_epoch_in_batches()).
  EpochStats train_epoch(const Dataset& train, int epoch, const BatchCallback& on_batch) override;
  EpochStats evaluate(const Dataset& data, std::vector<int>* predictions) override;
  std::vector<NamedTensor> get_parameters() override;
  void set_parameters(const std::vector<NamedTensor>& params) override;
  /// The SGD velocity of every parameter, in model order ("conv1.weight.velocity", ...), for checkpoints.
  std::vector<NamedTensor> get_optimizer_state() override;
  void set_optimizer_state(const std::vector<NamedTensor>& state) override;
  /// With EngineConfig::profile: GPU time of every layer, plus the batch
  /// gather, the loss and the SGD update, from CUDA events.
  std::vector<LayerTime> layer_times() const override { return profiler_.times(); }
  void reset_layer_times() override;
  /// Non-empty for AlgoRule::Fastest, whose algorithms may add with atomics: then two
  /// runs, and a resumed run and an uninterrupted one, differ in the last bits.
  std::string nondeterminism() const override;
  /// With --loss mse the loss also adds up the absolute errors (stage 04's absolute_error_gpu).
  bool reports_mae() const override { return true; }

  // ---- the pieces of train_epoch(), public for the benchmarks and tests ----

  /// Uploads `train` (when not already on the device) and the order of `epoch`,
  /// zeroes the step counter and the epoch's sums, and prepares the batch sizes the epoch needs.
  void begin_epoch(const Dataset& train, int epoch);
  /// Batches in the current epoch.
  int num_batches() const;
  /// Queues training step b (b must be the next batch of the epoch: the step
  /// counter lives on the device) and returns without waiting for the GPU.
  void train_batch(int b);
  /// Waits for the GPU and returns the epoch's sums (one copy to the host).
  EpochStats end_epoch();

  /// True when full batches are replayed as a CUDA graph (on, and not profiling).
  bool graph_enabled() const { return use_graph_ && !cfg_.profile; }
  /// Training steps run as graph replays since construction.
  long graph_replays() const { return graph_replays_; }
  /// Nodes in the captured step (0 before the first capture).
  std::size_t graph_nodes() const { return graph_.nodes(); }
  /// One line per conv layer at batch cfg.batch: the algorithms cudnnFind chose, their
  /// measured times and workspaces, then the shared workspace.
  std::string algorithm_report();
  /// "2 of 2 conv layers at batch 8 run the recorded algorithms (not measured
  /// again)" when cfg.engine_state holds a record of conv algorithms, else "".
  std::string recorded_algorithms_note();
  /// The record of the conv algorithms of every batch size met (and of those the
  /// record it was given holds for batch sizes not met yet), for a checkpoint.
  EngineState engine_state() const override;
  /// The stream and library handles (benchmarks queue their own work on them).
  const GpuHandles& handles() const { return ctx_.handles(); }

  // ---- what data parallelism needs (an engine run on several GPUs at once) ----

  /// From now on every training step calls `sync`'s hooks (common/gpu/gradient_sync.hpp;
  /// nullptr: none). A step captured before is captured again, with them.
  void set_gradient_sync(GradientSync* sync);
  /// Forgets the captured step: the next full batch is captured anew. Data
  /// parallelism calls it on every rank at the start of every epoch, because a capture
  /// holding NCCL calls is collective (every rank captures at the same step),
  /// and what makes this engine capture again by itself (a larger workspace for
  /// a new batch size, say) differs from rank to rank.
  void drop_graph();
  /// Each layer's share of the flat gradient buffer, in the order backward()
  /// finishes them (the last layer first): the order of the gradients_queued() calls.
  const std::vector<GradientRange>& gradient_ranges() const { return grad_ranges_; }
  /// The batch size of the engine's full steps (EngineConfig::batch).
  int batch() const { return cfg_.batch; }
  /// The flat gradient buffer: parameter_count() floats, laid out like the parameters.
  float* gradients() { return grads_.get(); }
  std::size_t parameter_count() const { return params_.size(); }
  /// begin_epoch() visiting the examples of `train` at `order` (indices into
  /// `train`), in batches of cfg.batch from its start: how data parallelism gives a rank
  /// its share of the epoch. begin_epoch(train, epoch) is this with course::epoch_order.
  /// Throws std::invalid_argument for an index outside `train`.
  void begin_epoch_in_order(const Dataset& train, const std::vector<int>& order);
  /// Queues the next step of the epoch for a rank that has no examples in it,
  /// once its own batches are done: every gradient 0, then the GradientSync
  /// hooks and the update of train_batch(), so that the rank takes part in the
  /// step's all-reduce and updates its parameters as every other rank does.
  void train_batch_without_examples();

 private:
  /// A layer as this engine runs it (batch-size independent).
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
  /// What a captured step points into; a change means capturing again.
  struct GraphKey {
    const void* images = nullptr;
    const void* labels = nullptr;
    const void* order = nullptr;
    const void* workspace = nullptr;
    double lr = 0;  // the SGD launch inside the graph holds the learning rate by value
    bool operator==(const GraphKey& o) const {
      return images == o.images && labels == o.labels && order == o.order && workspace == o.workspace &&
             lr == o.lr;
    }
  };
  using Pass = GpuProfiler::Pass;

  static EngineConfig checked(const EngineConfig& cfg);
  cudaStream_t stream() const { return ctx_.stream(); }
  Workspace workspace() { return {workspace_.get(), workspace_.size()}; }
  const BatchPlan& plan_for(int B);
  const float* forward(const float* x, const BatchPlan& plan);
  void backward(const BatchPlan& plan);
  /// The loss of the batch into `sums` (loss sum, correct count and, with mse, the absolute errors).
  void loss(const BatchPlan& plan, const float* logits, const int* labels, float* dlogits, DeviceSums& sums,
            int* predictions);
  void queue_step(const BatchPlan& plan, DeviceSums& sums, bool update);
  void queue_update();
  void run_captured(const BatchPlan& plan);
  GraphKey graph_key();
  /// Runs `work`, timed on the engine's stream for --profile as row `row`, pass `pass`.
  template <typename Work>
  void timed(std::size_t row, Pass pass, Work&& work) {
    profiler_.time(row, pass, recording_, stream(), work);
  }
  /// A flat device buffer laid out like the parameters, as named tensors (each name + `suffix`),
  /// after the work queued so far.
  std::vector<NamedTensor> split(const DeviceBuffer<float>& flat, const std::string& suffix);

  EngineConfig cfg_;  // checked before anything touches the GPU
  bool use_graph_;
  AlgoRule algo_rule_;
  std::vector<RecordedAlgorithms> recorded_;  ///< the record of cfg.engine_state that this rule may take
  GpuContext ctx_;    // declared before every GPU resource, so destroyed after them
  std::vector<Layer> layers_;
  ParamLayout layout_;  ///< the parameters' names and shapes, in model order
  std::vector<GradientRange> grad_ranges_;  ///< layers with parameters, last layer first
  GradientSync* sync_ = nullptr;            ///< data parallelism's hooks, or none
  DeviceBuffer<float> params_, grads_, velocity_;
  std::vector<DeviceBuffer<float>> act_buf_;    ///< act_buf_[0]: the gathered batch; [i + 1]: layer i's output (none for flatten)
  std::vector<DeviceBuffer<float>> delta_buf_;  ///< delta_buf_[i]: dL/d(input of layer i), i >= 1; [L]: dL/dlogits
  std::vector<const float*> x_of_;              ///< input of layer i in the last forward() (flatten passes its input on)
  std::vector<const float*> dy_of_;             ///< dL/d(output of layer i - 1) in the last backward()
  DeviceBuffer<float> log_probs_;
  DeviceBuffer<int> batch_labels_, predictions_;
  DeviceSums sums_, eval_sums_, scratch_sums_;  ///< training, evaluation, and the uncounted warm-up step
  DeviceBuffer<unsigned char> workspace_;
  std::map<int, std::unique_ptr<BatchPlan>> plans_;
  DeviceEpoch epoch_;  ///< the training set, the epoch's order and the step counter, on the device
  EpochOrderAhead orders_;  ///< the next epoch's order, shuffled on the host while this epoch runs
  DeviceDataset eval_data_;

  StepGraph graph_;
  GraphKey graph_key_;
  bool warmed_up_ = false;
  long graph_replays_ = 0;

  GpuProfiler profiler_;  ///< one row per layer, then gather, loss, SGD
  std::size_t gather_row_ = 0, loss_row_ = 0, sgd_row_ = 0;
  bool recording_ = false;
};

}  // namespace course
