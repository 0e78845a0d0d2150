"""One task's holes in exercises/: written back as generated (reset), or filled with the reference code (for
the tests and the timed walk, which play a learner).

A file of exercises/ is the generator's cut of its solution file (tools/gen_exercises.py exercise_segments):
text copied unchanged, and holes. The learner writes inside holes only, so the text around a hole is still
in their file, line for line (trailing spaces aside), and finds the hole again: the whole text between the
hole before it and this one, found once in the file, and the whole text between this hole and the next,
found once after it. Between the two is the learner's code of that task, and only that is replaced: every
other task's code in the same file stays as written. Where the text around a hole is no longer in the file
as generated (edited, reformatted) or could sit in two places, nothing is written and the learner is told
which lines were not found.
"""
import difflib
import time
from dataclasses import dataclass
from pathlib import Path

from . import common
import gen_exercises  # noqa: E402


class HoleNotFound(Exception):
    pass


@dataclass
class Hole:
    path: Path          # the exercise file
    task: str
    start: int          # the learner's lines [start, end) are this hole's
    end: int
    hole: list          # the lines the generator writes there
    solution: list      # the reference code, BEGIN to END


def _same(a, b):
    return a.rstrip() == b.rstrip()


def _occurrences(lines, block, lo=0, hi=None):
    hi = len(lines) if hi is None else hi
    k = len(block)
    return [i for i in range(lo, hi - k + 1) if all(_same(lines[i + j], block[j]) for j in range(k))]


def _show(block):
    shown = [l.strip() for l in block if l.strip()]
    return " / ".join(shown[:3]) + (" ..." if len(shown) > 3 else "")


def _edit_near(lines, segments, i):
    """Where the learner's file differs from the generated one in the fixed text around hole i (segments[i]):
    (line number as generated, that line, what the file has there or None), or None. Differences inside holes
    are the learner's code and do not count."""
    gen, owner = [], []
    for k, seg in enumerate(segments):
        body = seg[1] if seg[0] == "text" else seg[2]
        gen += body
        owner += [k] * len(body)
    near = {i - 1, i + 1}
    matcher = difflib.SequenceMatcher(None, [l.rstrip() for l in gen], [l.rstrip() for l in lines], autojunk=False)
    for tag, a1, a2, b1, b2 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            for a in range(a1, a2):
                if owner[a] in near:
                    # Text before the hole lines up from the block's start, text after it from the block's end
                    # (the learner's code of the hole, of any length, sits between).
                    b = b1 + (a - a1) if owner[a] < i else b2 - (a2 - a)
                    return a + 1, gen[a].strip(), (lines[b].strip() if tag == "replace" and b1 <= b < b2 else None)
        elif tag == "insert" and 0 < a1 < len(gen) and owner[a1 - 1] == owner[a1] and owner[a1] in near:
            return a1 + 1, gen[a1].strip(), ("added", lines[b1].strip())
    return None


def _what_changed(lines, segments, i, side, where):
    edit = _edit_near(lines, segments, i)
    if edit is None:
        return f"the text {side} the hole {where} is not as generated"
    number, generated, now = edit
    if isinstance(now, tuple):
        return (f"the text around the hole {where} is not as generated: your file has a line added before line "
                f"{number} as generated ({generated}): {now[1]}")
    if now is None:
        return f"the text around the hole {where} is not as generated: line {number} as generated is gone: {generated}"
    return (f"the text around the hole {where} is not as generated: line {number} as generated reads: {generated}; "
            f"your file has: {now}")


def _place(lines, segments, i, lo, where):
    """(start, end): the learner's lines of one hole lie in lines[start:end], between the whole fixed text before
    it (`before`) and the whole fixed text after it (`after`), each found exactly once (from lo on) and in
    that order. Raises HoleNotFound naming the line that is not as generated."""
    before, after = segments[i - 1][1], segments[i + 1][1]
    befores = [i + len(before) for i in _occurrences(lines, before, lo)] if before else [lo]
    if not befores:
        raise HoleNotFound(_what_changed(lines, segments, i, "before", where))
    if len(befores) > 1:
        raise HoleNotFound(f"the text before the hole {where} occurs {len(befores)} times in the file "
                           f"({_show(before[-3:])})")
    start = befores[0]
    afters = _occurrences(lines, after, start)
    if not afters:
        raise HoleNotFound(_what_changed(lines, segments, i, "after", where))
    if len(afters) > 1:
        raise HoleNotFound(f"the text after the hole {where} occurs {len(afters)} times after it "
                           f"({_show(after[:3])})")
    return start, afters[0]


