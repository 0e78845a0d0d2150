/// @file timer.hpp
/// @brief A wall-clock stopwatch for the trainers and the tests.
#pragma once

#include <chrono>

namespace course {

/// Measures elapsed wall-clock time from its construction or the last reset().
///
/// It reads std::chrono::steady_clock, which never jumps when the system clock
/// is adjusted, so an epoch timed across an NTP update still reads right.
/// GPU work must be finished (synchronised) before the timer is read, or the
/// time only covers the kernel launches.
class Timer {
 public:
  /// Starts timing now.
  Timer() : start_(Clock::now()) {}

  /// Starts timing again from now.
  void reset() { start_ = Clock::now(); }

  /// Seconds since the start, with sub-microsecond resolution.
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

  /// Milliseconds since the start.
  double milliseconds() const { return seconds() * 1000.0; }

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point start_;
};

}  // namespace course
