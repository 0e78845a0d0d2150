/// @file watchdog.hpp
/// @brief Multi-GPU plumbing (given code, not a lesson): what stops a rank whose peers are gone, instead of letting it wait forever.
///
/// A collective finishes only when every rank takes part. If one rank dies, the
/// others' NCCL kernels wait for its data, on the GPU, forever, and their host
/// threads wait for those kernels. NCCL notices some of this itself (a network
/// connection that breaks is an *asynchronous error* of the communicator), but
/// not all: between the GPUs of one host, a peer that stops sending is simply
/// silent. So each rank runs a watchdog thread that checks, ten times a second:
///
/// - ncclCommGetAsyncError: an error NCCL found in the background;
/// - progress: the GPU counts every step and reduction it finishes (a
///   one-thread kernel after the step's all-reduce, into host memory; no
///   waiting), the host counts those it queued; when the GPU is behind and
///   has not finished one for the timeout (--nccl-timeout), the rank is stuck;
/// - a host wait that must end (forming the communicator) and has not.
///
/// Then the watchdog prints one line naming the rank and the reason, aborts
/// the communicator (ncclCommAbort stops this rank's NCCL kernels and closes
/// its connections, so peers on other hosts see an error at once) and ends the
/// process with exit code 1. The trainer's launcher, when it started the ranks,
/// has usually stopped them already: it sees a rank exit and ends the others.
#pragma once

#include <nccl.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include <cuda_runtime.h>

namespace course {

/// When is a rank stuck? Shown, at times `now` (seconds), how many steps the
/// host queued (`expected`) and how many the GPU finished (`completed`), it
/// answers true once the GPU is behind and `completed` has not moved for
/// `timeout_s`. Pure, so that tests drive it with made-up clocks.
class HangDetector {
 public:
  explicit HangDetector(double timeout_s) : timeout_s_(timeout_s) {}
  bool stuck(unsigned long long expected, unsigned long long completed, double now);
  /// Seconds since `completed` last moved while the GPU was behind (0 when it is not behind).
  double stalled_for(double now) const { return behind_ ? now - since_ : 0.0; }
  double timeout() const { return timeout_s_; }

 private:
  double timeout_s_;
  bool behind_ = false;
  unsigned long long last_completed_ = 0;
  double since_ = 0;
};

/// The watchdog thread of one rank. Made on the rank's device (after cudaSetDevice).
class Watchdog {
 public:
  /// `who`: "rank 1 of 2", the start of every message.
  Watchdog(std::string who, double timeout_s);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  /// Poll `comm`'s asynchronous errors from now on, and abort it when stuck.
  void watch(ncclComm_t comm);
  /// Stop touching the communicator (before it is finalized or destroyed).
  void forget_comm();
  /// Queues, on `stream`, the GPU's count of one more finished step or reduction.
  void count_on(cudaStream_t stream);
  /// The host queued one more count_on() (or a graph replay that holds one).
  void expect_one() { expected_.fetch_add(1); }
  /// A wait of the host that must end within the timeout ("forming the communicator").
  void begin_host_wait(const std::string& what);
  void end_host_wait();

 private:
  void run();
  [[noreturn]] void stop_rank(const std::string& why);

  std::string who_;
  double timeout_s_;
  std::atomic<ncclComm_t> comm_{nullptr};
  std::atomic<unsigned long long> expected_{0};
  unsigned long long* device_count_ = nullptr;         // the GPU's count
  volatile unsigned long long* host_count_ = nullptr;  // its mirror in mapped host memory
  unsigned long long* host_count_on_device_ = nullptr;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::string host_wait_;  // what the host waits for, "" when it does not
  double host_wait_since_ = 0;
  std::thread thread_;
};

/// Seconds on a steady clock (the watchdog's time).
double steady_seconds();

}  // namespace course
