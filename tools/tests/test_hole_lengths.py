"""tools/hole_lengths.py: no exercise hole over 60 lines but the listed debts. A miniature solutions/ in a
temporary folder: holes at the limit pass; one over it fails unless listed; a listed one that grew fails; a
listed one that was split fails until --prune drops its line. (The repository itself is checked by
tools/test.d/hole-length.)

    python3 -m unittest tools.tests.test_hole_lengths     (tools/test.d/compare-selftest runs it)
"""
import contextlib
import io
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import hole_lengths  # noqa: E402


def hole(task, lines):
    return f"// BEGIN Task {task}: the goal\n" + "x = 1;\n" * lines + f"// END Task {task}\n"


class Tree:
    def __init__(self, files, allowed=""):
        self.tmp = tempfile.TemporaryDirectory()
        root = Path(self.tmp.name)
        self.solutions = root / "solutions"
        for rel, text in files.items():
            (self.solutions / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.solutions / rel).write_text(text)
        self.allowlist = root / "allow.txt"
        self.allowlist.write_text("# debts\n" + allowed)

    def problems(self):
        return hole_lengths.problems(self.solutions, self.allowlist)


class HoleLengthsTest(unittest.TestCase):
    def test_holes_at_the_limit_pass(self):
        tree = Tree({"01_cpu/a.cpp": hole("1.1", 60) + hole("1.2", 3)})
        self.assertEqual(tree.problems(), [])

    def test_a_hole_over_the_limit_fails_unless_listed(self):
        files = {"01_cpu/a.cpp": hole("1.1", 61)}
        found = Tree(files).problems()
        self.assertEqual(len(found), 1, found)
        self.assertIn("solutions/01_cpu/a.cpp: the hole of Task 1.1 is 61 lines, over 60", found[0])
        self.assertEqual(Tree(files, "1.1 01_cpu/a.cpp 61\n").problems(), [])

    def test_a_listed_hole_that_grew_fails(self):
        found = Tree({"01_cpu/a.cpp": hole("1.1", 70)}, "1.1 01_cpu/a.cpp 61\n").problems()
        self.assertEqual(len(found), 1, found)
        self.assertIn("grew to 70 lines (listed at 61", found[0])

    def test_a_split_hole_must_leave_the_list(self):
        tree = Tree({"01_cpu/a.cpp": hole("1.1", 40) + hole("1.2", 40)}, "1.1 01_cpu/a.cpp 80\n")
        found = tree.problems()
        self.assertEqual(len(found), 1, found)
        self.assertIn("Task 1.1 01_cpu/a.cpp is no longer over 60 lines", found[0])
        with contextlib.redirect_stdout(io.StringIO()):
            rc = hole_lengths.main(["--prune", "--solutions", str(tree.solutions), "--allowlist", str(tree.allowlist)])
        self.assertEqual(rc, 0)
        self.assertEqual(tree.problems(), [])
        self.assertIn("# debts", tree.allowlist.read_text())

    def test_the_repository_keeps_to_its_list(self):
        self.assertEqual(hole_lengths.problems(hole_lengths.gen_exercises.SOLUTIONS, hole_lengths.ALLOWLIST), [])


if __name__ == "__main__":
    unittest.main()
