/// @file cnn_model.cpp
/// @brief Stage 05: the CNN step's layers, parameter layout, device memory and report (glue, not a task).
#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "01_fc_softmax/network.hpp"
#include "02_conv_pool/cnn.hpp"
#include "05_im2col_gemm/cnn_step.hpp"
#include "05_im2col_gemm/im2col.hpp"
#include "common/core/rng.hpp"

namespace course {

namespace {

// The name of layer kind `kind` for the index-th such layer, as stage 01's
// Network names them ("conv1", "pool1", "avgpool1", "flatten1", "fc2", "relu3"): the same
// names label the parameters ("conv1.weight") in every stage's model files.
std::string layer_name(const LayerSpec& spec, int index) {
  const std::string number = std::to_string(index);
  switch (spec.kind) {
    case LayerKind::Dense: return "fc" + number;
    case LayerKind::Conv: return "conv" + number;
    case LayerKind::MaxPool: return "pool" + number;
    case LayerKind::AvgPool: return "avgpool" + number;
    case LayerKind::Flatten: return "flatten" + number;
    case LayerKind::Activation: return activation_name(spec.act) + number;
  }
  return "layer" + number;
}

}  // namespace

CnnStep::CnnStep(const EngineConfig& cfg, const GpuCnnOptions& options) : cfg_(cfg), options_(options) {
  gemm_kernel_name(options.gemm_kernel);  // throws std::invalid_argument for a number out of range
  check_step_config(cfg, "stage 05");
  if (options.split_k < 1)
    throw std::invalid_argument("--split-k must be at least 1 (1 = one GEMM), got " + std::to_string(options.split_k));
  plan_layers(cfg_, &layers_, &layout_);
  if (options_.gemm_kernel == kGemmSingleBlock) refuse_single_block_overflow();
  if (options_.unroll == Unroll::Batch && options_.gemm_kernel != kGemmCublas && options_.split_k > 1)
    for (const GpuLayer& l : layers_)
      if (l.kind == LayerKind::Conv) {
        split_k_ = std::make_unique<SplitKGemm>(options_.split_k);
        break;
      }
}

void CnnStep::plan_layers(const EngineConfig& cfg, std::vector<GpuLayer>* layers, ParamLayout* layout) {
  const std::vector<Shape3> out_shapes = layer_shapes(cfg.arch, cfg.input, cfg.classes);  // throws when the spec does not fit
  std::map<std::string, int> counts;  // layers of each kind so far, keyed as stage 01's Network keys them
  Shape3 in = cfg.input;
  std::size_t offset = 0;
  auto add_parameters = [&](GpuLayer& l, std::vector<int> weight_shape, int outputs) {
    layout->names.push_back(l.name + ".weight");
    layout->names.push_back(l.name + ".bias");
    const std::size_t weights = Tensor::count(weight_shape);
    layout->shapes.push_back(std::move(weight_shape));
    layout->shapes.push_back({outputs});
    l.bias = offset + weights;
    offset += weights + static_cast<std::size_t>(outputs);
    l.grads.begin = l.weight;
    l.grads.end = offset;
  };
  for (std::size_t i = 0; i < cfg.arch.layers.size(); ++i) {
    const LayerSpec& spec = cfg.arch.layers[i];
    const std::string key = spec.kind == LayerKind::Activation ? activation_name(spec.act)
                                                                : std::to_string(static_cast<int>(spec.kind));
    GpuLayer l;
    l.kind = spec.kind;
    l.act = spec.act;
    l.slope = static_cast<float>(spec.slope);
    l.name = layer_name(spec, ++counts[key]);
    l.token = spec.token();
    l.grads.name = l.name + " (" + l.token + ")";
    l.in = in;
    l.out = out_shapes[i];
    l.weight = offset;
    if (spec.kind == LayerKind::Conv) {
      l.conv = ConvGeometry{in.c, in.h, in.w, spec.units, spec.kernel, spec.pad, spec.stride};
      l.conv.check();
      add_parameters(l, {l.conv.C_out, l.conv.C_in, l.conv.K, l.conv.K}, l.conv.C_out);
    } else if (is_pool(spec.kind)) {
      l.pool = PoolGeometry{in.c, in.h, in.w, spec.kernel, spec.stride, spec.pad};
      l.pool.check(spec.kind == LayerKind::AvgPool ? "average-pool" : "max-pool");
    } else if (spec.kind == LayerKind::Dense) {
      const int IN = static_cast<int>(in.size()), OUT = spec.units;
      add_parameters(l, {OUT, IN}, OUT);
    }
    layers->push_back(std::move(l));
    in = out_shapes[i];
  }
}

void CnnStep::refuse_single_block_overflow() const {
  // Refused now rather than at the first batch: kernel 1 runs one block of at most
  // 1024 threads, one per output, and the largest product of a conv layer is its
  // forward output for the unrolled batch (or image).
  const int rows = options_.unroll == Unroll::Batch ? cfg_.batch : 1;
  long largest = 0;
  for (const GpuLayer& l : layers_) {
    if (l.kind == LayerKind::Conv)
      largest = std::max({largest, unrolled_rows(rows, l.conv) * l.conv.C_out,
                          unrolled_rows(rows, l.conv) * patch_size(l.conv),
                          static_cast<long>(l.conv.C_out) * patch_size(l.conv)});
    if (l.kind == LayerKind::Dense)
      largest = std::max({largest, static_cast<long>(cfg_.batch) * l.out.size(), l.out.size() * l.in.size(),
                          static_cast<long>(cfg_.batch) * l.in.size()});
  }
  if (largest > kMaxThreadsPerBlock)
    throw std::invalid_argument("gemm kernel 1 (single block) computes at most " + std::to_string(kMaxThreadsPerBlock) +
                                " outputs per product, and this model at batch " + std::to_string(cfg_.batch) +
                                " needs " + std::to_string(largest) + ": use --kernel 2 or later");
}

std::vector<NamedTensor> CnnStep::model_parameters(const EngineConfig& cfg) {
  std::vector<GpuLayer> layers;
  ParamLayout layout;
  plan_layers(cfg, &layers, &layout);
  std::vector<NamedTensor> out;
  for (std::size_t i = 0; i < layout.names.size(); ++i) out.push_back({layout.names[i], Tensor(layout.shapes[i])});
  return out;
}

std::vector<NamedTensor> CnnStep::initial_parameters() const {
  return course::initial_parameters(cfg_.arch, cfg_.input, cfg_.classes, cfg_.seed, make_cnn_layer<float>);
}

std::vector<std::string> CnnStep::layer_rows() const { return rows_named_by_grads(layers_); }

std::vector<GradientRange> CnnStep::gradient_ranges() const { return ranges_last_layer_first(layers_); }

void CnnStep::allocate(int batch) {
  const auto B = static_cast<std::size_t>(batch);
  outputs_.assign(layers_.size(), nullptr);
  output_grads_.assign(layers_.size(), nullptr);
  std::size_t workspace = 0;
  const ConvContext ctx = conv_context(nullptr);
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    GpuLayer& l = layers_[i];
    const std::size_t values = B * static_cast<std::size_t>(l.out.size());
    if (l.kind == LayerKind::Flatten) {
      // A view: its input gradient is its output gradient (null at the very start).
      output_grads_[i] = i == 0 ? nullptr : output_grads_[i - 1];
      continue;
    }
    l.output.resize(values);
    l.output_grad.resize(values);
    output_grads_[i] = l.output_grad.get();
    if (l.kind == LayerKind::MaxPool) l.argmax.resize(values);
    if (l.kind == LayerKind::Conv) workspace = std::max(workspace, conv_workspace_floats(ctx, batch, l.conv));
  }
  workspace_.resize(workspace);
}

