"""Tests of tools/make_tabular.py: the same bytes for the same seed, and files the course's
CSV loader reads (common/data/data.cpp parse_csv: an optional header line of non-numeric cells,
then rows of equal width, numeric features first, a whole non-negative class label last).

    python3 -m unittest discover -s tools/tests
"""
import math
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import make_tabular  # noqa: E402


def number(cell):
    """The loader's parse_number: a whole cell as a finite number, else None."""
    try:
        v = float(cell)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def load_like_the_course(path):
    """(features per row, labels, header) read by parse_csv's rules; raises AssertionError where it would refuse."""
    width, header, rows, labels = None, None, [], []
    for line_no, line in enumerate(Path(path).read_text().split("\n"), 1):
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(",")]
        values = [number(c) for c in cells]
        if width is None:
            width = len(cells)
            assert width >= 2, f"line {line_no}: one cell"
            if any(v is None for v in values):
                header = cells
                continue
        assert len(cells) == width, f"line {line_no}: {len(cells)} cells, expected {width}"
        assert all(v is not None for v in values), f"line {line_no}: a cell is not a number"
        label = values[-1]
        assert label >= 0 and label == math.floor(label), f"line {line_no}: label {cells[-1]} is not a class number"
        rows.append(values[:-1])
        labels.append(int(label))
    assert rows, f"{path}: no examples"
    return rows, labels, header


class MakeTabular(unittest.TestCase):
    def setUp(self):
        self.dir = Path(self.enterContext(tempfile.TemporaryDirectory()))

    def test_same_seed_same_bytes(self):
        a = make_tabular.write(self.dir / "a", seed=5, train_rows=300, test_rows=100)
        b = make_tabular.write(self.dir / "b", seed=5, train_rows=300, test_rows=100)
        for pa, pb in zip(a, b):
            self.assertEqual(pa.read_bytes(), pb.read_bytes(), pa.name)
        c = make_tabular.write(self.dir / "c", seed=6, train_rows=300, test_rows=100)
        self.assertNotEqual(a[0].read_bytes(), c[0].read_bytes(), "another seed, another set")

    def test_the_default_set_is_pinned(self):
        # The first row of the default set: a change of the recipe (or of Python's random()) shows here.
        train, _ = make_tabular.make_rows(1, 2, 1)
        self.assertEqual(train[0], ["68.6406", "0.1072", "-36.2107", "1.4324", "130.2556", "89.4823", "141.5854",
                                    "49.2610", "4", "112.7799", "115.1129", "-53.3712", "1"])

    def test_the_course_loader_reads_it(self):
        train_path, test_path = make_tabular.write(self.dir, seed=1, train_rows=600, test_rows=200)
        self.assertEqual((train_path.name, test_path.name), ("train.csv", "test.csv"))
        train, train_labels, header = load_like_the_course(train_path)
        test, test_labels, test_header = load_like_the_course(test_path)
        self.assertEqual(header, make_tabular.HEADER)
        self.assertEqual(header[-1], "label", "the label is the last column")
        self.assertEqual(test_header, header)
        self.assertEqual((len(train), len(test)), (600, 200))
        self.assertTrue(all(len(r) == 12 for r in train + test), "12 features a row")
        # Every class in both files (so the loader's "classes = largest label + 1" is 3 for both).
        self.assertEqual(set(train_labels), {0, 1, 2})
        self.assertEqual(set(test_labels), {0, 1, 2})
        # Unbalanced on purpose: class 0 the most, class 2 the fewest.
        counts = [train_labels.count(c) for c in range(3)]
        self.assertGreater(counts[0], counts[1])
        self.assertGreater(counts[1], counts[2])
        # The count column holds whole numbers, never negative; no column is constant.
        count = make_tabular.HEADER.index("count")
        self.assertTrue(all(r[count] >= 0 and r[count] == math.floor(r[count]) for r in train))
        for j in range(12):
            self.assertGreater(len({r[j] for r in train}), 1, f"column {j + 1} is constant")

    def test_command_line(self):
        out = self.dir / "tab"
        self.assertEqual(make_tabular.main(["--out", str(out), "--seed", "3", "--train", "50", "--test", "20"]), 0)
        rows, _, _ = load_like_the_course(out / "train.csv")
        self.assertEqual(len(rows), 50)
        rows, _, _ = load_like_the_course(out / "test.csv")
        self.assertEqual(len(rows), 20)
        with self.assertRaises(SystemExit):
            make_tabular.main(["--out", str(out), "--train", "0"])


if __name__ == "__main__":
    unittest.main()
