// Part of every GPU test binary (cmake/CourseStage.cmake adds it to the test
// binaries of the stages built with GPU): a GoogleTest listener that turns a
// fault in the code under test into one clear failure message, and a watchdog
// for a kernel that never returns.
//
// - After each test it waits for the GPU (cudaDeviceSynchronize) and looks at
//   the test's failures. A CUDA error that is a fault of the code (an illegal
//   or misaligned address, a refused launch; list below) adds a failure to the
//   test that explains it: whose task's code ran, the error, the
//   compute-sanitizer command that finds the line (gpu_fault_message.hpp). A
//   fault the test never noticed (its kernel crashed after its last check)
//   fails that test, not the next one.
// - After a memory fault the CUDA context is lost for good: every later test
//   that uses the GPU fails with the same error. Those failures get a note
//   naming the test where the context was lost.
// - A test that runs longer than COURSE_GPU_TEST_TIMEOUT seconds (default
//   300; 0: no limit) is stopped with the message of a hang, and so is the
//   process: a kernel that never returns cannot be taken back.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>

#include "common/gpu/cuda_check.hpp"
#include "gpu_fault_message.hpp"

namespace course::gpu_fault {
namespace {

struct KnownFault {
  cudaError_t code;
  FaultKind kind;
};

// The CUDA errors a kernel or a launch of the code under test causes. The
// Memory ones are "sticky": the context cannot be used after them.
const KnownFault kKnownFaults[] = {
    {cudaErrorIllegalAddress, FaultKind::Memory},        {cudaErrorMisalignedAddress, FaultKind::Memory},
    {cudaErrorInvalidAddressSpace, FaultKind::Memory},   {cudaErrorLaunchFailure, FaultKind::Memory},
    {cudaErrorHardwareStackError, FaultKind::Memory},    {cudaErrorIllegalInstruction, FaultKind::Memory},
    {cudaErrorInvalidPc, FaultKind::Memory},             {cudaErrorAssert, FaultKind::Memory},
    {cudaErrorInvalidConfiguration, FaultKind::Launch},  {cudaErrorLaunchOutOfResources, FaultKind::Launch},
    {cudaErrorNoKernelImageForDevice, FaultKind::Launch},
};

// A launch refused with "invalid argument": what CUDA 13.0 on the H100 answered
// to a block of 2048 threads (blockDim.x beyond its limit of 1024; run of
// 2026-11-24), where the runtime's documentation names
// cudaErrorInvalidConfiguration. The code is also any API call's
// answer to a bad argument, so it counts as a launch only where the launch check
// (CUDA_CHECK_LAUNCH, a cudaGetLastError() after the launch) reported it.
const KnownFault kRefusedAsInvalidValue = {cudaErrorInvalidValue, FaultKind::Launch};

const KnownFault* fault_named_in(const std::string& failure) {
  for (const KnownFault& f : kKnownFaults)
    if (failure.find(cudaGetErrorString(f.code)) != std::string::npos) return &f;
  if (failure.find("cudaGetLastError() failed") != std::string::npos &&
      failure.find(cudaGetErrorString(cudaErrorInvalidValue)) != std::string::npos)
    return &kRefusedAsInvalidValue;
  return nullptr;
}

const KnownFault* known_fault(cudaError_t code) {
  for (const KnownFault& f : kKnownFaults)
    if (f.code == code) return &f;
  return nullptr;
}

// "an illegal memory access was encountered (cudaErrorIllegalAddress)"
std::string error_text(cudaError_t code) {
  return std::string(cudaGetErrorString(code)) + " (" + cudaGetErrorName(code) + ")";
}

std::string this_binary() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("<this test binary>") : p.string();
}

std::string full_name(const testing::TestInfo& t) { return std::string(t.test_suite_name()) + "." + t.name(); }

// Seconds a test may run: COURSE_GPU_TEST_TIMEOUT, default 300; 0 or less: no limit.
long time_limit_seconds() {
  const char* v = std::getenv("COURSE_GPU_TEST_TIMEOUT");
  if (v == nullptr || *v == '\0') return 300;
  char* end = nullptr;
  const long s = std::strtol(v, &end, 10);
  return end != v ? s : 300;
}

// Stops the process when a test runs past the limit: the message first (on
// stdout with the test's output, its first line again on stderr, last, where
// tools/course looks when a binary ends without its report), then _Exit, since
// the main thread may wait forever inside a CUDA call.
class Watchdog {
 public:
  explicit Watchdog(long seconds) : seconds_(seconds) {}
  ~Watchdog() { shutdown(); }

