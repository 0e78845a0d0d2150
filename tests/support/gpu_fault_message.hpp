// What a learner reads when a GPU test binary meets a fault in the code under
// test: which task's code was running, the CUDA error, what it usually means,
// and the exact compute-sanitizer command that shows the kernel and the line.
// These functions only build the text (no CUDA here, so the tests of common/
// check them); gpu_fault_report.cpp detects the faults and prints it.
#pragma once

#include <regex>
#include <string>

namespace course::gpu_fault {

/// The task a test belongs to, from its suite's name: "Task4_5_RegisterTiled"
/// (or "Sizes/Task4_5_RegisterTiled" for a parameterized one) gives "4.5";
/// any other suite gives "".
inline std::string task_of_suite(const std::string& suite) {
  std::smatch m;
  if (std::regex_search(suite, m, std::regex("(^|/)Task([0-9]+)_([0-9]+)_"))) return m[2].str() + "." + m[3].str();
  return "";
}

/// What kind of fault a CUDA error is, which decides the advice and the tool.
enum class FaultKind {
  Memory,  ///< a kernel touched memory it must not (illegal or misaligned address, device assert): the context is lost
  Launch,  ///< a launch was refused (grid or block too large, too much shared memory, no kernel for this GPU)
  Hang,    ///< a test did not finish within its time limit: a kernel that never returns
};

/// "'" + s + "'" with every ' escaped, for a POSIX shell.
inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

/// The compute-sanitizer tool that finds a fault of this kind.
inline const char* sanitizer_tool(FaultKind kind) { return kind == FaultKind::Hang ? "synccheck" : "memcheck"; }

/// The command that reruns `test` of `binary` (an absolute path) under the tool for `kind`.
/// A hang needs the time limit off, since the sanitizer makes every kernel slower.
inline std::string sanitizer_command(FaultKind kind, const std::string& binary, const std::string& test) {
  return std::string(kind == FaultKind::Hang ? "COURSE_GPU_TEST_TIMEOUT=0 " : "") + "compute-sanitizer --tool " +
         sanitizer_tool(kind) + " " + binary + " --gtest_filter=" + shell_quote(test);
}

/// "Task 4.2's code" or, for a test of no single task, "the code test Foo.Bar runs".
inline std::string whose_code(const std::string& suite, const std::string& test) {
  const std::string task = task_of_suite(suite);
  return task.empty() ? "the code test " + test + " runs" : "Task " + task + "'s code";
}

/// The explanation of a fault `error` ("an illegal memory access was encountered
/// (cudaErrorIllegalAddress)") met while `test` (suite.name) of `binary` ran. The
/// first line says it all (tools/course check prints only that line): whose
/// code, the error, the command. The lines after it explain.
inline std::string explain_fault(FaultKind kind, const std::string& suite, const std::string& test,
                                 const std::string& binary, const std::string& error) {
  const char* how = kind == FaultKind::Hang ? "a __syncthreads() that not every thread reaches shows with"
                                             : "find the line with";
  std::string s = "GPU fault in " + whose_code(suite, test) + ": " + error + " (test " + test + "); " + how + ": " +
                  sanitizer_command(kind, binary, test);
  switch (kind) {
    case FaultKind::Memory:
      s += "\n  A kernel read or wrote outside its buffers (an index past the end, a missing bounds check, a"
           " wrong stride), or at a misaligned address. memcheck reruns the test and names the kernel, the"
           " source line, the thread and block, and the address.\n  The GPU context of this process is lost"
           " with it: every later test in this binary that uses the GPU fails with the same error. Fix this"
           " one first, or run one test at a time with --gtest_filter.";
      break;
    case FaultKind::Launch:
      s += "\n  The launch was refused before the kernel ran: a block of more than 1024 threads, a grid"
           " dimension out of range, more shared memory than a block may have, or a binary built for another"
           " GPU. memcheck shows the launch's host backtrace. The GPU stays usable: later tests are not"
           " affected.";
      break;
    case FaultKind::Hang:
      s += "\n  A kernel kept running: a __syncthreads() that some threads of the block never reach"
           " (synccheck names it and its line), or a loop whose exit condition never holds (that one runs on"
           " under the sanitizer too: read the loops of the kernel this test launches). The process stops"
           " here, since a running kernel cannot be taken back; the tests after this one did not run."
           " COURSE_GPU_TEST_TIMEOUT (seconds, 0 = none) sets the limit.";
      break;
  }
  return s;
}

/// The note on a later test that failed once the context was lost in `first_test`: most likely
/// for that reason, since every GPU call then fails.
inline std::string explain_lost_context(const std::string& suite, const std::string& test,
                                        const std::string& first_test, const std::string& error) {
  return "GPU context lost earlier: " + test + " (" + whose_code(suite, test) + ") failed after test " + first_test +
         " met " + error + ", after which no GPU call of this process can succeed; fix that fault first (see its"
         " message above), or run this test alone with --gtest_filter=" + shell_quote(test);
}

/// The message of a test stopped for running past `seconds`.
inline std::string explain_timeout(const std::string& suite, const std::string& test, const std::string& binary,
                                   long seconds) {
  return explain_fault(FaultKind::Hang, suite, test, binary,
                       "the test did not finish within " + std::to_string(seconds) + " s");
}

}  // namespace course::gpu_fault
