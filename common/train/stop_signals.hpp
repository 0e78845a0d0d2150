/// @file stop_signals.hpp
/// @brief Ctrl-C and SIGTERM as a request to stop after the current step: the
/// trainer (common/train/trainer_epochs.cpp) reads it after every step and saves a
/// checkpoint before it stops.
#pragma once

#include <csignal>

#if defined(__unix__) || defined(__APPLE__)
#define COURSE_HAVE_SIGACTION 1
#endif

namespace course {

/// While it lives, SIGINT (Ctrl-C) and SIGTERM only record that they came,
/// once: the handler resets itself, so a second Ctrl-C ends the program at
/// once when a step takes too long. A signal the shell told this process to
/// ignore stays ignored. The destructor puts the previous handlers back.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  /// The signal received since construction, or 0.
  static int received();

 private:
  static constexpr int kSignals[2] = {SIGINT, SIGTERM};
  bool installed_[2] = {false, false};
#ifdef COURSE_HAVE_SIGACTION
  struct sigaction previous_[2];
#else
  void (*previous_[2])(int) = {nullptr, nullptr};
#endif
};

}  // namespace course
