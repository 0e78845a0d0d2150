"""Tests of the learner's loop in tools/course (next, watch, check's next card): where a task's hole is,
its lesson section, the progress line, the compiler's errors, and the wait for a save (inotify and polling).
The builds and test runs themselves are what `tools/course check` does; these tests need no build.

    python3 -m unittest tools.tests.test_course_loop     (tools/test.d/compare-selftest runs it)
"""
import importlib.machinery
import importlib.util
import shutil
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]


def load_course():
    loader = importlib.machinery.SourceFileLoader("course_cli", str(ROOT / "tools" / "course"))
    spec = importlib.util.spec_from_loader("course_cli", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


course = load_course()


class TaskPlaces(unittest.TestCase):
    def test_an_open_hole_is_found_at_its_todo_line(self):
        for stage, tasks in course.all_tasks().items():
            for task in tasks:
                places = course.task_places(task)
                self.assertTrue(places, f"Task {task} has no hole")
                for f, line in places:
                    text = (ROOT / f).read_text().split("\n")
                    self.assertIn(f"TODO(Task {task})", text[line - 1], f"{f}:{line}")

    def test_a_filled_hole_is_found_after_the_code_before_it(self):
        with tempfile.TemporaryDirectory() as tmp:
            exercises = Path(tmp) / "exercises"
            shutil.copytree(ROOT / "exercises" / "01_fc_softmax", exercises / "01_fc_softmax")
            dense = exercises / "01_fc_softmax" / "dense.hpp"
            lines = dense.read_text().split("\n")
            todo = next(i for i, l in enumerate(lines) if "TODO(Task 1.4)" in l)
            throw = next(i for i in range(todo, len(lines)) if 'NotImplemented("Task 1.4"' in lines[i])
            lines[todo:throw + 1] = ["  // my dense backward", "  int filled = 1;"]
            dense.write_text("\n".join(lines))
            with mock.patch.object(course.gen_exercises, "EXERCISES", exercises), \
                    mock.patch.object(course, "ROOT", Path(tmp)):
                (f, line), = course.task_places("1.4")
                self.assertEqual(line, todo + 1)
                self.assertEqual(dense.read_text().split("\n")[line - 1], "  // my dense backward")
                self.assertFalse(course.untouched("1.4"))
                self.assertTrue(course.untouched("1.1"))


class AfterContext(unittest.TestCase):
    def test_a_line_that_recurs_is_told_apart_by_the_lines_before_it(self):
        # Two functions that both start with g.check(): the second hole is after the second one.
        before = ["void a() {", "  g.check();", "  a_body();", "}", "void b() {", "  g.check();"]
        filled = before[:5] + ["  g.check();", "  my_code();", "}"]
        self.assertEqual(course.after_context(before, filled), 7)
        self.assertIsNone(course.after_context(["  nowhere();"], filled))


class LessonSections(unittest.TestCase):
    def test_every_task_has_its_section_in_its_lesson(self):
        # tools/course next and watch point at the heading that carries {#task-N-M}.
        for stage, tasks in course.all_tasks().items():
            for task in tasks:
                lesson, line, heading, anchor = course.lesson_section(stage, task)
                self.assertIsNotNone(line, f"{lesson} has no heading with {{#{anchor}}} for Task {task}")
                self.assertIn(task, heading)


class Progress(unittest.TestCase):
    STAGES = {"01_fc_softmax": ["1.1", "1.2"], "04_cuda_matmul": ["4.1", "4.2"]}

    def test_counts_per_stage(self):
        with mock.patch.object(course, "untouched", return_value=True):
            line = course.progress_line(self.STAGES, {"1.1": "pass", "1.2": "fail", "4.1": "skip", "4.2": "skip"})
        self.assertEqual(line, "progress: 1 of 4 tasks pass  [01 1/2, 04 -/2 (no GPU here)]")

    def test_filled_but_unchecked_tasks_are_not_counted_as_not_done(self):
        with mock.patch.object(course, "untouched", return_value=False):
            line = course.progress_line(self.STAGES, {"1.1": "pass", "1.2": "pass"})
        self.assertIn("04 0+?/2", line)
        self.assertTrue(line.endswith("(?: filled in, not checked yet)"), line)


class CompilerErrors(unittest.TestCase):
    def test_keeps_the_errors_with_their_code_lines(self):
        out = "\n".join(["[ 10%] Building CXX object x.o",
                         "exercises/01_fc_softmax/dense.hpp:40:5: error: 'foo' was not declared in this scope",
                         "   40 |     foo(x);", "      |     ^~~", "",
                         "make[2]: *** [x.o] Error 1", "gmake: *** [all] Error 2"])
        errors = course.compiler_errors(out)
        self.assertIn("error: 'foo' was not declared", errors[0])
        self.assertIn("foo(x);", errors[1])
        self.assertFalse(any(l.startswith(("make", "gmake")) for l in errors))


class WaitForSave(unittest.TestCase):
    def wait_with(self, which):
        with tempfile.TemporaryDirectory() as tmp:
            exercises = Path(tmp)
            (exercises / "01_x").mkdir()
            src = exercises / "01_x" / "a.hpp"
            src.write_text("int a;\n")
            with mock.patch.object(course.gen_exercises, "EXERCISES", exercises), \
                    mock.patch.object(course.shutil, "which", which):
                snap = course.exercise_snapshot()
                (exercises / "01_x" / "notes.txt").write_text("not a source file")
                saver = threading.Timer(0.5, lambda: src.write_text("int a = 1;\n"))
                t = time.time()
                saver.start()
                course.wait_for_save(snap)
                self.assertGreaterEqual(time.time() - t, 0.5)
                self.assertLess(time.time() - t, 10)
                # A save made while a check ran (before the wait began) is not missed.
                snap = course.exercise_snapshot()
                src.write_text("int a = 2; // saved during the check\n")
                t = time.time()
                course.wait_for_save(snap)
                self.assertLess(time.time() - t, 2)

    def test_polling(self):
        self.wait_with(lambda name: None)

    @unittest.skipUnless(shutil.which("inotifywait"), "inotifywait is not installed (Debian: inotify-tools)")
    def test_inotify(self):
        self.wait_with(shutil.which)


if __name__ == "__main__":
    unittest.main()
