#!/usr/bin/env python3
"""One line per epoch of each trainer JSON (--json) that tools/gpu/stage.sh NN kept as train_NAME.json: the
run's name, seconds, images/s, loss, test accuracy, the stage's workspace where it reports one (stage 05's
split-K), the device and the data set.

    python3 tools/gpu/epoch_lines.py WORK/train_*.json
"""
import json
import sys
from pathlib import Path


def lines(path):
    r = json.loads(Path(path).read_text())
    name = Path(path).stem[len("train_"):] if Path(path).stem.startswith("train_") else Path(path).stem
    w = r.get("stage_results") or {}
    ws = (f"  workspace {w.get('workspace_bytes', 0) / 1e6:.2f} MB, split-K {w.get('split_k_chunks', '?')}"
          if "workspace_bytes" in w else "")
    for e in r.get("epochs", []):
        loss = e.get("loss")
        yield (f"{name:24s} epoch {e['epoch']}: {e.get('seconds', 0):.3f} s  {e.get('images_per_second', 0):9.0f} "
               f"img/s  loss {loss if loss is not None else float('nan'):.4f}  "
               f"test {100 * e.get('test_accuracy', 0):.2f}%{ws}  "
               f"({r.get('device', '?')}, {r.get('data', {}).get('dataset', '?')})")


def main(paths):
    for path in paths:
        if not Path(path).is_file():
            continue  # an unmatched glob: no run wrote its JSON
        try:
            for line in lines(path):
                print(line)
        except (ValueError, KeyError) as e:
            print(f"{path}: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
