"""tools/course test after a failed gate: it names the gate test that failed and how many later tests it held
back as "Not Run" (tools/course_lib/gates.py), from ctest output captured of a miniature of the course's gates
(tools/tests/fixtures/ctest_gate/: its CMakeLists.txt says how each file was made). No build, no GPU.

    python3 -m unittest tools.tests.test_ctest_gates     (tools/test.d/compare-selftest runs it)
"""
import contextlib
import io
import sys
import unittest
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from course_lib import gates  # noqa: E402
from tests.test_course_loop import load_course  # noqa: E402

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "ctest_gate"


def captured(name):
    return (FIXTURES / name).read_text()


class GatesFromCtestOutput(unittest.TestCase):
    def test_one_failed_gate_and_everything_it_held_back(self):
        held = gates.held_back(captured("ctest_gate_failed.txt"))
        self.assertEqual(list(held), [("s06/solution/Stage06_Safety",)])
        # Stage 07's three name the gate; stage 08's three name stage 07's tests, held back themselves.
        self.assertEqual(held[("s06/solution/Stage06_Safety",)],
                         [f"s0{s}/solution/{t}" for s in (7, 8) for t in (f"Task0{s}_1", f"Task0{s}_2",
                                                                           f"Stage0{s}_Safety")])

    def test_the_line_names_the_gate_the_count_and_the_stages(self):
        lines = gates.gate_lines(captured("ctest_gate_failed.txt"), "build/ci")
        self.assertEqual(len(lines), 2, lines)
        self.assertIn("gate: s06/solution/Stage06_Safety failed and held back 6 later tests (stages 07 to 08)",
                      lines[0])
        self.assertEqual(lines[1], "  rerun it alone: ctest --test-dir build/ci -R '^s06/solution/Stage06_Safety$'"
                                   " --output-on-failure")

    def test_two_failures_in_one_stage_are_one_gate(self):
        lines = gates.gate_lines(captured("ctest_two_gates.txt"))
        self.assertEqual(len(lines), 2, lines)
        self.assertIn("gate: s06/solution/Task06_1, s06/solution/Stage06_Safety failed together and held back "
                      "6 later tests", lines[0])
        self.assertIn("-R '^s06/solution/Task06_1$|^s06/solution/Stage06_Safety$'", lines[1])

    def test_a_failure_in_the_last_stage_holds_nothing_back(self):
        out = captured("ctest_last_stage_failed.txt")
        self.assertEqual(gates.results(out)[0]["s08/solution/Stage08_Safety"], "Failed")
        self.assertEqual(gates.gate_lines(out), [])

    def test_a_clean_run_says_nothing(self):
        passed = "\n".join(l for l in captured("ctest_gate_failed.txt").splitlines()
                           if "Passed" in l or l.startswith("      Start"))
        self.assertGreater(len(gates.results(passed)[0]), 5)
        self.assertEqual(gates.gate_lines(passed), [])


class CourseTestSummary(unittest.TestCase):
    def test_the_summary_names_the_gate_under_the_ctest_step(self):
        course = load_course()
        out = io.StringIO()
        with mock.patch.object(course, "run", return_value=0), mock.patch.object(course, "build", return_value=0), \
                mock.patch.object(course, "run_tee", return_value=(8, captured("ctest_gate_failed.txt"))), \
                contextlib.redirect_stdout(out):
            rc = course.cmd_test(None)
        self.assertEqual(rc, 1)
        summary = out.getvalue().split("test summary:")[1]
        failed = [l for l in summary.splitlines() if l.strip().startswith("FAILED")]
        self.assertEqual(len(failed), 1, summary)
        self.assertIn(course.CTEST_STEP, failed[0])
        after = summary.split(course.CTEST_STEP)[1]
        self.assertIn("gate: s06/solution/Stage06_Safety failed and held back 6 later tests", after)


if __name__ == "__main__":
    unittest.main()
