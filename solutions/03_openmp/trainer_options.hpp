/// @file trainer_options.hpp
/// @brief Stage 03: the trainer's own flag, --parallel data|loops (glue, not a task).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace course {

/// Adds `--parallel MODE` (data or loops, default: the value `parallel` holds) to a trainer's command line.
inline void add_parallel_option(CLI::App& app, std::string& parallel) {
  app.add_option("--parallel", parallel,
                 "How the threads share a batch: data (a shard and a model replica per thread, then one "
                 "reduction) or loops (every layer splits its loop over the batch)")
      ->check(CLI::IsMember({"data", "loops"}))
      ->type_name("MODE")
      ->capture_default_str();
}

}  // namespace course
