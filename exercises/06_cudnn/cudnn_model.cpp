/// @file cudnn_model.cpp
/// @brief Stage 06: the cuDNN step's layers, plans per batch size, algorithm record and reports (glue, not a task).
#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>

#include "01_fc_softmax/network.hpp"
#include "02_conv_pool/cnn.hpp"
#include "02_conv_pool/layers.hpp"
#include "06_cudnn/avgpool_cudnn.hpp"
#include "06_cudnn/cudnn_step.hpp"
#include "common/gpu/cudnn_check.hpp"
#include "common/model/model_file.hpp"
#include "common/core/rng.hpp"

namespace course {

EngineConfig CudnnStep::checked(const EngineConfig& cfg) {
  check_step_config(cfg, "stage 06");
  layer_shapes(cfg.arch, cfg.input, cfg.classes);  // throws std::invalid_argument naming the layer that does not fit
  return cfg;
}

CudnnStep::CudnnStep(const EngineConfig& cfg, AlgoRule rule)
    : cfg_(checked(cfg)), algo_rule_(rule), recorded_(recorded_algorithms(cfg_.engine_state, rule)),
      bound_(ctx_.handles()) {
  // ---- the layers, their names and the parameter layout, from stages 01 and 02's
  // Network (built on the host for its bookkeeping only).
  Network<float> net(cfg_.arch, cfg_.input, cfg_.classes, make_cnn_layer<float>);
  std::size_t offset = 0;
  Shape3 in = cfg_.input;
  for (std::size_t i = 0; i < net.layers().size(); ++i) {
    const auto& layer = *net.layers()[i];
    Layer l;
    l.kind = cfg_.arch.layers[i].kind;
    l.name = layer.name() + " (" + layer.token() + ")";
    l.in = in;
    l.out = layer.out_shape();
    if (const auto* conv = dynamic_cast<const Conv2dLayer<float>*>(&layer)) l.conv = conv->geometry();
    if (const auto* pool = dynamic_cast<const MaxPoolLayer<float>*>(&layer)) l.pool = pool->geometry();
    if (const auto* pool = dynamic_cast<const AvgPoolLayer<float>*>(&layer)) l.pool = pool->geometry();
    if (l.kind == LayerKind::Conv || l.kind == LayerKind::Dense) {
      auto* mutable_layer = net.layers()[i].get();
      const auto ps = mutable_layer->params();  // weight, then bias
      l.weight = offset;
      l.bias = offset + ps[0]->value.size();
      offset = l.bias + ps[1]->value.size();
      grad_ranges_.push_back({l.weight, offset, l.name});
    }
    if (l.kind == LayerKind::Activation) {
      l.act = cfg_.arch.layers[i].act;
      l.slope = static_cast<float>(cfg_.arch.layers[i].slope);
      cudnnActivationMode_t mode{};
      l.act_on_cudnn = cudnn_activation_mode(l.act, &mode);
      if (l.act_on_cudnn) {
        l.act_desc = std::make_unique<ActivationDescriptor>();
        describe_activation(*l.act_desc, mode);
      }
    }
    layers_.push_back(std::move(l));
    in = layer.out_shape();
  }
  // backward() finishes the layers last to first.
  std::reverse(grad_ranges_.begin(), grad_ranges_.end());
  for (std::size_t r = 0, i = layers_.size(); i-- > 0;)
    if (layers_[i].kind == LayerKind::Conv || layers_[i].kind == LayerKind::Dense) layers_[i].range = static_cast<int>(r++);
  for (Param<float>* p : net.params()) {
    layout_.names.push_back(p->name);
    layout_.shapes.push_back(p->value.shape);
  }
}

CudnnStep::~CudnnStep() {
  // The engine's stream may be gone by now: the handles go back to their own before they are destroyed.
  if (bound_.stream != ctx_.stream()) {
    cudnnSetStream(bound_.cudnn, ctx_.stream());
    cublasSetStream(bound_.cublas, ctx_.stream());
  }
}

std::vector<NamedTensor> CudnnStep::initial_parameters() const {
  return course::initial_parameters(cfg_.arch, cfg_.input, cfg_.classes, cfg_.seed, make_cnn_layer<float>);
}

std::vector<std::string> CudnnStep::layer_rows() const {
  std::vector<std::string> rows;
  for (const Layer& l : layers_) rows.push_back(l.name);
  return rows;
}

void CudnnStep::allocate(int batch) {
  // All device memory of the layers now: nothing is allocated while training (but a workspace that must grow).
  const auto B = static_cast<std::size_t>(batch);
  const std::size_t L = layers_.size();
  act_buf_.resize(L + 1);
  delta_buf_.resize(L + 1);
  x_of_.assign(L + 1, nullptr);
  dy_of_.assign(L + 1, nullptr);
  for (std::size_t i = 0; i < L; ++i) {
    if (layers_[i].kind == LayerKind::Flatten) continue;  // flatten reuses its input's bytes
    act_buf_[i + 1].resize(B * static_cast<std::size_t>(layers_[i].out.size()));
    if (i >= 1) delta_buf_[i].resize(B * static_cast<std::size_t>(layers_[i].in.size()));
  }
  delta_buf_[L].resize(B * static_cast<std::size_t>(cfg_.classes));
  log_probs_.resize(B * static_cast<std::size_t>(cfg_.classes));
}

void CudnnStep::bind(cudaStream_t stream) {
  if (stream == bound_.stream) return;
  CUDNN_CHECK(cudnnSetStream(bound_.cudnn, stream));
  CUBLAS_CHECK(cublasSetStream(bound_.cublas, stream));
  bound_.stream = stream;
}

void CudnnStep::prepare(const StepContext& ctx, int B) {
  bind(ctx.stream);
  plan_for(B);
}

// ---- plans: descriptors and algorithms per batch size ------------------------------

const CudnnStep::BatchPlan& CudnnStep::planned(int B) const {
  const auto found = plans_.find(B);
  if (found == plans_.end())
    throw std::logic_error("CudnnStep: batch size " + std::to_string(B) + " was not prepared (StepModel::prepare)");
  return *found->second;
}

const CudnnStep::BatchPlan& CudnnStep::plan_for(int B) {
  auto found = plans_.find(B);
  if (found != plans_.end()) return *found->second;
  auto plan = std::make_unique<BatchPlan>();
  plan->B = B;
  plan->layers.resize(layers_.size());
  std::vector<ConvAlgorithms> convs;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = layers_[i];
    LayerPlan& lp = plan->layers[i];
    switch (l.kind) {
      case LayerKind::Conv: {
        lp.conv = std::make_unique<ConvDescriptors>();
        describe_conv(*lp.conv, l.conv, B);
        // Those the run this one continues chose, where cuDNN can still run them
        // (measuring again could choose others: algorithm_choice.hpp); else measured.
        const std::optional<ConvAlgorithms> taken = take_recorded(recorded_, l.name, l.conv, B, bound_, *lp.conv);
        lp.algos = taken ? *taken : measured_conv_algorithms(bound_, *lp.conv, l.conv, B, algo_rule_);
        plan->recorded += taken ? 1 : 0;
        convs.push_back(lp.algos);
        break;
      }
      case LayerKind::MaxPool:
        lp.pool = std::make_unique<PoolDescriptors>();
        describe_pool(*lp.pool, l.pool, B);
        break;
      case LayerKind::AvgPool:
        lp.pool = std::make_unique<PoolDescriptors>();
        describe_avgpool(*lp.pool, l.pool, B);
        break;
      case LayerKind::Activation:
        if (l.act_on_cudnn) {
          lp.act = std::make_unique<TensorDescriptor>();
          set_nchw(*lp.act, B, l.out.c, l.out.h, l.out.w);
        }
        break;
      case LayerKind::Dense:
        lp.dense = std::make_unique<DenseDescriptors>();
        set_nchw(lp.dense->y, B, l.out.c, 1, 1);
        set_nchw(lp.dense->bias, 1, l.out.c, 1, 1);
        break;
      case LayerKind::Flatten:
        break;
    }
  }
  set_nchw(plan->logits, B, cfg_.classes, 1, 1);
  plan->workspace_bytes = shared_workspace_bytes(convs);
  if (plan->workspace_bytes > workspace_.size()) {
    // A captured step points into the old workspace: the engine sees captured_memory() move and captures again.
    CUDA_CHECK(cudaStreamSynchronize(bound_.stream));
    workspace_.resize(plan->workspace_bytes);
  }
  return *plans_.emplace(B, std::move(plan)).first->second;
}