def find_holes(task, exercises=None):
    """Every hole of `task`: where the learner's code of it is, in each exercise file. Raises HoleNotFound."""
    exercises = exercises or gen_exercises.EXERCISES
    found = []
    for src in gen_exercises.solution_files():
        if src.suffix not in gen_exercises.SOURCE_SUFFIXES:
            continue
        segments = gen_exercises.exercise_segments(src)
        if not any(s[0] == "hole" and s[1] == task for s in segments):
            continue
        path = exercises / src.relative_to(gen_exercises.SOLUTIONS)
        if not path.exists():
            raise HoleNotFound(f"{common.rel(path)} is missing")
        lines = path.read_text().split("\n")
        nth = 0
        for i, seg in enumerate(segments):
            if seg[0] != "hole" or seg[1] != task:
                continue
            nth += 1
            where = f"of Task {task} in {common.rel(path)}" + (f" (its hole number {nth} there)" if nth > 1 else "")
            start, end = _place(lines, segments, i, 0, where)
            found.append(Hole(path, task, start, end, seg[2], seg[3]))
    if not found:
        raise HoleNotFound(f"no Task {task} in solutions/")
    return found


def is_open(h):
    lines = h.path.read_text().split("\n")[h.start:h.end]
    return len(lines) == len(h.hole) and all(_same(a, b) for a, b in zip(lines, h.hole))


def _write(holes, replacement):
    """Replaces each hole's lines by replacement(hole), the last first so that earlier positions hold."""
    by_file = {}
    for h in holes:
        by_file.setdefault(h.path, []).append(h)
    for path, hs in by_file.items():
        spans = sorted((h.start, h.end) for h in hs)
        if any(a[1] > b[0] for a, b in zip(spans, spans[1:])):
            raise HoleNotFound(f"two holes of Task {hs[0].task} in {common.rel(path)} overlap")
    for path, hs in by_file.items():
        lines = path.read_text().split("\n")
        for h in sorted(hs, key=lambda h: h.start, reverse=True):
            lines[h.start:h.end] = replacement(h)
        path.write_text("\n".join(lines))


def reset(task, exercises=None):
    """Writes the holes of `task` back as generated; returns [(hole, the learner's lines it replaced)].
    Raises HoleNotFound, having written nothing."""
    holes = find_holes(task, exercises)
    replaced = [(h, h.path.read_text().split("\n")[h.start:h.end]) for h in holes]
    _write(holes, lambda h: h.hole)
    return replaced


def solution_body(h):
    """The reference code of a hole, without its markers and hints: what a learner would type."""
    body = h.solution[1:-1]
    while body and gen_exercises.HINT.match(body[0]):
        body = body[1:]
    return body


def fill(task, edit=None, exercises=None):
    """Fills the holes of `task` with the reference code, through edit(lines) -> lines when given (a planted
    mistake). For the tests and the walk. Raises HoleNotFound."""
    holes = find_holes(task, exercises)
    _write(holes, lambda h: (edit or (lambda ls: ls))(solution_body(h)))
    return holes


def saved_copy(task, replaced):
    """Keeps the code a reset took away in build/default/course/reset/, and returns the file's path."""
    folder = common.build_dir() / "course" / "reset"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"Task{task}-{time.strftime('%Y%m%d-%H%M%S')}.txt"
    text = []
    for h, lines in replaced:
        text.append(f"--- {common.rel(h.path)}, lines {h.start + 1}-{h.end} before the reset")
        text.extend(lines)
    path.write_text("\n".join(text) + "\n")
    return path
