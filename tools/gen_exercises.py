#!/usr/bin/env python3
"""Writes exercises/ from solutions/: every marked task block becomes a hole.

In a solution file a task's core sits between two markers:

    // BEGIN Task 2.3: one-line goal of the block
    // HINT: an optional hint, copied into the exercise
    ...the solution...
    // END Task 2.3

The exercise gets, in place of the block,

    // TODO(Task 2.3): one-line goal of the block
    // HINT: an optional hint, copied into the exercise
    throw course::NotImplemented("Task 2.3", "02_conv_pool/conv.hpp", "docs/lessons/02_conv_pool.md");

Device code cannot throw, so a block marked `BEGIN Task 4.1 (device): ...`
becomes the TODO lines alone; the host function that launches it must hold a
throwing block of the same task. Everything outside the markers is copied
unchanged.

    tools/gen_exercises.py            write exercises/
    tools/gen_exercises.py --check    exit 1, listing the files, if exercises/ is out of date
    tools/gen_exercises.py --list     print every task with its file and goal
"""
import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
EXERCISES = ROOT / "exercises"
SOURCE_SUFFIXES = {".hpp", ".cpp", ".cu", ".cuh", ".h"}

BEGIN = re.compile(r"^(?P<indent>\s*)// BEGIN Task (?P<task>\d+\.\d+)(?P<device> \(device\))?: (?P<goal>.+?)\s*$")
END = re.compile(r"^\s*// END Task (?P<task>\d+\.\d+)\s*$")
HINT = re.compile(r"^\s*// HINT: (?P<hint>.+?)\s*$")


class MarkerError(Exception):
    pass


def lesson_page(stage_dir: str) -> str:
    return f"docs/lessons/{stage_dir}.md"


def stage_number(stage_dir: str) -> int:
    return int(stage_dir.split("_", 1)[0])


def parse_blocks(path: Path, lines):
    """Yields (begin_line, end_line, match, hints) for every marked block; raises MarkerError."""
    rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    open_block = None
    for i, line in enumerate(lines):
        m = BEGIN.match(line)
        e = END.match(line)
        if m:
            if open_block:
                raise MarkerError(f"{rel}:{i + 1}: BEGIN Task {m['task']} inside the block of Task "
                                  f"{open_block[1]['task']} (line {open_block[0] + 1})")
            open_block = (i, m)
        elif e:
            if not open_block:
                raise MarkerError(f"{rel}:{i + 1}: END Task {e['task']} without a BEGIN")
            if e["task"] != open_block[1]["task"]:
                raise MarkerError(f"{rel}:{i + 1}: END Task {e['task']} closes BEGIN Task "
                                  f"{open_block[1]['task']} (line {open_block[0] + 1})")
            start, bm = open_block
            hints = []
            j = start + 1
            while j < i and HINT.match(lines[j]):
                hints.append(HINT.match(lines[j])["hint"])
                j += 1
            yield start, i, bm, hints
            open_block = None
        elif "BEGIN Task" in line or "END Task" in line:
            raise MarkerError(f"{rel}:{i + 1}: malformed marker (expected '// BEGIN Task N.M: goal' "
                              f"or '// END Task N.M'): {line.strip()}")
    if open_block:
        raise MarkerError(f"{rel}:{open_block[0] + 1}: BEGIN Task {open_block[1]['task']} is never closed")


def exercise_segments(path: Path):
    """One solution file cut into what the exercise copies and what it replaces, in file order:
    ("text", lines) copied unchanged, and ("hole", task, hole lines, solution lines, device) for every marked
    block (the solution lines run from BEGIN to END, both included). tools/course reset uses the same cut to
    write one task's hole back and keep the rest of the learner's file."""
    lines = path.read_text().split("\n")
    stage_dir = path.relative_to(SOLUTIONS).parts[0]
    rel_name = path.relative_to(SOLUTIONS).as_posix()
    segments, pos = [], 0
    for start, end, m, hints in parse_blocks(path, lines):
        task = m["task"]
        if int(task.split(".")[0]) != stage_number(stage_dir):
            raise MarkerError(f"{path.relative_to(ROOT)}:{start + 1}: Task {task} is marked in stage {stage_dir}")
        indent = m["indent"]
        hole = [f"{indent}// TODO(Task {task}): {m['goal']}"] + [f"{indent}// HINT: {h}" for h in hints]
        if not m["device"]:
            hole.append(f'{indent}throw course::NotImplemented("Task {task}", "{rel_name}", "{lesson_page(stage_dir)}");')
        segments.append(("text", lines[pos:start]))
        segments.append(("hole", task, hole, lines[start:end + 1], bool(m["device"])))
        pos = end + 1
    segments.append(("text", lines[pos:]))
    return segments


def exercise_text(path: Path) -> str:
    """The exercise version of one solution file."""
    out = []
    throwing = set()
    device_only = set()
    for seg in exercise_segments(path):
        if seg[0] == "text":
            out.extend(seg[1])
            continue
        _, task, hole, _, device = seg
        out.extend(hole)
        (device_only if device else throwing).add(task)
    return "\n".join(out), throwing, device_only


def solution_files():
    return sorted(p for p in SOLUTIONS.rglob("*") if p.is_file())


def generate():
    """{exercise path: text or bytes} for every solution file; checks the markers."""
    result, throwing, device_only = {}, set(), set()
    for src in solution_files():
        dst = EXERCISES / src.relative_to(SOLUTIONS)
        if src.suffix in SOURCE_SUFFIXES:
            text, t, d = exercise_text(src)
            throwing |= t
            device_only |= d
            result[dst] = text
        else:
            result[dst] = src.read_bytes()
    missing = device_only - throwing
    if missing:
        raise MarkerError("tasks with only (device) blocks cannot fail on the CPU side: " + ", ".join(sorted(missing)) +
                          " (give each a host block that throws)")
    return result


def list_tasks():
    for src in solution_files():
        if src.suffix not in SOURCE_SUFFIXES:
            continue
        lines = src.read_text().split("\n")
        for start, _, m, _ in parse_blocks(src, lines):
            print(f"Task {m['task']:5} {src.relative_to(ROOT)}:{start + 1}  {m['goal']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="exit 1 if exercises/ differs from what would be written")
    ap.add_argument("--list", action="store_true", help="list every task block")
    args = ap.parse_args()
    try:
        if args.list:
            list_tasks()
            return 0
        wanted = generate()
    except MarkerError as e:
        print(f"gen_exercises: {e}", file=sys.stderr)
        return 2
    existing = {p for p in EXERCISES.rglob("*") if p.is_file()} if EXERCISES.exists() else set()
    stale = sorted(existing - set(wanted))
    changed = []
    for dst, content in sorted(wanted.items()):
        data = content.encode() if isinstance(content, str) else content
        if not dst.exists() or dst.read_bytes() != data:
            changed.append(dst)
            if not args.check:
                dst.parent.mkdir(parents=True, exist_ok=True)
                dst.write_bytes(data)
    if args.check:
        if changed or stale:
            print("exercises/ is out of date with solutions/:", file=sys.stderr)
            for p in changed:
                print(f"  differs: {p.relative_to(ROOT)}", file=sys.stderr)
            for p in stale:
                print(f"  no solution file: {p.relative_to(ROOT)}", file=sys.stderr)
            print("run: tools/gen_exercises.py", file=sys.stderr)
            return 1
        print(f"exercises/ is up to date ({len(wanted)} files)")
        return 0
    for p in stale:
        p.unlink()
    print(f"wrote {len(changed)} of {len(wanted)} files in exercises/" + (f", removed {len(stale)}" if stale else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
