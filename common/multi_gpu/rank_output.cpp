/// @file rank_output.cpp
/// @brief Multi-GPU plumbing (given code, not a lesson): quiet standard output and prefixed standard error for ranks other than 0 (see the header).
#include "common/multi_gpu/rank_output.hpp"

#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <iostream>

namespace course {

namespace {

std::atomic<int> g_error_fd{STDERR_FILENO};
std::atomic<bool> g_stop_forwarding{false};

void write_all(int fd, const std::string& text) {
  const char* p = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // nowhere left to write: nothing more can be done
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

// Copies what arrives on `in` to `out`, "rank R: " before every line, until the
// pipe is closed, or until it is told to stop and nothing more is waiting.
void forward_lines(int in, int out, const std::string& prefix) {
  std::string pending;
  char buf[4096];
  for (;;) {
    pollfd p{in, POLLIN, 0};
    const int ready = ::poll(&p, 1, 100);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      if (g_stop_forwarding.load()) break;
      continue;
    }
    const ssize_t n = ::read(in, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the write end is closed
    pending.append(buf, static_cast<std::size_t>(n));
    std::size_t start = 0, newline;
    while ((newline = pending.find('\n', start)) != std::string::npos) {
      write_all(out, prefix + pending.substr(start, newline + 1 - start));
      start = newline + 1;
    }
    pending.erase(0, start);
  }
  if (!pending.empty()) write_all(out, prefix + pending + "\n");
}

}  // namespace

int rank_error_fd() { return g_error_fd.load(); }

void write_error_now(const std::string& text) { write_all(rank_error_fd(), text); }

RankOutput::RankOutput(int rank) : rank_(rank) {
  if (rank <= 0) return;
  std::cout.setstate(std::ios::badbit);  // the trainer's report: rank 0 prints it
  int fds[2];
  if (::pipe(fds) != 0) return;  // then stderr stays as it is, unprefixed
  std::cerr.flush();
  std::fflush(stderr);
  saved_stderr_ = ::dup(STDERR_FILENO);
  if (saved_stderr_ < 0 || ::dup2(fds[1], STDERR_FILENO) < 0) {
    if (saved_stderr_ >= 0) ::close(saved_stderr_);
    saved_stderr_ = -1;
    ::close(fds[0]);
    ::close(fds[1]);
    return;
  }
  ::close(fds[1]);
  pipe_read_ = fds[0];
  g_error_fd = saved_stderr_;
  g_stop_forwarding = false;
  forwarder_ = std::thread(forward_lines, pipe_read_, saved_stderr_, "rank " + std::to_string(rank) + ": ");
}

RankOutput::~RankOutput() {
  if (rank_ <= 0) return;
  std::cout.clear();
  if (saved_stderr_ < 0) return;
  std::cerr.flush();
  std::fflush(stderr);
  ::dup2(saved_stderr_, STDERR_FILENO);  // closes fd 2's copy of the pipe's write end: the forwarder sees its end
  g_stop_forwarding = true;              // and stops anyway, should another copy of it be open somewhere
  forwarder_.join();
  g_error_fd = STDERR_FILENO;
  ::close(pipe_read_);
  ::close(saved_stderr_);
}

}  // namespace course
