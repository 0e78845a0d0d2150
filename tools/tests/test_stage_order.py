"""tools/stage_order.py: no earlier stage names a later one. A miniature repository of three stages in a
temporary folder, with mentions planted: each kind of mention is found, an earlier stage's name is not one,
the allowlist allows no more than it lists, and a line of it that no longer occurs fails. (The repository
itself is checked by tools/test.d/stage-order.)

    python3 -m unittest tools.tests.test_stage_order     (tools/test.d/compare-selftest runs it)
"""
import contextlib
import io
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import stage_order  # noqa: E402


class MiniCourse:
    """solutions/, tests/ and benchmarks/ of stages 01_cpu, 02_gpu and 03_fused; the files given written."""

    def __init__(self, files):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = Path(self.tmp.name)
        base = {"solutions/01_cpu/dense.hpp": "// Stage 01: dense layers.\n",
                "solutions/02_gpu/gpu_engine.hpp": "class GpuEngine {};  // stage 01's layers, on the GPU\n",
                "solutions/03_fused/fused_kernels.hpp": "struct FusedEngine {};\n",
                "tests/03_fused/fused_test.cpp": "// as stage 02 does\n"}
        for rel, text in {**base, **files}.items():
            path = self.root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        self.allowlist = self.root / "allow.txt"

    def check(self, allowed=(), prune=False):
        self.allowlist.write_text("# known\n" + "".join(a + "\n" for a in allowed))
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = stage_order.check(self.root, self.allowlist, prune=prune)
        return rc, out.getvalue()

    def close(self):
        self.tmp.cleanup()


class Mentions(unittest.TestCase):
    def found(self, line, number=1):
        ids = {1: "01_cpu", 2: "02_gpu", 3: "03_fused"}
        return stage_order.mentions(line, number, ids, {"FusedEngine": 3}, {"fused_kernels.hpp": 3})

    def test_every_kind_of_mention(self):
        self.assertEqual(self.found("// stage 03 adds it"), [(3, "stage 03")])
        self.assertEqual(self.found("// Stage 2's kernel"), [(2, "Stage 2")])
        self.assertEqual(self.found("// stages 02 and 03 use it"), [(2, "stages 02 and 03"), (3, "stages 02 and 03")])
        self.assertEqual(self.found("// stages 01 to 03"), [(3, "stages 01 to 03")])
        self.assertEqual(self.found('#include "03_fused/x.hpp"'), [(3, "03_fused")])
        self.assertEqual(self.found("run s02_train_solution"), [(2, "s02_train_solution")])
        self.assertEqual(self.found("TEST(Stage03_Engine, X)"), [(3, "Stage03_Engine")])
        self.assertEqual(self.found("// see Task 3.2"), [(3, "Task 3.2")])
        self.assertEqual(self.found("FusedEngine* e;"), [(3, "FusedEngine")])
        self.assertEqual(self.found('#include "fused_kernels.hpp"'), [(3, '#include "fused_kernels.hpp"')])

    def test_the_own_stage_and_earlier_ones_are_not_mentions(self):
        for line in ("// stage 01 and stage 02", "// 01_cpu's dense", "s01_tests_solution", "Task 2.1",
                     "// the stages of a pipeline", "// a later stage adds conv", "// 2 stages of 03 threads"):
            self.assertEqual(self.found(line, number=2), [], line)


class Check(unittest.TestCase):
    def test_a_planted_mention_fails_with_its_place(self):
        course = MiniCourse({"solutions/01_cpu/net.hpp": "// glue\n// stage 03 fuses these\n"})
        try:
            rc, out = course.check()
            self.assertEqual(rc, 1, out)
            self.assertIn("solutions/01_cpu/net.hpp:2: names stage 03 ('stage 03')", out)
            self.assertIn("1 new mention(s)", out)
        finally:
            course.close()

    def test_the_allowlist_allows_what_it_lists_and_no_more(self):
        course = MiniCourse({"solutions/01_cpu/net.hpp": "// stage 03 fuses these\n",
                             "benchmarks/02_gpu/b.cpp": "// stage 03 runs it too\n// as stage 03 does\n"})
        try:
            listed = ["solutions/01_cpu/net.hpp: stage 03", "benchmarks/02_gpu/b.cpp: stage 03"]
            rc, out = course.check(listed)
            self.assertEqual(rc, 1, out)  # b.cpp has two; one line allows one
            self.assertIn("benchmarks/02_gpu/b.cpp:2:", out)
            rc, out = course.check(listed + ["benchmarks/02_gpu/b.cpp: stage 03"])
            self.assertEqual(rc, 0, out)
        finally:
            course.close()

    def test_a_line_that_no_longer_occurs_fails_and_prune_drops_it(self):
        course = MiniCourse({})
        try:
            rc, out = course.check(["solutions/01_cpu/gone.hpp: stage 02"])
            self.assertEqual(rc, 1, out)
            self.assertIn("'solutions/01_cpu/gone.hpp: stage 02' occurs 1 time(s) fewer than listed", out)
            rc, out = course.check(["solutions/01_cpu/gone.hpp: stage 02"], prune=True)
            self.assertEqual(rc, 0, out)
            self.assertEqual(course.allowlist.read_text(), "# known\n")
        finally:
            course.close()


if __name__ == "__main__":
    unittest.main()
