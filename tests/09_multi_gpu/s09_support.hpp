// Helpers shared by the stage 09 tests: skipping for want of GPUs, ranks in one
// process for the task tests, and the trainer binary run as a learner runs it.
#pragma once

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nccl.h>

#include "trainer_process.hpp"
#include "09_multi_gpu/communicator.hpp"
#include "common/gpu/cuda_check.hpp"
#include "common/model/model_file.hpp"
#include "common/multi_gpu/bootstrap.hpp"
#include "common/multi_gpu/nccl_check.hpp"
#include "common/core/rng.hpp"

namespace course::s09test {

namespace fs = std::filesystem;

/// `p` is rank `rank` of `world`, local rank `local`, started by `by`.
inline void expect_place(const std::optional<RankPlace>& p, int rank, int world, int local, const std::string& by) {
  ASSERT_TRUE(p.has_value()) << "no place: a process on its own";
  EXPECT_EQ(p->rank, rank);
  EXPECT_EQ(p->world, world);
  EXPECT_EQ(p->local_rank, local);
  EXPECT_EQ(p->started_by, by);
}

/// An environment made of a table (for course::rank_place_from_env).
inline EnvLookup table(std::map<std::string, std::string> vars) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [shared](const char* name) -> const char* {
    const auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

/// GPUs CUDA shows this process (0 without a usable driver).
inline int gpu_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

/// Skips the test, saying why, when CUDA shows fewer than `n` GPUs.
#define S09_SKIP_WITHOUT_GPUS(n)                                                                          \
  do {                                                                                                    \
    std::string s09_why_;                                                                                 \
    if (!::course::gpu_available(&s09_why_)) GTEST_SKIP() << s09_why_;                                   \
    if (::course::s09test::gpu_count() < (n))                                                             \
      GTEST_SKIP() << "needs " << (n) << " GPUs, and CUDA shows " << ::course::s09test::gpu_count()       \
                   << " here: one rank per GPU (NCCL refuses two ranks on one GPU)";                      \
  } while (0)

/// `world` ranks in this process, one communicator and one thread per GPU
/// (ncclCommInitAll): enough to test one collective at a time. The trainer
/// itself runs one process per GPU.
class LocalRanks {
 public:
  explicit LocalRanks(int world) : comms_(static_cast<std::size_t>(world)) {
    keep_nvlink_multicast_off();
    std::vector<int> devices;
    for (int d = 0; d < world; ++d) devices.push_back(d);
    NCCL_CHECK(ncclCommInitAll(comms_.data(), world, devices.data()));
  }
  ~LocalRanks() {
    for (ncclComm_t c : comms_) ncclCommDestroy(c);
  }
  LocalRanks(const LocalRanks&) = delete;
  LocalRanks& operator=(const LocalRanks&) = delete;

  int world() const { return static_cast<int>(comms_.size()); }
  /// Runs body(rank, comm) on one thread per rank, each on its own GPU; rethrows the first exception.
  void run(const std::function<void(int, ncclComm_t)>& body) {
    std::vector<std::thread> threads;
    // On the stack, not a std::vector: g++ 13 at -O3 reports a vector of exception_ptr freed here as
    // "operator delete called on pointer with nonzero offset" (-Wfree-nonheap-object, a false report).
    constexpr int kMostRanks = 16;
    if (world() > kMostRanks) throw std::invalid_argument("LocalRanks: more than 16 ranks");
    std::array<std::exception_ptr, kMostRanks> errors{};
    for (int r = 0; r < world(); ++r)
      threads.emplace_back([&, r] {
        try {
          CUDA_CHECK(cudaSetDevice(r));
          body(r, comms_[static_cast<std::size_t>(r)]);
        } catch (...) {
          errors[static_cast<std::size_t>(r)] = std::current_exception();
        }
      });
    for (std::thread& t : threads) t.join();
    for (const std::exception_ptr& e : errors)
      if (e) std::rethrow_exception(e);
  }

 private:
  std::vector<ncclComm_t> comms_;
};

/// n floats uniform in [-3, 3).
inline std::vector<float> random_values(std::size_t n, std::uint64_t seed) {
  Rng rng(seed, 4);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng.uniform(-3, 3));
  return v;
}

/// A fresh, empty folder named after the running test (and its binary: both tracks hold tests of one name).
inline fs::path fresh_dir() { return trainer_process::fresh_dir("course_s09"); }
using trainer_process::slurp;

/// The stage 09 trainer of this test binary's track, built beside it.
inline fs::path trainer() { return trainer_process::bin_dir() / ("s09_train_" + trainer_process::track()); }

/// What a finished process left.
struct Finished {
  int exit_code = -1;  ///< the exit code, or 128 + the signal
  std::string out, err;
  double seconds = 0;
  bool timed_out = false;
};

/// A trainer process running in the background, its output going to files in `dir`.
class TrainerProcess {
 public:
  TrainerProcess(const fs::path& dir, const std::string& name, std::vector<std::string> args,
                 const std::vector<std::pair<std::string, std::string>>& env = {})
      : out_(dir / (name + ".out")), err_(dir / (name + ".err")), start_(std::chrono::steady_clock::now()) {
    args.insert(args.begin(), trainer().string());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(&a[0]);
    argv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      const int o = ::open(out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int e = ::open(err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(o, STDOUT_FILENO);
      ::dup2(e, STDERR_FILENO);
      for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
  }
  ~TrainerProcess() {
    if (pid_ > 0 && !done_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  TrainerProcess(const TrainerProcess&) = delete;
  TrainerProcess& operator=(const TrainerProcess&) = delete;

  pid_t pid() const { return pid_; }
  /// Waits up to `timeout_s`; a process still running then is killed (timed_out).
  Finished wait(double timeout_s) {
    Finished f;
    int status = 0;
    for (;;) {
      const pid_t done = ::waitpid(pid_, &status, WNOHANG);
      if (done == pid_) break;
      if (elapsed() > timeout_s) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        f.timed_out = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    done_ = true;
    f.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    f.seconds = elapsed();
    f.out = slurp(out_);
    f.err = slurp(err_);
    return f;
  }

 private:
  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  fs::path out_, err_;
  std::chrono::steady_clock::time_point start_;
  pid_t pid_ = -1;
  bool done_ = false;
};

/// Runs the trainer to the end (at most `timeout_s`).
inline Finished run_trainer_binary(const fs::path& dir, const std::string& name, const std::vector<std::string>& args,
                                   double timeout_s = 120,
                                   const std::vector<std::pair<std::string, std::string>>& env = {}) {
  TrainerProcess p(dir, name, args, env);
  return p.wait(timeout_s);
}

/// Every value of two saved models, as one list each.
inline std::vector<float> model_values(const fs::path& file) {
  const ModelFile m = load_model(file.string());
  std::vector<float> all;
  for (const NamedTensor& t : m.tensors) all.insert(all.end(), t.tensor.data.begin(), t.tensor.data.end());
  return all;
}

/// How many values of `a` and `b` differ in any bit (a size mismatch counts every value).
inline std::size_t differing_values(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return std::max(a.size(), b.size());
  std::size_t n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) n += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  return n;
}

/// Where `a` and `b` first differ in any bit, for the message of a differing_values() check:
/// "the first at [17]: 0.25 (0x3e800000) against 0.5 (0x3f000000)", or the sizes.
inline std::string first_difference(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return std::to_string(a.size()) + " values against " + std::to_string(b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) {
      std::uint32_t x, y;
      std::memcpy(&x, &a[i], 4);
      std::memcpy(&y, &b[i], 4);
      char buf[160];
      std::snprintf(buf, sizeof buf, "the first at [%zu] of %zu: %.9g (0x%08x) against %.9g (0x%08x)", i, a.size(),
                    static_cast<double>(a[i]), x, static_cast<double>(b[i]), y);
      return buf;
    }
  return "none";
}

}  // namespace course::s09test
