/// @file cudnn_engine_state.cpp
/// @brief Stage 06: what the cuDNN engine gives and takes of its state: parameters, optimizer state, the conv algorithms it chose (glue, not a task).
#include <algorithm>
#include <string>
#include <vector>

#include "06_cudnn/cudnn_engine.hpp"

namespace course {

// ---- parameters ---------------------------------------------------------------------------

std::vector<NamedTensor> CudnnEngine::split(const DeviceBuffer<float>& flat, const std::string& suffix) {
  CUDA_CHECK(cudaStreamSynchronize(stream()));  // the last SGD update must have landed
  return layout_.split(flat.download(), suffix);
}

std::vector<NamedTensor> CudnnEngine::get_parameters() { return split(params_, ""); }

void CudnnEngine::set_parameters(const std::vector<NamedTensor>& params) {
  const std::vector<float> flat = layout_.flatten_checked(params, "");
  CUDA_CHECK(cudaStreamSynchronize(stream()));
  params_.upload(flat.data(), flat.size());
}

std::vector<NamedTensor> CudnnEngine::get_optimizer_state() { return split(velocity_, ".velocity"); }

void CudnnEngine::set_optimizer_state(const std::vector<NamedTensor>& state) {
  const std::vector<float> flat = layout_.flatten_checked(state, ".velocity");
  CUDA_CHECK(cudaStreamSynchronize(stream()));
  velocity_.upload(flat.data(), flat.size());
}

// ---- reports --------------------------------------------------------------------------------

std::string CudnnEngine::algorithm_report() {
  const BatchPlan& plan = plan_for(cfg_.batch);
  std::string out;
  for (std::size_t i = 0; i < layers_.size(); ++i)
    if (layers_[i].kind == LayerKind::Conv)
      out += layers_[i].name + ", batch " + std::to_string(cfg_.batch) + ": " + describe(plan.layers[i].algos) + "\n";
  out += "shared cuDNN workspace: " + std::to_string(workspace_.size()) + " bytes\n";
  return out;
}

std::string CudnnEngine::recorded_algorithms_note() {
  if (cfg_.engine_state.count(kAlgorithmRecordName) == 0) return "";
  const BatchPlan& plan = plan_for(cfg_.batch);
  const auto convs =
      std::count_if(layers_.begin(), layers_.end(), [](const Layer& l) { return l.kind == LayerKind::Conv; });
  return std::to_string(plan.recorded) + " of " + std::to_string(convs) + " conv layers at batch " +
         std::to_string(cfg_.batch) + " run the recorded algorithms (not measured again)";
}

EngineState CudnnEngine::engine_state() const {
  std::vector<RecordedAlgorithms> chosen;  // every conv layer at every batch size met
  for (const auto& [B, plan] : plans_)
    for (std::size_t i = 0; i < layers_.size(); ++i)
      if (layers_[i].kind == LayerKind::Conv)
        chosen.push_back({layers_[i].name, B, conv_shape_key(layers_[i].conv, B), plan->layers[i].algos});
  return algorithm_state(chosen, recorded_, algo_rule_);
}

void CudnnEngine::reset_layer_times() { profiler_.reset(); }

std::string CudnnEngine::nondeterminism() const {
  if (algo_rule_ != AlgoRule::Fastest) return "";
  return "stage 06 with --conv-algos fastest may run cuDNN algorithms that add with atomics, in the order the "
         "threads arrive";
}

}  // namespace course