ConvContext CnnStep::conv_context(cudaStream_t stream) {
  ConvContext ctx;
  ctx.gemm_kernel = options_.gemm_kernel;
  ctx.unroll = options_.unroll;
  ctx.workspace = workspace_.get();
  ctx.workspace_floats = workspace_.size();
  ctx.split_k = split_k_.get();
  ctx.stream = stream;
  return ctx;
}

std::vector<ConvMemory> CnnStep::conv_memory() const {
  ConvContext ctx;  // what the workspace need depends on
  ctx.unroll = options_.unroll;
  ctx.gemm_kernel = options_.gemm_kernel;
  ctx.split_k = split_k_.get();
  std::vector<ConvMemory> out;
  for (const GpuLayer& l : layers_) {
    if (l.kind != LayerKind::Conv) continue;
    out.push_back({l.grads.name, l.conv, l.conv.in_size(), static_cast<long>(unrolled_floats(1, l.conv)),
                   conv_workspace_floats(ctx, cfg_.batch, l.conv)});
  }
  return out;
}

int CnnStep::split_k_chunks_used() const {
  int chunks = 1;
  if (split_k_)
    for (const GpuLayer& l : layers_)
      if (l.kind == LayerKind::Conv)
        chunks = std::max(chunks, split_k_chunks(options_.gemm_kernel, unrolled_rows(cfg_.batch, l.conv),
                                                 split_k_->max_chunks()));
  return chunks;
}

nlohmann::json CnnStep::stage_results() const {
  nlohmann::json j = {{"gemm_kernel", options_.gemm_kernel},
                      {"gemm", gemm_kernel_name(options_.gemm_kernel)},
                      {"unroll", unroll_name(options_.unroll)},
                      {"split_k_max", options_.split_k},
                      {"split_k_chunks", split_k_chunks_used()},
                      {"workspace_bytes", workspace_bytes()},
                      {"conv_layers", nlohmann::json::array()}};
  for (const ConvMemory& m : conv_memory())
    j["conv_layers"].push_back({{"layer", m.layer},
                                {"input_floats_per_image", m.input_floats},
                                {"unrolled_floats_per_image", m.unrolled_floats},
                                {"expansion", static_cast<double>(m.unrolled_floats) / static_cast<double>(m.input_floats)},
                                {"workspace_bytes", m.workspace_floats * sizeof(float)}});
  return j;
}

}  // namespace course
