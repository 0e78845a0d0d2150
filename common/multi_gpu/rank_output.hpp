/// @file rank_output.hpp
/// @brief Multi-GPU plumbing (given code, not a lesson): what a rank other than rank 0 shows.
///
/// Every rank runs the same trainer and would print the same lines. Rank 0
/// speaks for the run. The others keep quiet on standard output (std::cout
/// drops what the trainer writes) and pass their standard error through a
/// pipe that puts "rank R: " before every line: their errors and warnings, and
/// NCCL's own, stay visible and say where they come from. stderr is then no
/// terminal, so these ranks draw no progress bar either.
#pragma once

#include <string>
#include <thread>

namespace course {

/// Installs the above for the life of the object (rank > 0 only; rank 0 is left as it is).
/// Not copyable: it owns the thread that forwards the lines.
class RankOutput {
 public:
  explicit RankOutput(int rank);
  ~RankOutput();

 private:
  int rank_;
  int saved_stderr_ = -1;  // the terminal's stderr, where the prefixed lines go
  int pipe_read_ = -1;
  std::thread forwarder_;
};

/// Where a message that must reach the user before the process ends at once
/// (std::_Exit, the watchdog) is written: the original standard error, also
/// while a RankOutput redirects fd 2.
int rank_error_fd();

/// Writes `text` to rank_error_fd() at once (no buffering: the process may end next).
void write_error_now(const std::string& text);

}  // namespace course
