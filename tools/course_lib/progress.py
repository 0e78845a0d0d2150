"""The state of every task, stage by stage, as check, next, watch and progress all see it.

A task is, in the words every command uses:
  pass          its tests pass
  fail          its tests fail (or its stage's test program does not compile)
  not started   its hole still throws "not implemented" (progress does not run it: it cannot pass)
  needs a GPU   its stage is a GPU stage and this machine has none (left out: not built, not run), or its
                tests skipped for want of one
  gated         its stage waits for the stage before to pass (docs/architecture.md, gates: each stage's checks must pass
                before the next stage's tests run); the same gate as CTest's fixtures
  not built     the configure step left the stage out (a library is missing; it says which)
  not checked   started, but its test program was not built here yet (watch's progress line only)

survey() walks the stages in order, building each stage's test program only when it is reached and needed,
so that `next` stops at the first stage with work to do and never compiles what it does not run.
"""
from dataclasses import dataclass, field

from . import build, common, gpu, results, tasks

PASSING = ("pass", "needs a GPU")


@dataclass
class StageView:
    stage: str
    tasks: list
    states: dict = field(default_factory=dict)      # task -> one of the words above
    results: dict = field(default_factory=dict)     # task -> TaskResult, for the tasks whose tests ran
    gate: str = ""                                   # the gate's line, when gated
    left_out: bool = False                           # a GPU stage on a machine without one
    not_built: str = ""                              # why the configure step left it out
    build_errors: list = field(default_factory=list)  # the compiler's first errors, when its tests do not build
    built: bool = False                              # its test program was built (or found up to date) here

    @property
    def passes(self):
        return bool(self.tasks) and all(self.states.get(t) in PASSING for t in self.tasks) and not self.left_out

    def count(self, state):
        return sum(1 for t in self.tasks if self.states.get(t) == state)

    def first_open(self):
        """The first task that is neither passing nor waiting for a GPU, or None."""
        return next((t for t in self.tasks if self.states.get(t) not in PASSING), None)


def task_list(tasks_):
    """'Task 1.1, 1.2 and 1.5' (or 'Task 1.3')."""
    if len(tasks_) == 1:
        return f"Task {tasks_[0]}"
    return "Tasks " + ", ".join(tasks_[:-1]) + f" and {tasks_[-1]}"


def gate_text(prev, blocking, of=None):
    """The gate, in the same words in check, next, watch and progress."""
    if of is not None and len(blocking) == len(of) > 1:
        return f"gated: stage {prev} must pass first (none of its {len(of)} tasks passes yet)"
    return f"gated: stage {prev} must pass first ({task_list(blocking)} not passing yet)"


def started(task):
    """False while every hole of a task still throws "not implemented" as generated: not started."""
    expected = sum(1 for src, lines, start, t in tasks.solution_blocks() if t == task and "(device)" not in lines[start])
    mark = f'course::NotImplemented("Task {task}"'
    found = sum((common.ROOT / f).read_text().count(mark) for f in
                {f for f, _ in tasks.task_places(task)} if (common.ROOT / f).exists())
    return found < expected


def test_programs(stage, to_run, stage_tasks, known):
    """(the targets to build, {task: its test program}) to run the tests of `to_run`, tasks of `stage`, whose
    tasks are `stage_tasks` (all of them: check 2.3 surveys its stage with that one task): each task's own
    program (common.task_target) where only some of the stage's tasks run and the build defines them, so
    that a saved file recompiles those tasks' tests alone; else the stage's whole test program."""
    own = {t: common.task_target(t, stage) for t in to_run}
    if len(to_run) < len(stage_tasks) and all(target in known for target in own.values()):
        return list(own.values()), {t: common.bin_path(target) for t, target in own.items()}
    return [common.tests_target(stage)], {t: results.exe_of(stage) for t in to_run}


