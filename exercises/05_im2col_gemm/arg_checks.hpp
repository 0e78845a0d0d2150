/// @file arg_checks.hpp
/// @brief Stage 05: the argument checks every GPU layer function makes before it queues work (glue, not a task).
///
/// A kernel handed a null pointer or a negative size does not fail politely:
/// it faults, or it writes somewhere else, and the error surfaces at a later,
/// unrelated CUDA call. So each launcher checks first and throws
/// std::invalid_argument naming the function and the argument.
#pragma once

#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>

namespace course {

/// Throws std::invalid_argument("<function>: <what> is null") when p is null.
inline void require_pointer(const void* p, const char* what, const char* function) {
  if (p == nullptr) throw std::invalid_argument(std::string(function) + ": " + what + " is null");
}

/// require_pointer for each {pointer, name} in order: the first null one is named.
inline void require_pointers(const char* function, std::initializer_list<std::pair<const void*, const char*>> pointers) {
  for (const auto& [p, what] : pointers) require_pointer(p, what, function);
}

/// Throws std::invalid_argument when the batch size B is below 1.
inline void require_batch(int B, const char* function) {
  if (B < 1) throw std::invalid_argument(std::string(function) + ": the batch size must be at least 1, got " +
                                         std::to_string(B));
}

}  // namespace course
