// A stage's real trainer binary run as a learner runs it, from a test: started
// as a child process with its output in files, waited for, stopped with a real
// signal. Used by the trainer tests of common/ (stage 01) and of the GPU stages.
#pragma once

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace course::trainer_process {

namespace fs = std::filesystem;

/// The folder of the running test binary (the trainers are built next to it, in bin/).
inline fs::path bin_dir() { return fs::read_symlink("/proc/self/exe").parent_path(); }

/// The running test binary's track: "solution" for sNN_tests_solution, else "exercise".
inline std::string track() {
  const std::string self = fs::read_symlink("/proc/self/exe").filename().string();
  return self.size() >= 8 && self.compare(self.size() - 8, 8, "exercise") == 0 ? "exercise" : "solution";
}

/// An empty folder named after the running test and its binary (the two tracks'
/// binaries hold tests of the same names), under the system's temporary folder.
/// The '/' of a parameterised test's name ("Prefix/Suite", "Test/Param") becomes '_'.
inline fs::path fresh_dir(const std::string& prefix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = prefix + "_" + fs::read_symlink("/proc/self/exe").filename().string() + "_" +
                     std::string(info->test_suite_name()) + "_" + std::string(info->name());
  std::replace(name.begin(), name.end(), '/', '_');
  fs::path dir = fs::temp_directory_path() / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

/// A file's bytes ("" when it cannot be read).
inline std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// A JSON file, parsed (a file that is missing or does not parse throws, failing the test).
inline nlohmann::json read_json(const fs::path& p) { return nlohmann::json::parse(slurp(p)); }

struct Process {
  pid_t pid = -1;
  fs::path out, err;
};

/// Starts `exe` with `args`, its stdout and stderr going to NAME.out and NAME.err in `dir`.
inline Process start(const fs::path& exe, const fs::path& dir, const std::string& name, std::vector<std::string> args) {
  Process p;
  p.out = dir / (name + ".out");
  p.err = dir / (name + ".err");
  args.insert(args.begin(), exe.string());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::cout.flush();
  std::fflush(nullptr);  // nothing buffered may be written twice, by the parent and the child
  p.pid = fork();
  if (p.pid == 0) {
    const int out = open(p.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = open(p.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) _exit(127);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return p;
}

struct Finished {
  int code = -1;  ///< the exit code, or 128 + the signal that ended the process
  std::string out, err;
};

/// Waits for `p` to end.
inline Finished wait_for(const Process& p) {
  int status = 0;
  Finished f;
  if (waitpid(p.pid, &status, 0) == p.pid) f.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  f.out = slurp(p.out);
  f.err = slurp(p.err);
  return f;
}

/// Runs `exe` with `args` to the end.
inline Finished run(const fs::path& exe, const fs::path& dir, const std::string& name,
                    const std::vector<std::string>& args) {
  return wait_for(start(exe, dir, name, args));
}

/// True when `p` has ended; it stays to be waited for (wait_for() then reads its exit code).
inline bool has_ended(const Process& p) {
  siginfo_t info{};
  return waitid(P_PID, static_cast<id_t>(p.pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == p.pid;
}

/// Polls until `ready()` holds (true), or the process ends or `limit` passes (false).
template <typename Ready>
bool wait_until(const Process& p, Ready&& ready, std::chrono::seconds limit = std::chrono::seconds(300)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!ready()) {
    if (has_ended(p) || std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

}  // namespace course::trainer_process
