#!/usr/bin/env python3
"""Writes the course's small tabular classification set: DIR/train.csv and DIR/test.csv.

    tools/make_tabular.py --out data/tabular [--seed 1] [--train 3000] [--test 1000]
    build/cpu/bin/s01_train_solution --dataset csv --data-dir data/tabular \\
        --layers 12,16,8,3 --activation leaky --leaky-slope 0.1 --output sigmoid --loss mse

The university CUDA practice the course grew from trained its network on a tabular data set
(rows of a few measured quantities and a class); this is such a set, made here, offline, from
a seeded generator, so every learner gets the same bytes with nothing to download.

How it is made (the recipe of scikit-learn's make_classification, in plain Python):

  * 3 classes, drawn with probabilities 0.5, 0.3 and 0.2: the classes are unbalanced on
    purpose, so that accuracy, per-class recall and precision, and their macro averages
    tell different stories (lesson 01).
  * 6 informative features: each class is two Gaussian clusters (so no straight line
    separates the classes: a hidden layer earns its place), centred on distinct vertices of
    a cube of side 2 x 1.5 in 6 dimensions, each cluster stretched and rotated by its own
    random 6 x 6 matrix (entries uniform in [-1, 1]) applied to standard normal draws.
  * 2 redundant features: fixed random linear combinations of the 6 informative ones.
  * 1 count feature: a whole number around 3 + 1.5 x (the second informative feature),
    never below 0 (a weak, noisy copy of it, written as an integer).
  * 3 noise features: standard normal draws, unrelated to the class.
  * 3% of the labels are then replaced by a class drawn at random (measurement noise):
    no model reaches 100%. On the default set an MLP reaches 90 to 93% of the test set
    (12,64,32,3 with cross-entropy: 92.5%; the practice's 12,16,8,3 with sigmoid outputs
    and MSE: about 90%), a linear model (12,3) about 77%.
  * Every feature column then gets its own unit: value * scale + offset, with a scale in
    [0.5, 20] and an offset in [-50, 150], as measured quantities have. The course's CSV
    loader scales every column to [0, 1] with the training set's minimum and maximum.

Rows: `--train` (3000) training rows, then `--test` (1000) test rows, drawn one after the
other from Python's random.Random(seed) (its random() method gives the same sequence for
the same seed on every Python 3; the normal draws are Box-Muller on it, written here).
Each file starts with a header line of column names, then one row per line: 12 features
with 4 decimals (the count as a whole number) and the class label (0, 1 or 2) last, the
layout common/data/data.hpp's load_csv reads (`--dataset csv --data-dir DIR`).
"""
import argparse
import math
import random
import sys
from pathlib import Path

CLASSES = 3
CLASS_WEIGHTS = (0.5, 0.3, 0.2)
INFORMATIVE = 6
REDUNDANT = 2
NOISE = 3
CLUSTERS_PER_CLASS = 2
CLASS_SEP = 1.5    # half the side of the cube whose vertices the clusters sit on
LABEL_NOISE = 0.03
HEADER = ([f"informative_{i + 1}" for i in range(INFORMATIVE)] + [f"redundant_{i + 1}" for i in range(REDUNDANT)] +
          ["count"] + [f"noise_{i + 1}" for i in range(NOISE)] + ["label"])
FEATURES = len(HEADER) - 1


class Draws:
    """Uniform and normal draws from random.Random(seed).random() alone (stable across Python 3 versions)."""

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.spare = None

    def uniform(self, lo, hi):
        return lo + (hi - lo) * self.rng.random()

    def normal(self):
        if self.spare is not None:
            z, self.spare = self.spare, None
            return z
        u1 = 1.0 - self.rng.random()  # in (0, 1]: log(u1) is finite
        u2 = self.rng.random()
        r = math.sqrt(-2.0 * math.log(u1))
        self.spare = r * math.sin(2.0 * math.pi * u2)
        return r * math.cos(2.0 * math.pi * u2)

    def choice_weighted(self, weights):
        u = self.rng.random() * sum(weights)
        for i, w in enumerate(weights):
            if u < w:
                return i
            u -= w
        return len(weights) - 1


