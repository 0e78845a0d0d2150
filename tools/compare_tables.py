#!/usr/bin/env python3
"""Writes the measured comparison tables into the README and every lesson.

    python3 tools/compare_tables.py            rewrite the marked blocks from docs/figures/compare_*.json
    python3 tools/compare_tables.py --check    exit 1 when a block differs from its JSON (what CI runs)

Each block sits between <!-- compare:NAME --> and <!-- /compare:NAME --> and holds the table that
`tools/compare.py --replot docs/figures/compare_NAME.json` prints: the figures, the machine, the
date and the exact command of that run, never retyped by hand, and under it the run's chart,
docs/figures/compare_NAME.svg, so every page that shows a comparison shows its chart too. A new
lesson gets both by holding the two marker pairs (see docs/lessons/01_fc_softmax.md). Every
docs/figures/compare_*.json is a run (h100, vm, ...); a run of `compare.py --peer pytorch` brings
its PyTorch rows and its "vs PyTorch best" column along, as the replot prints them.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNS = {p.stem[len("compare_"):]: p for p in sorted((ROOT / "docs/figures").glob("compare_*.json"))}
FILES = [ROOT / "README.md"] + sorted((ROOT / "docs/lessons").glob("0*.md"))
CAPTIONS = {"h100": "Every stage's speedup on the GPU machine (H100)",
            "h200x2": "Every stage's speedup on a machine of two H200s, the default command (one epoch a row, setup "
                      "apart; stage 09's last row on both GPUs)",
            "vm": "Every stage's speedup on the 2-core machine without a GPU (the GPU stages skipped)"}


def table_text(json_path):
    with tempfile.TemporaryDirectory() as out:
        text = subprocess.run([sys.executable, str(ROOT / "tools/compare.py"), "--replot", str(json_path), "--out", out],
                              check=True, capture_output=True, text=True).stdout
    lines = [l.rstrip() for l in text.splitlines() if not l.startswith("wrote ")]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def chart_line(name, json_path, page):
    """The Markdown image of a run's chart as `page` links it, or "" where the run has no chart: the path
    from the page's folder, which a Markdown preview follows (../figures/NAME.svg from a lesson,
    docs/figures/NAME.svg from the README); the docs build hands Doxygen the bare name
    (tools/doxygen_md_filter.py)."""
    svg = json_path.with_suffix(".svg")
    if not svg.exists():
        return ""
    target = Path(os.path.relpath(svg, page.parent)).as_posix()
    return f"\n![{CAPTIONS.get(name, f'Every stage on the same work ({name})')}]({target})\n\n"


def block_text(name, table, json_path, page):
    return "```\n" + table + "\n```\n" + chart_line(name, json_path, page)


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
            block = block_text(name, table, RUNS[name], f)
            new = pattern.sub(lambda m: m.group(1) + block + m.group(2), new)
        if new != text:
            stale.append(f.relative_to(ROOT))
            if not a.check:
                f.write_text(new)
    verb = "differ from their JSON" if a.check else "rewritten"
    print(f"compare tables: {len(stale)} file(s) {verb}" + (": " + ", ".join(map(str, stale)) if stale else ""))
    return 1 if a.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
