"""The tasks of the course, read from the markers in solutions/: their stages, goals and hints, where each
hole sits in exercises/ (open or filled in), and the lesson section that explains it."""
import functools
import re
from pathlib import Path

from . import common
import gen_exercises  # noqa: E402  (tools/ is on sys.path: tools/course puts it there)
import prove_exercises  # noqa: E402


def all_tasks():
    """{stage dir: [task, ...]} in course order."""
    return prove_exercises.tasks_by_stage()


def stage_of(task, stages):
    return next((s for s, ts in stages.items() if task in ts), None)


def task_order(stages):
    return [t for ts in stages.values() for t in ts]


def task_goals():
    """{task: [(solution file, goal, hints)]}, one entry per marked block."""
    goals = {}
    for src in gen_exercises.solution_files():
        if src.suffix not in gen_exercises.SOURCE_SUFFIXES:
            continue
        for _, _, m, hints in gen_exercises.parse_blocks(src, src.read_text().split("\n")):
            goals.setdefault(m["task"], []).append((src, m["goal"], hints))
    return goals


def goal_of(task, goals, result=None):
    """A task's goal: its first part's; for a task of several parts (a forward and a backward hole, say) whose
    tests fail (`result`, a TaskResult), the goal of the part its failure clearly points at (failing_part), or,
    where it points at none clearly, the first part's with a word that the failing test says which."""
    parts = goals.get(task) or [(None, "", [])]
    index = failing_part(parts, result)
    if index is None:
        return f"{parts[0][1]}  [part 1 of {len(parts)}: the failing test below says which part]"
    return parts[index][1]


def parts_note(task, goals):
    """'' for a task of one part; else how many more parts it has, for a line that shows its first goal."""
    n = len(goals.get(task, ())) - 1
    return f"  (and {n} more part{'s' if n > 1 else ''})" if n > 0 else ""


_BACKWARD = ("backward", "gradient", "grad", "dx", "dw", "db", "dy")


# Words that say nothing about which part failed: a message's frame ("the relative error ... at [0, 3]") and
# the glue of a goal ("and its gradient").
_FILLER = {"and", "the", "of", "its", "in", "to", "an", "for", "with", "is", "are", "at", "by", "or", "on", "as",
           "it", "be", "then", "from", "each", "every", "one", "all", "error", "relative", "wrong", "entries",
           "entry", "shape", "expected", "actual", "passes", "within", "than", "more", "task", "test"}


def _words(text):
    """Lower-case words of a test's name and message or of a goal, less the filler; CamelCase split
    ("GradientCheck" -> gradient, check), so that a test's name meets the goal's words."""
    text = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)
    return {w for w in re.findall(r"[a-z][a-z0-9]+", text.lower()) if len(w) >= 2 and w not in _FILLER}


def failing_part(parts, result):
    """The index in `parts` ([(file, goal, hints)] of a task) of the part a failing TaskResult points at: the part
    whose goal shares the most words with the failing test's name (three times as telling as its message's),
    a backward part counting more for a failure about gradients (a gradient check, a dx), by a clear margin
    over every other part; None when no part is that clearly pointed at; 0 (the first part) for a task of one
    part or a result that is no failure."""
    if len(parts) < 2 or result is None or result.state != "fail" or not (result.test or result.excerpt):
        return 0
    name = _words(result.test.split(".", 1)[-1])   # the test's own name, not its suite's (TaskN_M_...)
    said = _words(" ".join(result.excerpt))
    about_gradients = bool((name | said) & set(_BACKWARD))
    scores = []
    for _, goal, _ in parts:
        words = _words(goal)
        backward = bool(words & {"backward", "gradient", "gradients"})
        scores.append(3 * len(name & words) + len(said & words) + (2 if backward == about_gradients else 0))
    ranked = sorted(scores, reverse=True)
    return scores.index(ranked[0]) if ranked[0] >= ranked[1] + 2 else None


@functools.lru_cache(maxsize=None)
def solution_blocks():
    """[(solution file, lines, line of BEGIN, task)] of every marked block, in file order."""
    blocks = []
    for src in gen_exercises.solution_files():
        if src.suffix not in gen_exercises.SOURCE_SUFFIXES:
            continue
        lines = src.read_text().split("\n")
        for start, _, m, _ in gen_exercises.parse_blocks(src, lines):
            blocks.append((src, lines, start, m["task"]))
    return blocks


