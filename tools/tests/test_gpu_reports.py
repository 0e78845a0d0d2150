"""Tests of the GPU machine's reports, on canned output (no GPU needed):

- tools/gpu/sanitizer_verdict.py: a compute-sanitizer run fails only when the sanitizer found an
  error, a test failed or the binary crashed; a spent time budget is reported with the tests it
  covered, and a binary that made no CUDA call has nothing to check;
- tools/course's excerpt of a failure (course_lib/results.py): the lines `tools/course check` prints, which
  for a GPU fault are the one line of explanation naming the task, the CUDA error and the sanitizer command.

    python3 -m unittest discover -s tools/tests
"""
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "gpu"))
sys.path.insert(0, str(ROOT / "tools"))

import sanitizer_verdict as sv  # noqa: E402
from course_lib.results import excerpt  # noqa: E402


def gtest_out(ok=0, failed=0, skipped=0):
    """A GoogleTest run's output with that many tests ended each way."""
    lines = ["[==========] Running tests."]
    for i in range(ok):
        lines += [f"[ RUN      ] Task4_4_Tiled.Case{i}", f"[       OK ] Task4_4_Tiled.Case{i} (12 ms)"]
    for i in range(failed):
        lines += [f"[ RUN      ] Task4_5_X.Case{i}", f"[  FAILED  ] Task4_5_X.Case{i} (3 ms)"]
    for i in range(skipped):
        lines += [f"[ RUN      ] Stage06.Case{i}", f"[  SKIPPED ] Stage06.Case{i} (0 ms)"]
    if failed:  # the listing at the end names them again, without a time
        lines += [f"[  FAILED  ] {failed} tests, listed below:"] + [f"[  FAILED  ] Task4_5_X.Case{i}" for i in range(failed)]
    return "\n".join(lines) + "\n"


CLEAN_LOG = "========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n"
MEMCHECK_ERRORS = """========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at matmul_grid_kernel(const float *, const float *, float *, int, int, int)+0x1c0 in matmul_2_grid.cu:31
=========     by thread (3,0,0) in block (6,0,0)
=========     Address 0x7f0a3e000190 is out of bounds
=========
========= Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch failure" on CUDA API call to cudaMemcpy.
=========     Saved host backtrace up to driver entry point at error
=========
========= Target application returned an error
========= ERROR SUMMARY: 2 errors
"""
# A racecheck run its budget stopped: no summary, one race so far (and a warning, which is no error).
RACECHECK_KILLED_WITH_RACE = """========= COMPUTE-SANITIZER
========= Warning: Race reported between Read access at tiled_kernel+0x90 in matmul_4_tiled.cu:40
=========     and Write access at tiled_kernel+0x60 in matmul_4_tiled.cu:35 [64 hazards]
=========
========= Error: Race reported between Write access at tiled_kernel+0x60 in matmul_4_tiled.cu:35
=========     and Read access at tiled_kernel+0x90 in matmul_4_tiled.cu:40 [128 hazards]
=========
"""
KILLED_CLEAN = "========= COMPUTE-SANITIZER\n"
NO_CUDA_LOG = ("========= COMPUTE-SANITIZER\n========= Error: Target application terminated before first "
               "instrumented API call\n")


class SanitizerVerdict(unittest.TestCase):
    def test_clean(self):
        text, failed, ended = sv.verdict(CLEAN_LOG, gtest_out(ok=5, skipped=1), 0, 45, 6)
        self.assertEqual(text, "clean")
        self.assertFalse(failed)
        self.assertEqual(ended, {"OK": 5, "FAILED": 0, "SKIPPED": 1})

    def test_errors_fail_the_run(self):
        text, failed, _ = sv.verdict(MEMCHECK_ERRORS, gtest_out(ok=3, failed=1), 99, 45, 4)
        self.assertEqual(text, "2 ERRORS")
        self.assertTrue(failed)

    def test_a_spent_budget_is_reported_with_the_tests_covered_and_is_no_failure(self):
        text, failed, _ = sv.verdict(KILLED_CLEAN, gtest_out(ok=12), 124, 15, 40)
        self.assertEqual(text, "budget of 15s spent: 12 of 40 tests covered, no error in them")
        self.assertFalse(failed)
        text, failed, _ = sv.verdict(KILLED_CLEAN, gtest_out(ok=2), 137, 15, 40)
        self.assertFalse(failed)

    def test_errors_found_before_the_budget_ran_out_still_fail(self):
        text, failed, _ = sv.verdict(RACECHECK_KILLED_WITH_RACE, gtest_out(ok=7), 124, 15, 40)
        self.assertEqual(text, "1 ERRORS (budget of 15s spent: 7 of 40 tests covered)")
        self.assertTrue(failed)

    def test_a_racecheck_warning_alone_is_no_error(self):
        warning_only = RACECHECK_KILLED_WITH_RACE.split("=========\n========= Error")[0]
        self.assertEqual(sv.count_errors(warning_only), 0)

    def test_failed_tests_fail_the_run(self):
        text, failed, ended = sv.verdict(CLEAN_LOG, gtest_out(ok=4, failed=2), 1, 45, 6)
        self.assertEqual(text, "2 TESTS FAILED (exit 1)")
        self.assertTrue(failed)
        self.assertEqual(ended["FAILED"], 2, "the listing at the end is not counted twice")

    def test_a_crash_fails_the_run(self):
        text, failed, _ = sv.verdict(KILLED_CLEAN, gtest_out(ok=3), 139, 45, 9)
        self.assertEqual(text, "CRASHED (exit 139) after 3 of 9 tests")
        self.assertTrue(failed)

    def test_no_cuda_call_is_nothing_to_check(self):
        text, failed, _ = sv.verdict(NO_CUDA_LOG, gtest_out(skipped=2), 1, 45, 2)
        self.assertEqual(text, "no CUDA call in these tests: nothing to check")
        self.assertFalse(failed)

    def test_the_command_line_prints_one_line_and_exits_1_on_failure(self):
        with tempfile.TemporaryDirectory() as tmp:
            log, out = Path(tmp) / "log", Path(tmp) / "out"
            log.write_text(MEMCHECK_ERRORS)
            out.write_text(gtest_out(ok=3, failed=1))
            args = [sys.executable, str(ROOT / "tools" / "gpu" / "sanitizer_verdict.py"), "--tool", "memcheck",
                    "--binary", "s04_tests_solution", "--log", str(log), "--out", str(out), "--rc", "99",
                    "--timeout", "45", "--listed", "4", "--seconds", "7"]
            r = subprocess.run(args, capture_output=True, text=True)
            self.assertEqual(r.returncode, 1)
            self.assertEqual(r.stdout.count("\n"), 1)
            self.assertIn("sanitize: memcheck   s04_tests_solution", r.stdout)
            self.assertIn("2 ERRORS", r.stdout)
            log.write_text(CLEAN_LOG)
            out.write_text(gtest_out(ok=4))
            args[args.index("--rc") + 1] = "0"
            self.assertEqual(subprocess.run(args, capture_output=True, text=True).returncode, 0)