class Recipe:
    """Everything fixed before the first row: cluster centres and shapes, mixing weights, units."""

    def __init__(self, d):
        vertices = list(range(2 ** INFORMATIVE))
        # Distinct vertices for the clusters: a partial Fisher-Yates shuffle.
        for i in range(CLASSES * CLUSTERS_PER_CLASS):
            j = i + int(d.rng.random() * (len(vertices) - i))
            vertices[i], vertices[j] = vertices[j], vertices[i]
        self.centres = [[[CLASS_SEP if (vertices[c * CLUSTERS_PER_CLASS + k] >> b) & 1 else -CLASS_SEP
                          for b in range(INFORMATIVE)] for k in range(CLUSTERS_PER_CLASS)] for c in range(CLASSES)]
        self.shapes = [[[[d.uniform(-1.0, 1.0) for _ in range(INFORMATIVE)] for _ in range(INFORMATIVE)]
                        for _ in range(CLUSTERS_PER_CLASS)] for _ in range(CLASSES)]
        self.redundant = [[d.uniform(-1.0, 1.0) for _ in range(INFORMATIVE)] for _ in range(REDUNDANT)]
        self.scale = [d.uniform(0.5, 20.0) for _ in range(FEATURES)]
        self.offset = [d.uniform(-50.0, 150.0) for _ in range(FEATURES)]
        self.count_column = INFORMATIVE + REDUNDANT

    def row(self, d):
        c = d.choice_weighted(CLASS_WEIGHTS)
        k = int(d.rng.random() * CLUSTERS_PER_CLASS)
        z = [d.normal() for _ in range(INFORMATIVE)]
        a = self.shapes[c][k]
        inf = [self.centres[c][k][i] + sum(z[j] * a[j][i] for j in range(INFORMATIVE)) for i in range(INFORMATIVE)]
        red = [sum(w * v for w, v in zip(weights, inf)) for weights in self.redundant]
        count = max(0, round(3.0 + 1.5 * inf[1] + d.normal()))
        noise = [d.normal() for _ in range(NOISE)]
        if d.rng.random() < LABEL_NOISE:
            c = int(d.rng.random() * CLASSES)
        values = inf + red + [count] + noise
        cells = []
        for j, v in enumerate(values):
            if j == self.count_column:
                cells.append(str(int(v)))  # a count keeps its unit: it is a whole number
            else:
                cells.append(f"{v * self.scale[j] + self.offset[j]:.4f}")
        return cells + [str(c)]


def make_rows(seed, train_rows, test_rows):
    """(train rows, test rows), each a list of lists of cells (strings), label last."""
    d = Draws(seed)
    recipe = Recipe(d)
    rows = [recipe.row(d) for _ in range(train_rows + test_rows)]
    return rows[:train_rows], rows[train_rows:]


def csv_text(rows):
    return ",".join(HEADER) + "\n" + "".join(",".join(r) + "\n" for r in rows)


def write(out, seed=1, train_rows=3000, test_rows=1000):
    """Writes out/train.csv and out/test.csv; returns their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    train, test = make_rows(seed, train_rows, test_rows)
    paths = []
    for name, rows in (("train.csv", train), ("test.csv", test)):
        p = out / name
        p.write_text(csv_text(rows))
        paths.append(p)
    return paths


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder to write train.csv and test.csv into (made if missing)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the generator (default 1)")
    ap.add_argument("--train", type=int, default=3000, help="training rows (default 3000)")
    ap.add_argument("--test", type=int, default=1000, help="test rows (default 1000)")
    args = ap.parse_args(argv)
    if args.train < 1 or args.test < 1:
        ap.error("--train and --test must be at least 1")
    paths = write(args.out, args.seed, args.train, args.test)
    print(f"wrote {paths[0]} ({args.train} rows) and {paths[1]} ({args.test} rows): {FEATURES} features, "
          f"{CLASSES} classes, seed {args.seed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
