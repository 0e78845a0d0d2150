/// @file step_model.cpp
/// @brief StepModel's defaults.
#include "common/gpu/step_model.hpp"

#include <stdexcept>

#include <nlohmann/json.hpp>

namespace course {

nlohmann::json StepModel::stage_results() const { return nullptr; }

void StepModel::prepare(const StepContext& /*ctx*/, int /*B*/) {}

void StepModel::train_step(const StepContext& /*ctx*/, const EngineStepParts& /*parts*/, int /*B*/) {
  throw std::logic_error("StepModel::train_step called for a step model that does not run whole steps");
}

}  // namespace course
