// What a learner reads when a kernel of theirs faults: one message naming the
// task whose code ran, the CUDA error, and the exact compute-sanitizer command
// that finds the line (tests/support/gpu_fault_report.cpp). Checked on real
// faults: bin/s04_planted_faults holds kernels with planted bugs (test-only,
// planted/), run here as a child process, as tools/course check runs a
// learner's test binary.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "gpu_testkit.hpp"
#include "trainer_process.hpp"

using namespace course;
using namespace course::trainer_process;

namespace {

namespace fs = std::filesystem;

#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << "'" << (text) << "' lacks '" << (part) << "'"

fs::path planted() { return bin_dir() / "s04_planted_faults"; }

#define REQUIRE_PLANTED()                                                         \
  SKIP_WITHOUT_GPU();                                                             \
  if (!fs::exists(planted()))                                                     \
  GTEST_SKIP() << planted() << " is not built (build the target s04_planted_faults)"

// The planted tests matching `filter`, run to their end; the environment
// variable COURSE_GPU_TEST_TIMEOUT is set to `timeout` when given.
Finished run_planted(const fs::path& dir, const std::string& filter, const std::string& timeout = "") {
  if (!timeout.empty()) setenv("COURSE_GPU_TEST_TIMEOUT", timeout.c_str(), 1);
  const Finished f = run(planted(), dir, "planted",
                         {"--gtest_filter=" + filter, "--gtest_color=no",
                          "--gtest_output=json:" + (dir / "report.json").string()});
  if (!timeout.empty()) unsetenv("COURSE_GPU_TEST_TIMEOUT");
  return f;
}

// The planted tests matching `filter`, run in `dir`, which must fail (exit code 1), not crash.
Finished run_failing_planted(const fs::path& dir, const std::string& filter) {
  const Finished f = run_planted(dir, filter);
  EXPECT_EQ(f.code, 1) << "a failed test, not a crash:\n" << f.out << f.err;
  return f;
}

std::string command_for(const std::string& tool, const std::string& test) {
  return "compute-sanitizer --tool " + tool + " " + planted().string() + " --gtest_filter='" + test + "'";
}

}  // namespace

TEST(Stage04_FaultMessages, ARefusedLaunchNamesTheTaskTheErrorAndTheCommand) {
  REQUIRE_PLANTED();
  const fs::path dir = fresh_dir("course_faults");
  const Finished f = run_failing_planted(dir, "Task4_1_*");
  const std::string test = "Task4_1_PlantedLaunchError.ABlockOfTooManyThreads";
  // CUDA 13.0 on the H100 refused a block of 2048 threads with cudaErrorInvalidValue,
  // where the documentation names cudaErrorInvalidConfiguration: either is the launch's fault.
  const bool as_value = std::string(f.out).find("(cudaErrorInvalidValue)") != std::string::npos;
  EXPECT_CONTAINS(f.out, std::string("GPU fault in Task 4.1's code: ") +
                             (as_value ? "invalid argument (cudaErrorInvalidValue)"
                                       : "invalid configuration argument (cudaErrorInvalidConfiguration)") +
                             " (test " + test + "); find the line with: " + command_for("memcheck", test));
  EXPECT_CONTAINS(f.out, "The GPU stays usable");
}

TEST(Stage04_FaultMessages, AnIllegalAddressNamesTheTaskAndLaterTestsSayTheContextIsLost) {
  REQUIRE_PLANTED();
  const fs::path dir = fresh_dir("course_faults");
  const Finished f = run_failing_planted(dir, "Task4_2_*");
  const std::string first = "Task4_2_PlantedOutOfBounds.WritesPastTheEndOfC";
  const std::string message = "GPU fault in Task 4.2's code: an illegal memory access was encountered "
                              "(cudaErrorIllegalAddress) (test " + first + "); find the line with: " +
                              command_for("memcheck", first);
  EXPECT_CONTAINS(f.out, message);
  EXPECT_CONTAINS(f.out, "every later test in this binary that uses the GPU fails with the same error");
  EXPECT_CONTAINS(f.out, "GPU context lost earlier: Task4_2_PlantedOutOfBounds.ALaterTestFindsTheContextLost (Task "
                         "4.2's code) failed after test " + first + " met an illegal memory access");
  // What tools/course check reads: the test's failures in the JSON report.
  std::ifstream in(dir / "report.json");
  ASSERT_TRUE(in) << "no JSON report: the binary did not end normally";
  const nlohmann::json report = nlohmann::json::parse(in);
  std::string failures;
  for (const auto& suite : report["testsuites"])
    for (const auto& t : suite["testsuite"])
      if (suite["name"].get<std::string>() + "." + t["name"].get<std::string>() == first && t.contains("failures"))
        for (const auto& failure : t["failures"]) failures += failure["failure"].get<std::string>() + "\n";
  EXPECT_CONTAINS(failures, message);
}

TEST(Stage04_FaultMessages, AKernelThatNeverReturnsIsStoppedWithTheMessage) {
  REQUIRE_PLANTED();
  const fs::path dir = fresh_dir("course_faults");
  const auto start = std::chrono::steady_clock::now();
  const Finished f = run_planted(dir, "Task4_3_*", "3");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(f.code, 1) << f.out << f.err;
  EXPECT_LT(seconds, 60) << "the time limit of 3 s did not stop it";
  const std::string test = "Task4_3_PlantedHang.AKernelThatNeverReturns";
  const std::string first_line = "GPU fault in Task 4.3's code: the test did not finish within 3 s (test " + test +
                                 "); a __syncthreads() that not every thread reaches shows with: "
                                 "COURSE_GPU_TEST_TIMEOUT=0 " + command_for("synccheck", test);
  EXPECT_CONTAINS(f.out, first_line);
  EXPECT_CONTAINS(f.out, "the tests after this one did not run");
  EXPECT_CONTAINS(f.err, first_line) << "its first line is on stderr too, last, where tools/course looks";
}
