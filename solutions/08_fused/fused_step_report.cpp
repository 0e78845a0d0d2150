/// @file fused_step_report.cpp
/// @brief Stage 08: what the fused step reports: the kernel and traffic table of a whole step, and the JSON of the run (glue, not a task).
#include <cstdio>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "08_fused/fused_step.hpp"

namespace course {

namespace {

std::string kib(long long bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", static_cast<double>(bytes) / 1024.0);
  return text;
}

}  // namespace

std::string FusedStep::row_name(Row row, std::size_t layer) const {
  switch (row) {
    case Row::Layer: return layers_[layer].name + " (" + layers_[layer].tokens + ")";
    case Row::Gather: return "batch gather";
    case Row::Update: return "sgd update";
    case Row::Chain: return "every layer, forward and input gradients";
    case Row::ChainUpdate: return "every layer's dW, db and update";
  }
  return "";
}

void FusedStep::note_full_step(const StepPlan& full) {
  for (std::size_t k = 0; k < full.phases.size(); ++k) {
    KernelTraffic t = phase_traffic(full.phases[k]);
    t.layers = row_name(full.rows[k], full.layer_of[k]);
    if (full.phases[k].kind == PhaseKind::Sgd) t.bytes_read += 4 * full.partial_floats;
    step_traffic_.push_back(t);
    step_blocks_.push_back(phase_blocks(full.phases[k]));
    step_smem_.push_back(phase_smem_bytes(full.phases[k]));
  }
  layerwise_ = layerwise_traffic(cfg_.arch, cfg_.input, cfg_.classes, full.B);
  if (persistent_enabled()) {
    persistent_grid_ = full.grid;
    if (full.grid == 0)
      throw std::invalid_argument("--persistent: this GPU cannot launch cooperative kernels (or not one block of "
                                  "the persistent kernel fits on a multiprocessor)");
  }
}

int FusedStep::kernels_per_step() const {
  return persistent_enabled() ? 1 : static_cast<int>(step_traffic_.size());
}

std::string FusedStep::step_table() const {
  char line[256];
  std::string out;
  std::snprintf(line, sizeof line, "%-34s %-44s %7s %9s %10s %10s\n", "kernel", "layers", "blocks", "smem KiB",
                "read KiB", "write KiB");
  out += line;
  long long read = 0, written = 0;
  for (std::size_t k = 0; k < step_traffic_.size(); ++k) {
    const KernelTraffic& t = step_traffic_[k];
    std::snprintf(line, sizeof line, "%-34s %-44s %7d %9s %10s %10s\n", t.kernel.c_str(), t.layers.c_str(),
                  step_blocks_[k], kib(step_smem_[k]).c_str(), kib(t.bytes_read).c_str(),
                  kib(t.bytes_written).c_str());
    out += line;
    read += t.bytes_read;
    written += t.bytes_written;
  }
  std::snprintf(line, sizeof line, "fused step, batch %d: %zu kernels%s, %s KiB read, %s KiB written\n", cfg_.batch,
                step_traffic_.size(), persistent_enabled() ? " (as phases of 1 persistent kernel)" : "",
                kib(read).c_str(), kib(written).c_str());
  out += line;
  std::snprintf(line, sizeof line,
                "layer by layer (one kernel per layer and direction, the least stages 05 and 06 run): %d kernels, "
                "%s KiB read, %s KiB written\n",
                layerwise_.launches, kib(layerwise_.bytes_read).c_str(), kib(layerwise_.bytes_written).c_str());
  out += line;
  return out;
}

nlohmann::json FusedStep::stage_results() const {
  nlohmann::json kernels = nlohmann::json::array();
  long long read = 0, written = 0;
  for (std::size_t k = 0; k < step_traffic_.size(); ++k) {
    const KernelTraffic& t = step_traffic_[k];
    kernels.push_back({{"kernel", t.kernel},
                       {"layers", t.layers},
                       {"blocks", step_blocks_[k]},
                       {"threads_per_block", kFusedThreads},
                       {"shared_bytes", step_smem_[k]},
                       {"bytes_read", t.bytes_read},
                       {"bytes_written", t.bytes_written}});
    read += t.bytes_read;
    written += t.bytes_written;
  }
  nlohmann::json layers = nlohmann::json::array();
  for (const FusedLayer& l : layers_) layers.push_back({{"name", l.name}, {"spec", l.tokens}});
  return {{"persistent", persistent_enabled()},
          {"persistent_grid_blocks", persistent_grid_},
          {"kernels_per_step", kernels_per_step()},
          {"fused_layers", layers},
          {"step", {{"batch", cfg_.batch},
                    {"kernels", kernels},
                    {"bytes_read", read},
                    {"bytes_written", written},
                    {"note", "each tensor counted once per kernel; re-reads served by the L2 cache not counted"}}},
          {"layer_by_layer",
           {{"kernels", layerwise_.launches},
            {"bytes_read", layerwise_.bytes_read},
            {"bytes_written", layerwise_.bytes_written},
            {"note", "the same step as one kernel per layer and direction, counted the same way: the least that "
                     "stages 05 and 06 run and move"}}}};
}

}  // namespace course
