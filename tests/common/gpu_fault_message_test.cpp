// The text a learner reads when a GPU test meets a fault (tests/support/
// gpu_fault_message.hpp), checked without a GPU: the task read from the test's
// name, the command that reruns exactly that test under compute-sanitizer,
// and the first line that tools/course check prints alone.
#include <gtest/gtest.h>

#include <string>

#include "expect_contains.hpp"
#include "gpu_fault_message.hpp"

namespace course::gpu_fault {
namespace {

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

TEST(GpuFaultMessage, TheTaskComesFromTheSuiteName) {
  EXPECT_EQ(task_of_suite("Task4_5_RegisterTiled"), "4.5");
  EXPECT_EQ(task_of_suite("Task4_10_GpuTraining"), "4.10");
  EXPECT_EQ(task_of_suite("Sizes/Task5_3_ConvForward"), "5.3") << "a parameterized suite";
  EXPECT_EQ(task_of_suite("Stage06_Engine"), "");
  EXPECT_EQ(task_of_suite("NotTask4_5_X"), "") << "only a whole prefix counts";
  EXPECT_EQ(task_of_suite("Task4_Planted"), "");
}

TEST(GpuFaultMessage, TheCommandRerunsExactlyThatTestUnderTheRightTool) {
  EXPECT_EQ(sanitizer_command(FaultKind::Memory, "/b/bin/s04_tests_exercise", "Task4_5_RegisterTiled.Odd/3"),
            "compute-sanitizer --tool memcheck /b/bin/s04_tests_exercise --gtest_filter='Task4_5_RegisterTiled.Odd/3'");
  EXPECT_EQ(sanitizer_command(FaultKind::Launch, "/b/x", "T.t"), "compute-sanitizer --tool memcheck /b/x --gtest_filter='T.t'");
  EXPECT_EQ(sanitizer_command(FaultKind::Hang, "/b/x", "T.t"),
            "COURSE_GPU_TEST_TIMEOUT=0 compute-sanitizer --tool synccheck /b/x --gtest_filter='T.t'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
}

TEST(GpuFaultMessage, TheFirstLineSaysWhoseCodeTheErrorAndTheCommand) {
  const std::string m = explain_fault(FaultKind::Memory, "Task4_2_Grid", "Task4_2_Grid.OddSizes", "/b/bin/s04_tests_exercise",
                                      "an illegal memory access was encountered (cudaErrorIllegalAddress)");
  EXPECT_EQ(first_line(m),
            "GPU fault in Task 4.2's code: an illegal memory access was encountered (cudaErrorIllegalAddress) (test "
            "Task4_2_Grid.OddSizes); find the line with: compute-sanitizer --tool memcheck /b/bin/s04_tests_exercise "
            "--gtest_filter='Task4_2_Grid.OddSizes'");
  EXPECT_CONTAINS(m, "every later test in this binary that uses the GPU fails with the same error");
  const std::string other = explain_fault(FaultKind::Launch, "Stage04_GpuEngine", "Stage04_GpuEngine.Steps", "/b/x",
                                          "invalid configuration argument (cudaErrorInvalidConfiguration)");
  EXPECT_CONTAINS(first_line(other), "GPU fault in the code test Stage04_GpuEngine.Steps runs: invalid configuration");
  EXPECT_CONTAINS(other, "The GPU stays usable");
  EXPECT_EQ(other.find("context of this process is lost"), std::string::npos);
}

TEST(GpuFaultMessage, ATimeoutAndALostContextAreExplained) {
  const std::string hang = explain_timeout("Task4_4_Tiled", "Task4_4_Tiled.Big", "/b/x", 300);
  EXPECT_EQ(first_line(hang), "GPU fault in Task 4.4's code: the test did not finish within 300 s (test Task4_4_Tiled.Big); "
                              "a __syncthreads() that not every thread reaches shows with: COURSE_GPU_TEST_TIMEOUT=0 "
                              "compute-sanitizer --tool synccheck /b/x --gtest_filter='Task4_4_Tiled.Big'");
  EXPECT_CONTAINS(hang, "the tests after this one did not run");
  const std::string lost = explain_lost_context("Task4_5_X", "Task4_5_X.B", "Task4_4_Tiled.A", "an illegal memory access");
  EXPECT_EQ(lost, "GPU context lost earlier: Task4_5_X.B (Task 4.5's code) failed after test Task4_4_Tiled.A met an "
                  "illegal memory access, after which no GPU call of this process can succeed; fix that fault first "
                  "(see its message above), or run this test alone with --gtest_filter='Task4_5_X.B'");
}

}  // namespace
}  // namespace course::gpu_fault