  void arm(const testing::TestInfo& t) {
    if (seconds_ <= 0) return;
    std::lock_guard<std::mutex> lock(mutex_);
    suite_ = t.test_suite_name();
    test_ = full_name(t);
    deadline_ = std::chrono::steady_clock::now() + std::chrono::seconds(seconds_);
    armed_ = true;
    if (!thread_.joinable()) thread_ = std::thread([this] { watch(); });
    wake_.notify_all();
  }
  void disarm() {
    std::lock_guard<std::mutex> lock(mutex_);
    armed_ = false;
    wake_.notify_all();
  }
  void shutdown() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
      wake_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
  }

 private:
  void watch() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
      if (!armed_) {
        wake_.wait(lock);
        continue;
      }
      if (wake_.wait_until(lock, deadline_) == std::cv_status::timeout && armed_ && !stop_ &&
          std::chrono::steady_clock::now() >= deadline_) {
        const std::string message = explain_timeout(suite_, test_, this_binary(), seconds_);
        std::fprintf(stdout, "\n[  FAILED  ] %s (stopped after %ld s)\n%s\n", test_.c_str(), seconds_, message.c_str());
        std::fflush(stdout);
        std::fprintf(stderr, "%s\n", message.substr(0, message.find('\n')).c_str());
        std::fflush(stderr);
        std::_Exit(1);
      }
    }
  }

  long seconds_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread thread_;
  bool armed_ = false, stop_ = false;
  std::chrono::steady_clock::time_point deadline_;
  std::string suite_, test_;
};

class GpuFaultReport : public testing::EmptyTestEventListener {
 public:
  GpuFaultReport() : watchdog_(time_limit_seconds()) {}

  // Asked once, before any test: after a fault even this question may fail.
  void OnTestProgramStart(const testing::UnitTest&) override { gpu_present_ = gpu_available(); }

  void OnTestStart(const testing::TestInfo& t) override { watchdog_.arm(t); }

  // Runs before the default printer's OnTestEnd (GoogleTest calls the end
  // events in reverse order), so a failure added here is printed and counted
  // with the test, and lands in its --gtest_output report.
  void OnTestEnd(const testing::TestInfo& t) override {
    if (!gpu_present_) {
      watchdog_.disarm();
      return;
    }
    const KnownFault* fault = nullptr;
    cudaError_t code = cudaSuccess;
    bool named = false;
    // A fault a CUDA_CHECK threw, named in the test's failures (or in its skip:
    // after a lost context even "is there a GPU?" may fail with the fault)...
    const testing::TestResult& result = *t.result();
    for (int i = 0; i < result.total_part_count() && fault == nullptr; ++i) {
      fault = fault_named_in(result.GetTestPartResult(i).message());
      if (fault != nullptr) {
        code = fault->code;
        named = true;
      }
    }
    // ... or one the test left behind: its kernels faulted after its last check.
    const cudaError_t left = cudaDeviceSynchronize();
    cudaGetLastError();  // a refused launch must not fail the next test's first check
    watchdog_.disarm();  // after the wait: a kernel that never returns is caught here too
    if (fault == nullptr && known_fault(left) != nullptr) {
      fault = known_fault(left);
      code = left;
    }
    if (fault == nullptr) return;
    const std::string test = full_name(t);
    if (!lost_in_.empty()) {
      if (result.Failed() || named)  // a test skipped for the lost context fails: it could not run
        ADD_FAILURE_AT(t.file(), t.line()) << explain_lost_context(t.test_suite_name(), test, lost_in_, lost_error_);
      return;
    }
    ADD_FAILURE_AT(t.file(), t.line()) << explain_fault(fault->kind, t.test_suite_name(), test, this_binary(),
                                                        error_text(code));
    if (fault->kind == FaultKind::Memory) {
      lost_in_ = test;
      lost_error_ = error_text(code);
    }
  }

  void OnTestProgramEnd(const testing::UnitTest&) override { watchdog_.shutdown(); }

 private:
  bool gpu_present_ = false;
  Watchdog watchdog_;
  std::string lost_in_, lost_error_;  ///< the test where the context was lost, and the error
};

// Registered when the binary starts, before GoogleTest's main() runs the tests.
const bool kRegistered = [] {
  testing::UnitTest::GetInstance()->listeners().Append(new GpuFaultReport);
  return true;
}();

}  // namespace
}  // namespace course::gpu_fault