def exercise_file(solution_file):
    return gen_exercises.EXERCISES / Path(solution_file).relative_to(gen_exercises.SOLUTIONS)


def task_files(task):
    """The exercise files that hold a task's holes."""
    return list(dict.fromkeys(exercise_file(src) for src, _, _, t in solution_blocks() if t == task))


def task_places(task):
    """[(exercise file relative to the root, line)] of every hole of a task: its TODO line while the hole is
    open; once filled in, the line after the code that precedes the block in the solution."""
    places = []
    for src, lines, start, t in solution_blocks():
        if t != task:
            continue
        ex = exercise_file(src)
        ex_lines = ex.read_text().split("\n") if ex.exists() else []
        todos = [i for i, l in enumerate(ex_lines) if f"TODO(Task {task})" in l]
        nth = sum(1 for f, _ in places if f == ex.relative_to(common.ROOT))  # a task may have several holes in a file
        line = todos[nth] + 1 if nth < len(todos) else after_context(lines[:start], ex_lines) or start + 1
        places.append((ex.relative_to(common.ROOT), line))
    return places


def after_context(before, ex_lines, most=12):
    """The line (1-based) after the only place in ex_lines where the last lines of `before` appear together, or
    None: one line such as `g.check();` may recur in a file, a few consecutive ones do not."""
    for k in range(1, min(most, len(before)) + 1):
        tail = before[-k:]
        if not any(l.strip() for l in tail):
            continue
        hits = [i for i in range(len(ex_lines) - k + 1) if ex_lines[i:i + k] == tail]
        if len(hits) == 1:
            return hits[0] + k + 1
        if not hits:
            return None
    return None


def untouched(task):
    """True while a task's hole still throws "not implemented" in exercises/: certainly not started."""
    mark = f'course::NotImplemented("Task {task}"'
    return any(mark in (common.ROOT / f).read_text() for f, _ in task_places(task) if (common.ROOT / f).exists())


def lesson_section(stage, task):
    """(lesson file, line, heading, anchor) of a task's section: the heading that carries {#task-N-M}."""
    page = common.ROOT / gen_exercises.lesson_page(stage)
    anchor = "task-" + task.replace(".", "-")
    if page.exists():
        for i, line in enumerate(page.read_text().split("\n")):
            if line.startswith("#") and "{#" + anchor + "}" in line:
                heading = line.lstrip("#").split("{#")[0].strip()
                return page.relative_to(common.ROOT), i + 1, heading, anchor
    return Path(gen_exercises.lesson_page(stage)), None, f"Task {task}", anchor


def site_page(stage):
    """The lesson in the Doxygen site, when it has been built (tools/course docs)."""
    n = int(stage[:2])
    for preset in ("default", "ci"):
        page = common.build_dir(preset) / "docs" / "html" / f"lesson-{n:02d}.html"
        if page.exists():
            return page
    return None


def print_task_card(task, stage, goals, status_lines=(), indent="  ", result=None):
    """Where to work on a task: its file and line, its lesson section, its hint, and what its tests say now
    (`result`: its last TaskResult, whose failure picks the part of a task of several parts to name)."""
    goal_list = goals.get(task, [(None, "", [])])
    print(f"{indent}Task {task}: {goal_of(task, goals, result)}" + ("" if result and result.state == "fail"
                                                                      else parts_note(task, goals)))
    for f, line in task_places(task):
        print(f"{indent}  file:    {f}:{line}")
    lesson, line, heading, anchor = lesson_section(stage, task)
    where = f"{lesson}:{line}" if line else str(lesson)
    print(f"{indent}  lesson:  {where}  \"{heading}\"")
    site = site_page(stage)
    if site:
        print(f"{indent}           {site.relative_to(common.ROOT)}#{anchor}  (the page with its formulas)")
    for _, _, hints in goal_list:
        for h in hints:
            print(f"{indent}  hint:    {h}")
    for i, line in enumerate(status_lines):
        print(f"{indent}  {'now:    ' if i == 0 else '        '} {line}")
