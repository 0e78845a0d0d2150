"""The Colab notebook (docs/colab.ipynb) and its runner (tools/run_notebook.py), checked where no GPU is: the
notebook is nbformat 4 JSON whose code cells are all `%%bash` cells, numbered in their one-line comments as the
runner numbers them; the runner runs each cell as a bash process of its own under `-euo pipefail`, passes --env,
and stops at the first cell that fails, naming it. The notebook's own run is tools/gpu/notebook_check.sh's, on the
GPU machine.

    python3 -m unittest tools.tests.test_run_notebook     (tools/test.d/compare-selftest runs it)
"""
import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "docs" / "colab.ipynb"
RUNNER = ROOT / "tools" / "run_notebook.py"


def fake_notebook(folder, *cells):
    """A notebook in `folder` of one markdown cell, then a code cell per string of `cells` (their source as given)."""
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {},
          "cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# a fake notebook\n", "echo not code"]}] +
                   [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                     "source": c.splitlines(keepends=True)} for c in cells]}
    path = Path(folder) / "fake.ipynb"
    path.write_text(json.dumps(nb))
    return path


def run(notebook, *args, cwd=None):
    return subprocess.run([sys.executable, str(RUNNER), str(notebook), *args], capture_output=True, text=True,
                          timeout=60, cwd=cwd)


class TheNotebook(unittest.TestCase):
    def setUp(self):
        self.nb = json.loads(NOTEBOOK.read_text())
        self.code = ["".join(c["source"]) for c in self.nb["cells"] if c["cell_type"] == "code"]

    def test_nbformat_4_opening_with_what_it_does(self):
        self.assertEqual(self.nb["nbformat"], 4)
        first = self.nb["cells"][0]
        self.assertEqual(first["cell_type"], "markdown")
        text = "".join(first["source"])
        for words in ("T4", "How long", "COURSE_REPO", "tools/run_notebook.py"):
            self.assertIn(words, text)
        for cell in self.nb["cells"]:
            if cell["cell_type"] == "code":
                self.assertEqual(cell["outputs"], [], "a notebook is committed without outputs")

    def test_every_code_cell_is_bash_with_a_numbered_comment(self):
        self.assertGreaterEqual(len(self.code), 8)
        for number, source in enumerate(self.code, 1):
            lines = source.splitlines()
            self.assertEqual(lines[0], "%%bash", f"code cell {number}")
            self.assertTrue(lines[1].startswith(f"# {number}. "), f"code cell {number}'s comment: {lines[1]!r}")

    def test_the_cells_run_what_the_course_runs(self):
        text = "\n".join(self.code)
        for command in ("nvidia-smi", "COURSE_REPO=", "cuda-toolkit-13-0", "cudnn9-cuda-13", "libnccl-dev",
                        "python3 tools/course deps", "dataset-fashion-mnist", "cmake --preset default",
                        "python3 tools/course compare", "ctest --test-dir build/default", "python3 tools/course next"):
            self.assertIn(command, text)

    def test_the_runner_lists_it(self):
        proc = run(NOTEBOOK, "--list")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn(f"==> cell {len(self.code)} of {len(self.code)}", proc.stdout)
        self.assertIn("    | python3 tools/course compare", proc.stdout)
        self.assertNotIn("%%bash", proc.stdout)


