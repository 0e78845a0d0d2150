/// @file progress.hpp
/// @brief A one-line progress bar on stderr for the training loop.
#pragma once

#include <string>

#include "common/core/timer.hpp"

namespace course {

/// A progress bar drawn on one line of stderr and redrawn in place:
///
///     epoch 3/10 [##########..........]  52%  31232/60000  14252/s  ETA 0:02  loss 0.4122
///
/// It draws on stderr so that stdout (the epoch lines, the tables) stays clean
/// when redirected to a file. It is silent when `enabled` is false or when
/// stderr is not a terminal (a log file full of carriage returns helps
/// nobody), and it redraws at most about ten times a second, so a tight
/// training loop can call update() after every batch for free.
class ProgressBar {
 public:
  /// A bar for `total` items (examples, usually), labelled `label`.
  ProgressBar(std::string label, long total, bool enabled = true);
  /// Clears the bar if finish() was not called (e.g. when an exception unwinds).
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  /// Reports `done` items out of the total; `suffix` is shown after the ETA
  /// (e.g. "loss 0.4122"). Redraws only when 0.1 s passed since the last
  /// redraw, or when `done` reaches the total.
  void update(long done, const std::string& suffix = "");

  /// Erases the bar, leaving the cursor at the start of an empty line, so the
  /// line the caller prints next replaces it. Calling it twice is harmless.
  void finish();

  /// True when the bar actually draws (enabled and stderr is a terminal).
  bool active() const { return enabled_; }

  /// The text of one bar line for `done` of `total` after `elapsed_s`
  /// seconds, at most `width` characters (public so tests can check the layout).
  static std::string render(const std::string& label, long done, long total, double elapsed_s,
                            const std::string& suffix, int width);

 private:
  std::string label_;
  long total_;
  bool enabled_;
  bool drawn_ = false;
  double last_draw_s_ = -1.0;
  Timer timer_;
};

}  // namespace course