def survey(stages, *, run_untouched=True, recall=False, force=False, gpu_stages=False, machine=None,
           targets=None, build_tests=True, own_programs=()):
    """Yields a StageView per stage of `stages` ({stage: [task]}), in order.

    run_untouched  run the tests of tasks not started (check and next do; progress does not): True, False, or
                   the set of stages where it does
    recall         reuse a task's last result when its test program has not changed since (progress): True,
                   False, or the set of stages where it does (check recalls the stages that gate it)
    build_tests    build each stage's test program before running it (only what changed); without, a stage
                   whose test program was never built reads "not checked" (watch's progress line)
    own_programs   the stages where the tasks run with their own test programs when only some of the stage's
                   tasks run (check N.M: a save recompiles those tasks' tests alone); elsewhere the stage's
                   test program runs them (progress builds one program a stage, not one a task)
    force          check a stage even when the one before does not pass (check --force)
    gpu_stages     build and run GPU stages on a machine without a GPU (their tests then skip)
    targets        the targets the build defines (build.known_targets()); read once when not given
    """
    machine = machine or gpu.machine_gpu()
    runnable, left = gpu.split_stages(list(stages), machine, gpu_stages)
    known = targets
    prev = None
    for stage, stage_tasks in stages.items():
        view = StageView(stage, list(stage_tasks))
        if stage in left:
            view.left_out = True
            view.states = {t: "needs a GPU" for t in stage_tasks}
            yield view
            prev = view
            continue
        if known is None:
            known = build.known_targets()
        if common.tests_target(stage) not in known:
            view.not_built = "not built on this machine (the configure step's feature lines say why)"
            view.states = {t: "not built" for t in stage_tasks}
            yield view
            prev = view
            continue
        begun = {t: started(t) for t in stage_tasks}
        if prev is not None and not prev.passes and not prev.left_out and not force:
            blocking = [t for t in prev.tasks if prev.states.get(t) not in PASSING]
            view.gate = gate_text(prev.stage, blocking, prev.tasks)
            view.states = {t: "gated" if begun[t] else "not started" for t in stage_tasks}
            yield view
            prev = view
            continue
        everything = run_untouched if isinstance(run_untouched, bool) else stage in run_untouched
        to_run = [t for t in stage_tasks if everything or begun[t]]
        view.states = {t: "not started" for t in stage_tasks if t not in to_run}
        if stage in own_programs:
            targets, programs = test_programs(stage, to_run, tasks.all_tasks().get(stage, stage_tasks), known)
        else:
            targets, programs = [common.tests_target(stage)], {t: results.exe_of(stage) for t in to_run}
        if not build_tests:  # run what is built: a task's own program (watch builds those), else its stage's
            own = {t: common.bin_path(common.task_target(t, stage)) for t in to_run}
            built = {t: next((p for p in (own[t], results.exe_of(stage)) if p.exists()), None) for t in to_run}
            view.states.update({t: "not checked" for t in to_run if built[t] is None})
            to_run = [t for t in to_run if built[t] is not None]
            programs = built
        if to_run:
            if build_tests:
                ok, out = build.build_targets(targets)
                view.built = ok
                if not ok:
                    view.build_errors = build.compiler_errors(out)
                    for t in to_run:
                        view.states[t] = "fail"
                    yield view
                    prev = view
                    continue
            for t in to_run:
                exe = programs[t]
                # A result is recalled only from the program that would run the task now, when that program
                # ran it last and has not changed since (a program built here is up to date with the files).
                recalls = recall if isinstance(recall, bool) else stage in recall
                r = (results.recalled(exe, t) if recalls else None) or results.run_task(exe, t, stage)
                view.results[t] = r
                view.states[t] = {"pass": "pass", "skip": "needs a GPU"}.get(r.state, "fail")
        yield view
        prev = view


def next_task(views):
    """(task, stage view) of the first task to work on: the first that fails or is not started, in course order,
    passing over stages left out or not built; None when there is none."""
    for v in views:
        if v.left_out or v.not_built:
            continue
        t = v.first_open()
        if t:
            return t, v
    return None


# ---- the progress view --------------------------------------------------------
COLUMNS = ("pass", "fail", "not started", "needs a GPU")


def summary_line(views):
    """progress: N of M tasks pass  [01 7/7, 02 3/7, 03 0/4, 04-09 need a GPU]"""
    total = sum(len(v.tasks) for v in views)
    done = sum(v.count("pass") for v in views)
    parts, left = [], []
    for v in views:
        if v.left_out:
            left.append(v.stage)
            continue
        if v.not_built:
            parts.append(f"{v.stage[:2]} not built")
            continue
        parts.append(f"{v.stage[:2]} {v.count('pass')}/{len(v.tasks)}" + (" gated" if v.gate else ""))
    if left:
        parts.append(f"{gpu.stage_numbers(left)} need a GPU")
    return f"progress: {done} of {total} tasks pass  [" + ", ".join(parts) + "]"


def table_lines(views):
    """One row per stage: its tasks by state, and what holds it (a failing task, the gate, the next task)."""
    found = next_task(views)
    width = max(len(v.stage) for v in views)
    head = f"{'stage':{width}}  " + "  ".join(f"{c:>{max(len(c), 4)}}" for c in COLUMNS)
    out = [head, "-" * len(head)]
    for v in views:
        cells = []
        for c in COLUMNS:
            n = v.count(c)
            cells.append(f"{(n if n else '-'):>{max(len(c), 4)}}")
        note = ""
        if v.left_out:
            note = ""  # said once, under the table
        elif v.not_built:
            note = v.not_built
        elif v.gate:
            waiting = v.count("gated")
            note = v.gate + (f"; {waiting} started, checked once it passes" if waiting else "")
        elif v.build_errors:
            note = "its tests do not compile: tools/course check " + str(int(v.stage[:2]))
        elif v.passes:
            note = "passes"
        else:
            failing = [t for t in v.tasks if v.states.get(t) == "fail"]
            if failing:
                note = f"{task_list(failing)} fail{'s' if len(failing) == 1 else ''}"
        if found and found[1] is v:
            note = (note + "; " if note else "") + f"next: Task {found[0]}"
        out.append(f"{v.stage:{width}}  " + "  ".join(cells) + (f"   {note}" if note else ""))
    return out