// ---- reports and the algorithm record ----------------------------------------------

std::string CudnnStep::algorithm_report() const {
  const BatchPlan& plan = planned(cfg_.batch);
  std::string out;
  for (std::size_t i = 0; i < layers_.size(); ++i)
    if (layers_[i].kind == LayerKind::Conv)
      out += layers_[i].name + ", batch " + std::to_string(cfg_.batch) + ": " + describe(plan.layers[i].algos) + "\n";
  out += "shared cuDNN workspace: " + std::to_string(workspace_.size()) + " bytes\n";
  return out;
}

std::string CudnnStep::recorded_algorithms_note() const {
  if (cfg_.engine_state.count(kAlgorithmRecordName) == 0) return "";
  const BatchPlan& plan = planned(cfg_.batch);
  const auto convs =
      std::count_if(layers_.begin(), layers_.end(), [](const Layer& l) { return l.kind == LayerKind::Conv; });
  return std::to_string(plan.recorded) + " of " + std::to_string(convs) + " conv layers at batch " +
         std::to_string(cfg_.batch) + " run the recorded algorithms (not measured again)";
}

EngineState CudnnStep::engine_state() const {
  std::vector<RecordedAlgorithms> chosen;  // every conv layer at every batch size met
  for (const auto& [B, plan] : plans_)
    for (std::size_t i = 0; i < layers_.size(); ++i)
      if (layers_[i].kind == LayerKind::Conv)
        chosen.push_back({layers_[i].name, B, conv_shape_key(layers_[i].conv, B), plan->layers[i].algos});
  return algorithm_state(chosen, recorded_, algo_rule_);
}

std::string CudnnStep::nondeterminism() const {
  if (algo_rule_ != AlgoRule::Fastest) return "";
  return "stage 06 with --conv-algos fastest may run cuDNN algorithms that add with atomics, in the order the "
         "threads arrive";
}

}  // namespace course
