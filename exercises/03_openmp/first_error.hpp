/// @file first_error.hpp
/// @brief Stage 03: carrying an exception out of an OpenMP parallel region (glue).
///
/// An exception must not leave the structured block of an OpenMP construct:
/// the runtime would call std::terminate, and a learner would see an abort
/// instead of "Task 2.1 is not implemented yet". So the body of every
/// parallel loop runs through guard(), which keeps the first exception, and
/// the thread that opened the region calls rethrow() once the region is over.
#pragma once

#include <exception>
#include <mutex>
#include <utility>

namespace course {

/// Keeps the first exception thrown by any thread of a parallel region.
class FirstError {
 public:
  /// Runs body(); an exception it throws is kept (the first one only) instead of propagating.
  template <typename F>
  void guard(F&& body) noexcept {
    try {
      std::forward<F>(body)();
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
  }
  /// Rethrows the kept exception, if any. Call it after the parallel region, on one thread.
  void rethrow() const {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::mutex mutex_;
  std::exception_ptr error_;
};

}  // namespace course
