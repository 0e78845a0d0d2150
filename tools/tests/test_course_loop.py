"""Tests of the learner's loop in tools/course (tools/course_lib/): where a task's hole is, its lesson section,
the GPU detection and the one line that says which GPU stages were left out, the states and gates of
progress, the lines of a failure, reset, the compiler's errors, and the wait for a save (inotify and polling).
The builds and test runs themselves are what `tools/course check` does (tools/test.d/walk runs them); these
tests need no build.

    python3 -m unittest tools.tests.test_course_loop     (tools/test.d/compare-selftest runs it)
"""
import ctypes
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
sys.path.insert(0, str(ROOT / "tools"))

import gen_exercises  # noqa: E402
from compare_lib import stages as compare_stages, table  # noqa: E402
from compare_lib.runs import Run, left_out_row  # noqa: E402
from course_lib import build, common, gpu, holes, loop, progress, results, tasks  # noqa: E402

NO_DRIVER = "no usable GPU (this machine has no NVIDIA driver, hence no GPU to run on)"


def load_course():
    """tools/course itself (a script without .py), to check that it loads with its modules."""
    loader = importlib.machinery.SourceFileLoader("course_cli", str(ROOT / "tools" / "course"))
    spec = importlib.util.spec_from_loader("course_cli", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


class TempExercises:
    """A copy of exercises/ (as generated) in a temporary folder, which tasks, holes and progress then read."""

    def __enter__(self):
        self.tmp = tempfile.TemporaryDirectory()
        root = Path(self.tmp.name)
        self.exercises = root / "exercises"
        for dst, content in gen_exercises.generate().items():
            out = self.exercises / dst.relative_to(gen_exercises.EXERCISES)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(content.encode() if isinstance(content, str) else content)
        shutil.copytree(ROOT / "docs" / "lessons", root / "docs" / "lessons")
        self.patches = [mock.patch.object(gen_exercises, "EXERCISES", self.exercises),
                        mock.patch.object(common, "ROOT", root)]
        for p in self.patches:
            p.start()
        return self

    def file(self, rel):
        return self.exercises / rel

    def __exit__(self, *exc):
        for p in self.patches:
            p.stop()
        self.tmp.cleanup()


class TheScript(unittest.TestCase):
    def test_tools_course_loads_and_lists_its_commands(self):
        course = load_course()
        for name in ("compare", "next", "watch", "check", "progress", "reset", "docs", "hint", "solution"):
            self.assertIn(f"tools/course {name}", course.__doc__)


class DepsOnAnotherRelease(unittest.TestCase):
    """tools/course deps installs the packages apt has and names the others: one name a release lacks (Ubuntu
    22.04 has no libclang-rt-14-dev) would otherwise fail the whole apt-get install."""
    POLICY = ("cmake:\n  Installed: 3.22.1-1ubuntu1\n  Candidate: 3.22.1-1ubuntu1\n  Version table:\n"
              " *** 3.22.1-1ubuntu1 500\n        500 http://archive.ubuntu.com/ubuntu jammy/main amd64 Packages\n"
              "mail-transport-agent:\n  Installed: (none)\n  Candidate: (none)\n  Version table:\n"
              "libcli11-dev:\n  Installed: (none)\n  Candidate: 2.1.2+ds-1\n  Version table:\n"
              "     2.1.2+ds-1 500\n")

    def test_a_candidate_is_what_apt_can_install(self):
        course = load_course()
        # libclang-rt-14-dev: apt-cache policy prints no paragraph for a name it does not know.
        self.assertEqual(course.with_candidates(self.POLICY), {"cmake", "libcli11-dev"})

    def test_installable_splits_the_names(self):
        course = load_course()
        proc = mock.Mock(stdout=self.POLICY)
        with mock.patch.object(course.shutil, "which", return_value="/usr/bin/apt-cache"), \
                mock.patch.object(course.subprocess, "run", return_value=proc) as run:
            wanted, unknown = course.installable(["cmake", "libclang-rt-14-dev", "libcli11-dev"])
        self.assertEqual((wanted, unknown), (["cmake", "libcli11-dev"], ["libclang-rt-14-dev"]))
        self.assertEqual(run.call_args.args[0][:2], ["apt-cache", "policy"])
        self.assertEqual(run.call_args.kwargs["env"]["LC_ALL"], "C")  # "Candidate:" in every locale

    def test_without_package_lists_every_name_stays(self):
        course = load_course()
        with mock.patch.object(course.shutil, "which", return_value="/usr/bin/apt-cache"), \
                mock.patch.object(course.subprocess, "run", return_value=mock.Mock(stdout="")):
            self.assertEqual(course.installable(["cmake", "g++"]), (["cmake", "g++"], []))


class TaskPlaces(unittest.TestCase):
    def test_an_open_hole_is_found_at_its_todo_line(self):
        for stage, ts in tasks.all_tasks().items():
            for task in ts:
                places = tasks.task_places(task)
                self.assertTrue(places, f"Task {task} has no hole")
                for f, line in places:
                    text = (ROOT / f).read_text().split("\n")
                    self.assertIn(f"TODO(Task {task})", text[line - 1], f"{f}:{line}")

    def test_a_filled_hole_is_found_after_the_code_before_it(self):
        with TempExercises() as ex:
            dense = ex.file("01_fc_softmax/dense.hpp")
            lines = dense.read_text().split("\n")
            todo = next(i for i, l in enumerate(lines) if "TODO(Task 1.4)" in l)
            throw = next(i for i in range(todo, len(lines)) if 'NotImplemented("Task 1.4"' in lines[i])
            lines[todo:throw + 1] = ["  // my dense backward", "  int filled = 1;"]
            dense.write_text("\n".join(lines))
            (f, line), = tasks.task_places("1.4")
            self.assertEqual(line, todo + 1)
            self.assertEqual(dense.read_text().split("\n")[line - 1], "  // my dense backward")
            self.assertTrue(tasks.untouched("1.1"))
            self.assertFalse(tasks.untouched("1.4"))
            self.assertTrue(progress.started("1.4"))
            self.assertFalse(progress.started("1.1"))


class AfterContext(unittest.TestCase):
    def test_a_line_that_recurs_is_told_apart_by_the_lines_before_it(self):
        # Two functions that both start with g.check(): the second hole is after the second one.
        before = ["void a() {", "  g.check();", "  a_body();", "}", "void b() {", "  g.check();"]
        filled = before[:5] + ["  g.check();", "  my_code();", "}"]
        self.assertEqual(tasks.after_context(before, filled), 7)
        self.assertIsNone(tasks.after_context(["  nowhere();"], filled))


class LessonSections(unittest.TestCase):
    def test_every_task_has_its_section_in_its_lesson(self):
        # tools/course next and watch point at the heading that carries {#task-N-M}.
        for stage, ts in tasks.all_tasks().items():
            for task in ts:
                lesson, line, heading, anchor = tasks.lesson_section(stage, task)
                self.assertIsNotNone(line, f"{lesson} has no heading with {{#{anchor}}} for Task {task}")
                self.assertIn(task, heading)


# ---- the GPU -------------------------------------------------------------------
class FakeDriver:
    """libcuda's four calls that gpu.detect() makes, with the answers a test chooses."""

    def __init__(self, init=0, count=1, driver=13000):
        self.init, self.count, self.driver = init, count, driver

    def cuInit(self, flags):
        return self.init

    def cuDeviceGetCount(self, out):
        out._obj.value = self.count
        return 0

    def cuDriverGetVersion(self, out):
        out._obj.value = self.driver
        return 0

    def cuGetErrorString(self, code, out):
        out._obj.value = b"unknown error"
        return 0


class GpuDetection(unittest.TestCase):
    def test_the_override(self):
        self.assertEqual(gpu.detect({"COURSE_ASSUME_GPU": "1"}, load=lambda: None), gpu.Gpu(True))
        found = gpu.detect({"COURSE_ASSUME_GPU": "0"}, cuda=FakeDriver())
        self.assertFalse(found.usable)
        self.assertIn("COURSE_ASSUME_GPU=0", found.reason)

    def test_each_case_in_the_words_of_no_gpu_reason(self):
        # common/gpu/cuda_check.hpp's no_gpu_reason says the same in its parentheses.
        self.assertEqual(gpu.detect({}, load=lambda: None), gpu.Gpu(False, NO_DRIVER))
        self.assertIn("(the NVIDIA driver is installed but sees no GPU)",
                      gpu.detect({}, cuda=FakeDriver(init=100)).reason)
        self.assertIn("(the NVIDIA driver is installed but lists no GPU)",
                      gpu.detect({}, cuda=FakeDriver(count=0)).reason)
        old = gpu.detect({}, cuda=FakeDriver(driver=12020), toolkit=13000)
        self.assertFalse(old.usable)
        self.assertIn("the NVIDIA driver supports CUDA 12.2, older than the CUDA 13.0 toolkit this build uses: "
                      "update the driver", old.reason)
        self.assertIn("unknown error", gpu.detect({}, cuda=FakeDriver(init=999)).reason)
        self.assertTrue(gpu.detect({}, cuda=FakeDriver(driver=13010), toolkit=13000).usable)
        self.assertTrue(gpu.detect({}, cuda=FakeDriver(), toolkit=None).usable)

    def test_gpu_stages_come_from_the_cmake_registration(self):
        kinds = gpu.gpu_stages()
        self.assertEqual([s for s, g in kinds.items() if not g], ["01_fc_softmax", "02_conv_pool", "03_openmp"])
        self.assertEqual(set(kinds), set(tasks.all_tasks()))
        # tools/compare.py's list of stages says the same.
        for s in compare_stages.KNOWN_STAGES:
            self.assertEqual(s.gpu, kinds[s.id], s.id)

    def test_split_and_the_one_line(self):
        stages = list(tasks.all_tasks())
        none = gpu.Gpu(False, NO_DRIVER)
        run, left = gpu.split_stages(stages, none)
        self.assertEqual(run, ["01_fc_softmax", "02_conv_pool", "03_openmp"])
        self.assertEqual(len(left), 6)
        self.assertEqual(gpu.split_stages(stages, none, want_gpu_stages=True), (stages, []))
        self.assertEqual(gpu.split_stages(stages, gpu.Gpu(True)), (stages, []))
        line = gpu.left_out_line(left, NO_DRIVER)
        self.assertEqual(line.count("\n"), 0)
        self.assertTrue(line.startswith(f"GPU stages 04-09 left out: {NO_DRIVER}; "), line)
        self.assertIn("--gpu-stages", line)
        self.assertEqual(gpu.stage_numbers(["04_a", "06_b"]), "04, 06")


class CompareLeavesOutGpuStages(unittest.TestCase):
    def rows(self):
        s = {x.id: x for x in compare_stages.KNOWN_STAGES}
        ok = Run(stage="01_fc_softmax", model="mlp", status="ok", device="CPU, 1 thread", seconds_per_epoch=2.0,
                 seconds_measured=2.0, images=60000, images_per_epoch=60000, epochs=1, images_per_second=30000,
                 test_accuracy=0.8)
        left = [left_out_row(s[sid], m, NO_DRIVER) for sid in ("04_cuda_matmul", "05_im2col_gemm", "06_cudnn")
                for m in ("mlp", "cnn")]
        return table.order_rows(table.compute_speedups([ok] + left), ["mlp", "cnn"])

    def test_one_line_under_the_table_for_every_left_out_row(self):
        text = table.format_table(self.rows())
        self.assertEqual(text.count(NO_DRIVER), 1, text)
        line = next(l for l in text.splitlines() if NO_DRIVER in l)
        self.assertTrue(line.startswith("GPU stages 04-06 left out: "), line)
        self.assertNotIn("04_cuda_matmul", text)
        self.assertIn("01_fc_softmax", text)

    def test_the_files_keep_the_rows(self):
        rows = self.rows()
        csv_text = table.to_csv(rows)
        self.assertEqual(csv_text.count(NO_DRIVER), 6)
        import json
        data = json.loads(table.to_json(rows, machine={}, command="c", date="d", settings={}))
        self.assertEqual(sum(1 for r in data["rows"] if r["left_out"]), 6)
        self.assertTrue(data["notes"][0].startswith("GPU stages 04-06 left out"))
        svg = table.to_svg(rows, ["mlp", "cnn"], compare_stages.KNOWN_STAGES, machine_line="m", date="d",
                           command="c", dataset="fashion-mnist", batch=64)
        self.assertNotIn('data_stage="04_cuda_matmul"', svg.replace("data-stage", "data_stage"))


# ---- a task's result -------------------------------------------------------------
TENSOR_FAILURE = """/work/tests/01_fc_softmax/task1_1_dense_forward_test.cpp:31
Value of: testkit::tensor_matches("y of dense_forward", {{"n", B}, {"o", OUT}}, y, ref, tol)
  Actual: false (y of dense_forward, shape [n=3, o=4]: wrong at 12 of 12 entries (an entry passes within 1e-12 + 1e-12 x |expected|)
    at [0, 0]: expected -1.14194055, actual 0.858251911
    at [0, 1]: expected 0.5, actual 2
    ... and 10 more
    diagnosis: actual is what W read as [IN, OUT] gives
)
Expected: true"""
EQ_FAILURE = """/work/tests/x_test.cpp:18
Expected equality of these values:
  y[0]
    Which is: 7.75
  0.5f - 2 + 6 + 0.25f
    Which is: 4.75"""


class FailureLines(unittest.TestCase):
    def test_the_tests_own_words_without_googletests_frame(self):
        lines = results.excerpt(TENSOR_FAILURE)
        self.assertEqual(lines[0], "y of dense_forward, shape [n=3, o=4]: wrong at 12 of 12 entries (an entry "
                                   "passes within 1e-12 + 1e-12 x |expected|)")
        self.assertEqual(lines[1], "    at [0, 0]: expected -1.14194055, actual 0.858251911")
        self.assertEqual(lines[-1], "    diagnosis: actual is what W read as [IN, OUT] gives")
        self.assertFalse(any("Value of" in l or "Expected: true" in l for l in lines))

    def test_a_message_streamed_after_expect_true(self):
        # EXPECT_TRUE(r.passed) << "gradient check failed: " << ...: GoogleTest's frame comes first.
        message = ("/work/tests/01_fc_softmax/task1_3_loss_test.cpp:34\nValue of: r_.passed\n  Actual: false\n"
                   "Expected: true\ngradient check failed: dlogits of softmax cross-entropy (B=5, K=7): ...")
        self.assertEqual(results.excerpt(message),
                         ["gradient check failed: dlogits of softmax cross-entropy (B=5, K=7): ..."])

    def test_the_first_check_then_how_many_more(self):
        lines = results.excerpt(EQ_FAILURE + "\n" + EQ_FAILURE.replace(":18", ":19") + "\n" + EQ_FAILURE)
        self.assertEqual(lines[:3], ["Expected equality of these values:", "  y[0]", "    Which is: 7.75"])
        self.assertEqual(lines[-1], "... and 2 more failed checks in this test")

    def test_at_most_eight_lines(self):
        long = "/x.cpp:1\n" + "\n".join(f"line {i}" for i in range(30))
        lines = results.excerpt(long)
        self.assertEqual(len(lines), results.EXCERPT_LINES)
        self.assertEqual(lines[-1], "... 23 more lines")

    def test_a_hole_and_a_gpu_fault_in_one_line(self):
        hole = ('unknown file\nC++ exception with description "Task 1.1 is not implemented yet (01_fc_softmax/'
                'dense.hpp): read docs/lessons/01_fc_softmax.md" thrown in the test body.')
        self.assertEqual(results.excerpt(hole), ["Task 1.1 is not implemented yet (01_fc_softmax/dense.hpp): "
                                                 "read docs/lessons/01_fc_softmax.md"])
        fault = "x.cpp:3\nFailure\nGPU fault in Task 4.2: an illegal address (compute-sanitizer ...)"
        self.assertEqual(results.excerpt(fault), ["GPU fault in Task 4.2: an illegal address (compute-sanitizer ...)"])

    def test_the_command_for_the_full_output(self):
        r = results.TaskResult("1.1", "01_fc_softmax", "fail", tests=2, failed=2, test="Task1_1_A.B",
                               excerpt=results.excerpt(TENSOR_FAILURE))
        lines = results.fail_lines(r)
        self.assertEqual(lines[0], "Task1_1_A.B:")
        self.assertEqual(lines[-1], "2 of 2 tests fail; the full output: "
                                    "build/default/bin/s01_tests_exercise --gtest_filter='Task1_1_*'")


# ---- progress: states and gates ----------------------------------------------------
class Survey(unittest.TestCase):
    STAGES = {"01_fc_softmax": ["1.1", "1.2", "1.3"], "02_conv_pool": ["2.1", "2.2"],
              "04_cuda_matmul": ["4.1", "4.2"]}

    def survey(self, outcomes, begun, machine, **kw):
        """survey() with the build, the tests and the holes replaced: `outcomes` {task: state} of run_task,
        `begun` the tasks started."""
        ran = []

        def run_task(exe, task, stage):
            ran.append(task)
            state = outcomes.get(task, "fail")
            return results.TaskResult(task, stage, state, tests=2, failed=2 if state == "fail" else 0,
                                      test=f"Task{task.replace('.', '_')}_X.Y", excerpt=["expected 1, actual 2"])
        targets = {"s01_tests_exercise", "s02_tests_exercise", "s04_tests_exercise"}
        with mock.patch.object(build, "build_targets", return_value=(True, "")), \
                mock.patch.object(results, "run_task", side_effect=run_task), \
                mock.patch.object(progress, "started", side_effect=lambda t: t in begun):
            views = list(progress.survey(self.STAGES, machine=machine, targets=targets, **kw))
        return views, ran

    def test_progress_runs_only_started_tasks_and_gates_the_next_stage(self):
        views, ran = self.survey({"1.1": "pass"}, {"1.1", "1.2", "2.1"}, gpu.Gpu(False, NO_DRIVER),
                                 run_untouched=False)
        s01, s02, s04 = views
        self.assertEqual(ran, ["1.1", "1.2"])
        self.assertEqual(s01.states, {"1.1": "pass", "1.2": "fail", "1.3": "not started"})
        self.assertEqual(s02.gate, "gated: stage 01_fc_softmax must pass first (Tasks 1.2 and 1.3 not passing yet)")
        self.assertEqual(s02.states, {"2.1": "gated", "2.2": "not started"})
        self.assertTrue(s04.left_out)
        self.assertEqual(set(s04.states.values()), {"needs a GPU"})
        self.assertEqual(progress.next_task(views)[0], "1.2")
        self.assertEqual(progress.summary_line(views),
                         "progress: 1 of 7 tasks pass  [01 1/3, 02 0/2 gated, 04 need a GPU]")
        rows = progress.table_lines(views)
        self.assertTrue(rows[2].startswith("01_fc_softmax      1     1            1            -   Task 1.2 fails; "
                                           "next: Task 1.2"), rows[2])
        self.assertIn("gated: stage 01_fc_softmax must pass first", rows[3])
        self.assertIn("1 started, checked once it passes", rows[3])
        self.assertEqual(rows[4].split(), ["04_cuda_matmul", "-", "-", "-", "2"])

    def test_a_passing_stage_opens_the_next(self):
        views, ran = self.survey({t: "pass" for t in ("1.1", "1.2", "1.3")}, set(), gpu.Gpu(False, NO_DRIVER),
                                 run_untouched=True)
        self.assertTrue(views[0].passes)
        self.assertEqual(views[1].gate, "")
        self.assertEqual(ran, ["1.1", "1.2", "1.3", "2.1", "2.2"])
        self.assertEqual(progress.next_task(views)[0], "2.1")

    def test_with_a_gpu_or_gpu_stages_the_gpu_stage_runs_and_its_skips_need_a_gpu(self):
        outcomes = {t: "pass" for t in ("1.1", "1.2", "1.3", "2.1", "2.2")}
        outcomes.update({"4.1": "skip", "4.2": "skip"})
        for machine, flag in ((gpu.Gpu(True), False), (gpu.Gpu(False, NO_DRIVER), True)):
            views, ran = self.survey(outcomes, set(), machine, run_untouched=True, gpu_stages=flag)
            self.assertFalse(views[2].left_out)
            self.assertEqual(views[2].states, {"4.1": "needs a GPU", "4.2": "needs a GPU"})
            self.assertIsNone(progress.next_task(views))

    def test_force_checks_a_gated_stage(self):
        views, _ = self.survey({}, set(), gpu.Gpu(True), run_untouched=True, force=True)
        self.assertEqual(views[1].gate, "")
        self.assertEqual(views[1].states, {"2.1": "fail", "2.2": "fail"})

    def test_a_stage_the_build_does_not_define_is_not_built(self):
        with mock.patch.object(progress, "started", return_value=False):
            views = list(progress.survey({"03_openmp": ["3.1"]}, machine=gpu.Gpu(True), targets=set()))
        self.assertIn("not built", views[0].not_built)

    def test_the_gate_reads_the_same_everywhere(self):
        self.assertEqual(progress.gate_text("01_fc_softmax", ["1.1", "1.2"], ["1.1", "1.2"]),
                         "gated: stage 01_fc_softmax must pass first (none of its 2 tasks passes yet)")
        self.assertEqual(progress.gate_text("01_fc_softmax", ["1.3"]),
                         "gated: stage 01_fc_softmax must pass first (Task 1.3 not passing yet)")


class NextCard(unittest.TestCase):
    def card(self, views):
        import contextlib
        import io
        out = io.StringIO()
        with contextlib.redirect_stdout(out), mock.patch.object(gpu, "machine_gpu", return_value=gpu.Gpu(False, NO_DRIVER)):
            task = loop.print_next(views, tasks.task_goals(), tasks.all_tasks())
        return task, out.getvalue()

    def test_the_first_open_task_with_its_failure(self):
        v = progress.StageView("01_fc_softmax", ["1.1", "1.2"], states={"1.1": "pass", "1.2": "fail"})
        v.results["1.2"] = results.TaskResult("1.2", "01_fc_softmax", "fail", tests=3, failed=1, test="Task1_2_A.B",
                                              excerpt=["expected 1, actual 2"])
        task, text = self.card([v])
        self.assertEqual(task, "1.2")
        self.assertIn("    now:     FAIL  Task1_2_A.B:\n               expected 1, actual 2\n", text)
        self.assertIn("1 of 3 tests fail; the full output: build/default/bin/s01_tests_exercise "
                      "--gtest_filter='Task1_2_*'", text)

    def test_when_the_cpu_stages_pass_the_next_task_needs_a_gpu(self):
        done = progress.StageView("03_openmp", ["3.1"], states={"3.1": "pass"})
        left = progress.StageView("04_cuda_matmul", ["4.1"], states={"4.1": "needs a GPU"}, left_out=True)
        task, text = self.card([done, left])
        self.assertIsNone(task)
        self.assertTrue(text.startswith("every task of the stages that run here passes; the next task, Task 4.1, "
                                        "needs a GPU (tools/course watch 4.1 --gpu-stages"), text)
        self.assertIn("Task 4.1: ", text)


# ---- reset -------------------------------------------------------------------------
class Reset(unittest.TestCase):
    def test_the_hole_comes_back_and_the_other_tasks_code_stays(self):
        with TempExercises() as ex:
            dense = ex.file("01_fc_softmax/dense.hpp")
            generated = dense.read_text()
            holes.fill("1.1", edit=lambda ls: ls + ["      // my 1.1"])
            holes.fill("1.4", edit=lambda ls: ls + ["  // my 1.4"])
            filled = dense.read_text()
            self.assertIn("// my 1.4", filled)
            replaced = holes.reset("1.1")
            after = dense.read_text()
            self.assertIn("TODO(Task 1.1)", after)
            self.assertIn('NotImplemented("Task 1.1"', after)
            self.assertNotIn("// my 1.1", after)
            self.assertIn("// my 1.4", after)
            self.assertEqual(after.count("\n"), generated.count("\n") + filled.count("\n") - generated.count("\n")
                             - (len(replaced[0][1]) - len(replaced[0][0].hole)))
            holes.reset("1.4")
            self.assertEqual(dense.read_text(), generated)

    def test_every_task_round_trips(self):
        with TempExercises() as ex:
            generated = {p: p.read_text() for p in ex.exercises.rglob("*")
                         if p.is_file() and p.suffix in gen_exercises.SOURCE_SUFFIXES}
            order = tasks.task_order(tasks.all_tasks())
            for t in order:
                holes.fill(t)
            for t in reversed(order):
                holes.reset(t)
            for p, text in generated.items():
                self.assertEqual(p.read_text(), text, p)

    def test_it_refuses_when_the_lines_around_the_hole_changed(self):
        with TempExercises() as ex:
            dense = ex.file("01_fc_softmax/dense.hpp")
            holes.fill("1.1")
            lines = dense.read_text().split("\n")
            # The line just after the hole (the function's closing brace) is gone: where the hole ends is unknown.
            i = next(i for i, l in enumerate(lines) if "yn[o] = acc + b[o];" in l)
            end = next(j for j in range(i, len(lines)) if lines[j] == "}")
            lines[end] = "}  // edited"
            dense.write_text("\n".join(lines))
            before = dense.read_text()
            with self.assertRaises(holes.HoleNotFound) as caught:
                holes.reset("1.1")
            self.assertRegex(str(caught.exception), r"^the text around the hole of Task 1\.1 in exercises/01_fc_softmax/"
                             r"dense\.hpp is not as generated: line \d+ as generated reads: \}; your file has: "
                             r"\}  // edited$")
            self.assertEqual(dense.read_text(), before)

    def test_an_open_hole_is_open(self):
        with TempExercises():
            self.assertTrue(all(holes.is_open(h) for h in holes.find_holes("2.3")))


class CompilerErrors(unittest.TestCase):
    def test_keeps_the_errors_with_their_code_lines(self):
        out = "\n".join(["[ 10%] Building CXX object x.o",
                         "exercises/01_fc_softmax/dense.hpp:40:5: error: 'foo' was not declared in this scope",
                         "   40 |     foo(x);", "      |     ^~~", "",
                         "make[2]: *** [x.o] Error 1", "gmake: *** [all] Error 2"])
        errors = build.compiler_errors(out)
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
            with mock.patch.object(gen_exercises, "EXERCISES", exercises), \
                    mock.patch.object(loop.shutil, "which", which):
                snap = loop.exercise_snapshot()
                (exercises / "01_x" / "notes.txt").write_text("not a source file")
                saver = threading.Timer(0.5, lambda: src.write_text("int a = 1;\n"))
                t = time.time()
                saver.start()
                loop.wait_for_save(snap)
                self.assertGreaterEqual(time.time() - t, 0.5)
                self.assertLess(time.time() - t, 10)
                self.assertEqual(loop.changed_files(snap, loop.exercise_snapshot()), [str(src)])
                # A save made while a check ran (before the wait began) is not missed.
                snap = loop.exercise_snapshot()
                src.write_text("int a = 2; // saved during the check\n")
                t = time.time()
                loop.wait_for_save(snap)
                self.assertLess(time.time() - t, 2)

    def test_polling(self):
        self.wait_with(lambda name: None)

    @unittest.skipUnless(shutil.which("inotifywait"), "inotifywait is not installed (Debian: inotify-tools)")
    def test_inotify(self):
        self.wait_with(shutil.which)


class WatchRegressions(unittest.TestCase):
    def test_an_earlier_task_whose_file_changed_is_run_again(self):
        stages = {"01_fc_softmax": ["1.1", "1.2", "1.3", "1.4"]}
        dense = str(gen_exercises.EXERCISES / "01_fc_softmax" / "dense.hpp")
        ran = []

        def run_task(exe, task, stage):
            ran.append(task)
            return results.TaskResult(task, stage, "fail" if task == "1.1" else "pass", tests=1, failed=1)
        built = []
        with mock.patch.object(build, "build_targets", side_effect=lambda t: built.append(t) or (True, "")), \
                mock.patch.object(build, "known_targets", return_value={"s01_tests_exercise", "s01_task1_1_exercise"}), \
                mock.patch.object(results, "run_task", side_effect=run_task):
            broken = loop.regressions("1.4", stages, [dense], passed={"1.1", "1.2", "1.3"})
        self.assertEqual(ran, ["1.1"])   # 1.2 (activations.hpp) and 1.3 (loss.hpp) live elsewhere
        self.assertEqual(built, [["s01_task1_1_exercise"]], "Task 1.1's own test program, not the stage's")
        self.assertEqual([t for t, _ in broken], ["1.1"])


class FailingPart(unittest.TestCase):
    """A task of several parts names the part its failure points at, not always its first."""
    PARTS = [(None, "activation forward for relu, leaky, sigmoid, tanh and softplus", []),
             (None, "activation backward, dx = dy * f'(x)", [])]

    def result(self, test, *excerpt):
        return results.TaskResult("1.2", "01_fc_softmax", "fail", test=test, excerpt=list(excerpt))

    def test_a_gradient_check_points_at_the_backward_part(self):
        r = self.result("Task1_2_Activations.GradientCheckEveryActivation", "dx of relu, shape [i=200]: wrong")
        self.assertEqual(tasks.failing_part(self.PARTS, r), 1)

    def test_a_forward_test_points_at_the_forward_part(self):
        r = self.result("Task1_2_Activations.ForwardAtKnownPoints", "relu(x) at x = -2, 0.5, 3: wrong")
        self.assertEqual(tasks.failing_part(self.PARTS, r), 0)

    def test_the_words_of_the_test_pick_among_three(self):
        parts = [(None, "softmax (subtract the row maximum first) and the mean cross-entropy", []),
                 (None, "the gradient p - y of the mean loss", []),
                 (None, "mean squared error against one-hot targets, and its gradient", [])]
        self.assertEqual(tasks.failing_part(parts, self.result("Task1_3_Loss.MseAgainstOneHotTargets", "loss")), 2)

    def test_no_part_clearly_pointed_at_is_said_so(self):
        parts = [(None, "softmax (subtract the row maximum first) and the mean cross-entropy", []),
                 (None, "the gradient p - y of the mean loss", []),
                 (None, "mean squared error against one-hot targets, and its gradient", [])]
        r = self.result("Task1_3_SoftmaxCrossEntropy.GradientIsPMinusYOverB",
                        "gradient check failed: dlogits of softmax cross-entropy (B=5, K=7), shape [n=5, k=7]: worst "
                        "relative error 6.67e-01; analytic = 5 x numeric: a mean that does not divide by its count")
        self.assertIsNone(tasks.failing_part(parts, r))
        goal = tasks.goal_of("1.3", {"1.3": parts}, r)
        self.assertTrue(goal.startswith("softmax"), goal)
        self.assertIn("part 1 of 3: the failing test below says which part", goal)

    def test_nothing_to_go_by_is_the_first_part(self):
        self.assertEqual(tasks.failing_part(self.PARTS, None), 0)
        self.assertEqual(tasks.failing_part(self.PARTS[:1], self.result("Task1_2_A.Gradient", "dx")), 0)


class TestPrograms(unittest.TestCase):
    STAGE = ["2.1", "2.2", "2.3"]
    KNOWN = {"s02_tests_exercise", "s02_task2_1_exercise", "s02_task2_2_exercise", "s02_task2_3_exercise"}

    def test_some_tasks_of_a_stage_run_their_own_programs(self):
        targets, programs = progress.test_programs("02_conv_pool", ["2.3"], self.STAGE, self.KNOWN)
        self.assertEqual(targets, ["s02_task2_3_exercise"])
        self.assertEqual(programs["2.3"].name, "s02_task2_3_exercise")

    def test_a_whole_stage_runs_its_stage_program(self):
        targets, programs = progress.test_programs("02_conv_pool", self.STAGE, self.STAGE, self.KNOWN)
        self.assertEqual(targets, ["s02_tests_exercise"])
        self.assertEqual({p.name for p in programs.values()}, {"s02_tests_exercise"})

    def test_a_task_without_a_program_of_its_own_runs_the_stage_program(self):
        targets, _ = progress.test_programs("02_conv_pool", ["2.1", "2.2"], self.STAGE, {"s02_tests_exercise",
                                                                                         "s02_task2_1_exercise"})
        self.assertEqual(targets, ["s02_tests_exercise"])


if __name__ == "__main__":
    unittest.main()
