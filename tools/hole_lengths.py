#!/usr/bin/env python3
"""No exercise hole longer than 60 lines (docs/architecture.md, exercises): checked.

A hole is what a learner writes at once: the lines between a solution's `// BEGIN Task N.M` and
`// END Task N.M` markers (hint lines included). Past 60 lines it is several steps in one, with one
test for all of them; such a hole is split into tasks a learner can take one at a time.

The holes over the limit today are debts, listed in tools/hole_length_allowlist.txt as
"N.M path lines" (path under solutions/). The check fails on a hole over the limit that is not listed,
on a listed one that grew, and on a listed line that no longer matches a hole over the limit (it was
split: drop the line with --prune), so the list only shrinks.

    python3 tools/hole_lengths.py            check (tools/test.d/hole-length runs it)
    python3 tools/hole_lengths.py --all      every hole, longest first
    python3 tools/hole_lengths.py --prune    drop the list's lines that no longer match

Its tests are tools/tests/test_hole_lengths.py.
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_exercises  # noqa: E402

LIMIT = 60
ALLOWLIST = gen_exercises.ROOT / "tools" / "hole_length_allowlist.txt"


def holes(solutions):
    """[(lines, task, path under solutions/, line of BEGIN)] of every marked block, longest first."""
    found = []
    for src in sorted(solutions.rglob("*")):
        if not src.is_file() or src.suffix not in gen_exercises.SOURCE_SUFFIXES:
            continue
        lines = src.read_text().split("\n")
        for begin, end, m, _ in gen_exercises.parse_blocks(src, lines):
            found.append((end - begin - 1, m["task"], str(src.relative_to(solutions)), begin + 1))
    return sorted(found, key=lambda h: (-h[0], h[1], h[2], h[3]))


def read_allowlist(path):
    """{(task, path): lines} from "N.M path lines" lines ('#' starts a comment)."""
    allowed = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        line = line.split("#", 1)[0].strip()
        if line:
            task, rel, count = line.split()
            allowed[(task, rel)] = int(count)
    return allowed


def over_limit(found):
    """{(task, path): lines} of the holes in `found` (holes()) over the limit, the longest of a task's in a file."""
    over = {}
    for count, task, rel, _ in found:
        if count > LIMIT:
            over[(task, rel)] = max(over.get((task, rel), 0), count)
    return over


def problems(solutions, allowlist, found=None):
    """The lines to print, one a problem; empty when the holes keep to the limit and the list. `found`: the
    holes of `solutions` (holes()) when read already."""
    allowed = read_allowlist(allowlist)
    over = over_limit(holes(solutions) if found is None else found)
    out = []
    for (task, rel), count in sorted(over.items()):
        if (task, rel) not in allowed:
            out.append(f"solutions/{rel}: the hole of Task {task} is {count} lines, over {LIMIT}: split it into "
                       f"tasks a learner can take one at a time")
        elif count > allowed[(task, rel)]:
            out.append(f"solutions/{rel}: the hole of Task {task} grew to {count} lines (listed at "
                       f"{allowed[(task, rel)]} in {allowlist.name}); a debt only shrinks")
    for (task, rel), count in sorted(allowed.items()):
        if (task, rel) not in over:
            out.append(f"{allowlist.name}: Task {task} {rel} is no longer over {LIMIT} lines: drop its line "
                       f"(--prune)")
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--all", action="store_true", help="every hole, longest first")
    parser.add_argument("--prune", action="store_true", help="drop the allowlist's lines that no longer match")
    parser.add_argument("--solutions", type=Path, default=gen_exercises.SOLUTIONS, help=argparse.SUPPRESS)
    parser.add_argument("--allowlist", type=Path, default=ALLOWLIST, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    every = holes(args.solutions)
    if args.all:
        for count, task, rel, line in every:
            print(f"{count:4d}  Task {task:6s} solutions/{rel}:{line}")
        return 0
    if args.prune:
        over = over_limit(every)
        kept = [line for line in args.allowlist.read_text().splitlines()
                if not line.split("#", 1)[0].strip() or tuple(line.split()[:2]) in over]
        args.allowlist.write_text("\n".join(kept) + "\n")
    found = problems(args.solutions, args.allowlist, every)
    for line in found:
        print(line)
    if found:
        return 1
    listed = len(read_allowlist(args.allowlist))
    print(f"hole-length: {len(every)} holes, none over {LIMIT} lines but the {listed} listed as debts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