class FirstReason(unittest.TestCase):
    def test_a_gpu_fault_is_passed_through_from_its_own_line(self):
        # What prove_exercises.run_task() returns for a failed test: its failures, one after the other.
        fault = ("GPU fault in Task 4.2's code: an illegal memory access was encountered (cudaErrorIllegalAddress) "
                 "(test Task4_2_Grid.Odd); find the line with: compute-sanitizer --tool memcheck "
                 "/b/bin/s04_tests_exercise --gtest_filter='Task4_2_Grid.Odd'")
        message = ("unknown file\nC++ exception with description \"cudaMemcpy failed at gemm.cpp:40: an illegal memory "
                   "access was encountered\" thrown in the test body. tests/04_cuda_matmul/task4_2_grid_test.cpp:31\n"
                   "Failed\n" + fault + "\n  A kernel read or wrote outside its buffers ...")
        self.assertEqual(excerpt(message), [fault])

    def test_a_lost_context_and_a_hang_are_passed_through(self):
        lost = "GPU context lost earlier: Task4_2_Grid.B (Task 4.2's code) failed after test ..."
        self.assertEqual(excerpt("x.cpp:3\nFailed\n" + lost), [lost])
        # A binary the time limit stopped leaves no report: run_task() keeps its output's tail.
        hang = "GPU fault in Task 4.3's code: the test did not finish within 3 s (test T.t); a __syncthreads() ..."
        self.assertEqual(excerpt("[ RUN      ] T.t\n  A kernel kept running...\n" + hang), [hang])

    def test_other_failures_keep_their_reasons(self):
        self.assertEqual(excerpt('C++ exception with description "Task 1.3 is not implemented yet '
                                 '(solutions/...)" thrown in the test body.'),
                         ["Task 1.3 is not implemented yet (solutions/...)"])
        self.assertEqual(excerpt("a.cpp:1\nExpected equality\n  Which is: 3"), ["Expected equality", "  Which is: 3"])


if __name__ == "__main__":
    unittest.main()


class RankSteps(unittest.TestCase):
    """tools/gpu/rank_steps.py: a data-parallel step split into compute, all-reduce and idle time."""

    @staticmethod
    def trace(path, offset_ns, steps=30):
        # Each 100 us step: gather 10 us, compute 60 us, 5 us idle, the peer sum 20 us, the update 5 us.
        rows = ["start_ns,end_ns,stream,graph,name"]
        for k in range(steps):
            t = offset_ns + k * 100_000
            for a, b, name in ((0, 10, "gather_batch_kernel(float*)"), (10, 70, "conv_kernel(Args)"),
                               (75, 95, "course::(anonymous namespace)::peer_sum_kernel(course::PeerSumArgs)"),
                               (95, 100, "sgd_kernel(Args)")):
                rows.append(f"{t + a * 1000},{t + b * 1000},7,1,{name}")
        Path(path).write_text("\n".join(rows) + "\n")

    def test_the_split_and_the_skew(self):
        import rank_steps
        with tempfile.TemporaryDirectory() as d:
            self.trace(f"{d}/a.csv", 0)
            self.trace(f"{d}/b.csv", 3_000)
            a, b = rank_steps.steps_of(f"{d}/a.csv"), rank_steps.steps_of(f"{d}/b.csv")
            self.assertEqual(len(a), 9)  # 30 steps less 20 of warm-up and the last
            span, compute, comm, idle = rank_steps.anatomy(a)
            self.assertAlmostEqual(span, 100.0)
            self.assertAlmostEqual(compute, 75.0)
            self.assertAlmostEqual(comm, 20.0)
            self.assertAlmostEqual(idle, 5.0)
            self.assertAlmostEqual(rank_steps.start_skew(a, b), 3.0)
            self.assertIsNone(rank_steps.start_skew(a, [[(0, 1, "gather")]] * 9))
