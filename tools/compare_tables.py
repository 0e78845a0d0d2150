#!/usr/bin/env python3
"""Writes the measured comparison tables into the README and every lesson.

    python3 tools/compare_tables.py            rewrite the marked blocks from docs/figures/compare_*.json
    python3 tools/compare_tables.py --check    exit 1 when a block differs from its JSON (what CI runs)

Each block sits between <!-- compare:NAME --> and <!-- /compare:NAME --> and holds the table that
`tools/compare.py --replot docs/figures/compare_NAME.json` prints: the figures, the machine, the
date and the exact command of that run, never retyped by hand. Every docs/figures/compare_*.json
is a run (h100, vm, ...); a run of `compare.py --peer pytorch` brings its PyTorch rows and its
"vs PyTorch best" column along, as the replot prints them.
"""
import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNS = {p.stem[len("compare_"):]: p for p in sorted((ROOT / "docs/figures").glob("compare_*.json"))}
FILES = [ROOT / "README.md"] + sorted((ROOT / "docs/lessons").glob("0*.md"))


def table_text(json_path):
    with tempfile.TemporaryDirectory() as out:
        text = subprocess.run([sys.executable, str(ROOT / "tools/compare.py"), "--replot", str(json_path), "--out", out],
                              check=True, capture_output=True, text=True).stdout
    lines = [l.rstrip() for l in text.splitlines() if not l.startswith("wrote ")]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args(argv)
    tables = {name: table_text(path) for name, path in RUNS.items() if path.exists()}
    stale = []
    for f in FILES:
        text = f.read_text()
        new = text
        for name, table in tables.items():
            pattern = re.compile(rf"(<!-- compare:{name} -->\n).*?(<!-- /compare:{name} -->)", re.S)
            new = pattern.sub(lambda m: m.group(1) + "```\n" + table + "\n```\n" + m.group(2), new)
        if new != text:
            stale.append(f.relative_to(ROOT))
            if not a.check:
                f.write_text(new)
    verb = "differ from their JSON" if a.check else "rewritten"
    print(f"compare tables: {len(stale)} file(s) {verb}" + (": " + ", ".join(map(str, stale)) if stale else ""))
    return 1 if a.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