class Runner(unittest.TestCase):
    def test_stops_at_the_first_failing_cell_and_names_it(self):
        with tempfile.TemporaryDirectory() as d:
            nb = fake_notebook(d, "%%bash\n# 1. the first\necho one > first.txt\n",
                               "%%bash\n# 2. the one that fails\nfalse\necho after the failure\n",
                               "%%bash\n# 3. never runs\ntouch third.txt\n")
            proc = run(nb, cwd=d)
            self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
            self.assertTrue((Path(d) / "first.txt").exists())
            self.assertFalse((Path(d) / "third.txt").exists())
        self.assertIn("<== cell 1 of 3 ok", proc.stdout)
        self.assertIn("<== cell 2 of 3 FAILED (exit 1", proc.stdout)
        self.assertIn("stopped at cell 2 of 3: # 2. the one that fails", proc.stdout)
        self.assertNotIn("\nafter the failure\n", proc.stdout)   # -e: the cell stops at its failing command
        self.assertNotIn("==> cell 3", proc.stdout)

    def test_a_failing_pipe_and_an_unset_variable_fail_the_cell(self):
        with tempfile.TemporaryDirectory() as d:
            for body in ("false | cat\n", "echo \"$NO_SUCH_VARIABLE\"\n"):
                proc = run(fake_notebook(d, "%%bash\n# 1. fails\n" + body), cwd=d)
                self.assertNotEqual(proc.returncode, 0, body)

    def test_the_cells_exit_status_and_env(self):
        with tempfile.TemporaryDirectory() as d:
            nb = fake_notebook(d, "%%bash\n# 1. env\ntest \"$COURSE_X\" = \"a=b\"\n", "%%bash\n# 2. exit\nexit 7\n")
            proc = run(nb, "--env", "COURSE_X=a=b", cwd=d)
        self.assertEqual(proc.returncode, 7, proc.stdout + proc.stderr)
        self.assertIn("<== cell 1 of 2 ok", proc.stdout)

    def test_each_cell_is_a_shell_of_its_own(self):
        # As Colab's %%bash cells: a variable or a cd does not carry over; every cell starts in the same folder.
        with tempfile.TemporaryDirectory() as d:
            nb = fake_notebook(d, "%%bash\n# 1.\nX=1\nmkdir -p sub\ncd sub\n",
                               "%%bash\n# 2.\ntest -z \"${X:-}\"\ntest -d sub\n")
            proc = run(nb, cwd=d)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("all 2 code cells ran", proc.stdout)

    def test_a_code_cell_that_is_not_bash_runs_nothing(self):
        with tempfile.TemporaryDirectory() as d:
            nb = fake_notebook(d, "%%bash\n# 1.\ntouch ran.txt\n", "print('python')\n")
            proc = run(nb, cwd=d)
            self.assertFalse((Path(d) / "ran.txt").exists())
        self.assertEqual(proc.returncode, 2)
        self.assertIn("code cell 2 does not start with %%bash", proc.stderr)

    def test_refuses_what_is_no_notebook_and_a_bad_env(self):
        with tempfile.TemporaryDirectory() as d:
            bad = Path(d) / "bad.ipynb"
            bad.write_text("{not json")
            self.assertEqual(run(bad).returncode, 2)
            proc = run(fake_notebook(d, "%%bash\n# 1.\ntrue\n"), "--env", "NOEQUALS")
        self.assertEqual(proc.returncode, 2)
        self.assertIn("expected NAME=VALUE", proc.stderr)


class GpuMachineScript(unittest.TestCase):
    """tools/gpu/notebook_check.sh, which runs the notebook on the GPU machine: it parses, and its dry run
    (STEP_DRY_RUN=1: the cells listed, none run) ends in its one-line verdict."""
    SCRIPT = ROOT / "tools" / "gpu" / "notebook_check.sh"

    def test_parses(self):
        proc = subprocess.run(["bash", "-n", str(self.SCRIPT)], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)

    def test_dry_run(self):
        cells = sum(1 for c in json.loads(NOTEBOOK.read_text())["cells"] if c["cell_type"] == "code")
        with tempfile.TemporaryDirectory() as out:
            proc = subprocess.run(["bash", str(self.SCRIPT)], capture_output=True, text=True, timeout=60,
                                  env={"PATH": "/usr/bin:/bin", "STEP_DRY_RUN": "1", "OUT": out})
            log = (Path(out) / "notebook.log").read_text()
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn(f"notebook: dry run: {cells} cells listed, none run (rc 0)", proc.stdout)
        self.assertIn("    | python3 tools/course compare", log)


if __name__ == "__main__":
    unittest.main()
