/// @file watchdog.cpp
/// @brief Multi-GPU plumbing (given code, not a lesson): the hang detector and the watchdog thread (see the header).
#include "common/multi_gpu/watchdog.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/multi_gpu/rank_kernels.hpp"
#include "common/multi_gpu/rank_output.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/train/trainer.hpp"

namespace course {

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool HangDetector::stuck(unsigned long long expected, unsigned long long completed, double now) {
  if (completed >= expected) {  // the GPU has done all it was given: waiting for the host is no hang
    behind_ = false;
    last_completed_ = completed;
    return false;
  }
  if (!behind_ || completed != last_completed_) {  // behind now, or it moved: the clock starts again
    behind_ = true;
    last_completed_ = completed;
    since_ = now;
    return false;
  }
  return now - since_ >= timeout_s_;
}

Watchdog::Watchdog(std::string who, double timeout_s) : who_(std::move(who)), timeout_s_(timeout_s) {
  CUDA_CHECK(cudaMalloc(&device_count_, sizeof(unsigned long long)));
  CUDA_CHECK(cudaMemset(device_count_, 0, sizeof(unsigned long long)));
  void* host = nullptr;
  CUDA_CHECK(cudaHostAlloc(&host, sizeof(unsigned long long), cudaHostAllocMapped));
  host_count_ = static_cast<volatile unsigned long long*>(host);
  *host_count_ = 0;
  void* on_device = nullptr;
  CUDA_CHECK(cudaHostGetDevicePointer(&on_device, host, 0));
  host_count_on_device_ = static_cast<unsigned long long*>(on_device);
  thread_ = std::thread([this] { run(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  cudaFree(device_count_);
  cudaFreeHost(const_cast<unsigned long long*>(host_count_));
}

void Watchdog::watch(ncclComm_t comm) { comm_.store(comm); }

void Watchdog::forget_comm() { comm_.store(nullptr); }

void Watchdog::count_on(cudaStream_t stream) { count_on_device(device_count_, host_count_on_device_, stream); }

void Watchdog::begin_host_wait(const std::string& what) {
  std::lock_guard<std::mutex> lock(mutex_);
  host_wait_ = what;
  host_wait_since_ = steady_seconds();
}

void Watchdog::end_host_wait() {
  std::lock_guard<std::mutex> lock(mutex_);
  host_wait_.clear();
}

void Watchdog::run() {
  HangDetector detector(timeout_s_);
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, std::chrono::milliseconds(100), [this] { return stopping_; })) {
    const double now = steady_seconds();
    if (!host_wait_.empty() && now - host_wait_since_ >= timeout_s_)
      stop_rank("no progress for " + std::to_string(static_cast<int>(timeout_s_)) + " s while " + host_wait_);
    if (ncclComm_t comm = comm_.load()) {
      ncclResult_t state = ncclSuccess;
      if (ncclCommGetAsyncError(comm, &state) == ncclSuccess && state != ncclSuccess && state != ncclInProgress) {
        const char* detail = ncclGetLastError(comm);
        stop_rank(std::string("NCCL reports an error on this rank's communicator: ") + ncclGetErrorString(state) +
                  (detail != nullptr && detail[0] != '\0' ? std::string(" (") + detail + ")" : std::string()));
      }
    }
    if (detector.stuck(expected_.load(), *host_count_, now))
      stop_rank("no collective has finished for " + std::to_string(static_cast<int>(timeout_s_)) +
                " s (--nccl-timeout) while " + std::to_string(expected_.load() - *host_count_) +
                " were queued: another rank has probably died or stopped, and NCCL waits for it forever");
  }
}

void Watchdog::stop_rank(const std::string& why) {
  write_error_now(who_ + ": error: " + why + "; aborting this rank's communicator and stopping\n");
  // ncclCommAbort stops this rank's NCCL kernels and closes its connections. It
  // is given 5 s: the process ends then in any case.
  if (ncclComm_t comm = comm_.exchange(nullptr)) {
    std::atomic<bool> aborted{false};
    std::thread([comm, &aborted] {
      ncclCommAbort(comm);
      aborted = true;
    }).detach();
    const double deadline = steady_seconds() + 5.0;
    while (!aborted && steady_seconds() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::_Exit(kExitError);
}

}  // namespace course
