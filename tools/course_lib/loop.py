"""The learner's commands: check, next, progress and watch. Each builds and runs only what this machine can
run (the GPU stages are left out where there is no usable GPU, said once, in one line), says a task's state
in the same words (progress.py), and for any failure prints the failing test, the first lines of its message
and the command that shows its full output (results.py)."""
import re
import shutil
import subprocess
import sys
import time

from . import build, common, gpu, progress, results, tasks, trainers
import gen_exercises  # noqa: E402

RULE = "-" * 78


def select(stages, what):
    """({stage: [task]} that `what` names: a task (1.3), a stage (2) or everything (None)), or an error line."""
    if what and re.fullmatch(r"\d+\.\d+", what):
        stage = tasks.stage_of(what, stages)
        if not stage:
            return None, f"no Task {what}; tasks: " + " ".join(tasks.task_order(stages))
        return {stage: [what]}, None
    if what and re.fullmatch(r"\d+", what):
        selected = {s: ts for s, ts in stages.items() if int(s[:2]) == int(what)}
        if not selected:
            return None, f"no stage {what}; stages: {' '.join(stages)}"
        return selected, None
    if what:
        return None, f"'{what}' is neither a task (1.3) nor a stage (2)"
    return dict(stages), None


def left_out_of(views):
    return [v.stage for v in views if v.left_out]


def print_left_out(views, indent=""):
    left = left_out_of(views)
    if left:
        print(indent + gpu.left_out_line(left, gpu.machine_gpu().reason))


def result_lines(r, stage):
    """The lines under a task's state: its failure (results.fail_lines) or why its tests skipped."""
    if r is None:
        return []
    if r.state == "skip":  # why, once per stage ("skipped because: ...")
        return [] if r.skipped == r.tests else \
            [f"its {r.tests - r.skipped} host-side test(s) pass; {r.skipped} need a GPU: not checked here"]
    if r.state in ("fail", "none"):
        return results.fail_lines(r)
    return []


def state_word(view, task):
    """PASS, FAIL, TODO (not started: its own hole still throws), SKIP (needs a GPU), GATED."""
    r = view.results.get(task)
    if r is not None and r.state == "fail" and r.not_started:
        return "TODO"
    return {"pass": "PASS", "fail": "FAIL", "needs a GPU": "SKIP", "not started": "TODO"}.get(
        view.states.get(task), view.states.get(task, "?").upper())


def stage_passed(view, run_trainer, indent="  "):
    """What a stage that passes leads to: the learner's trainer, built (and run beside the reference)."""
    if run_trainer:
        print(f"\n{indent}stage {view.stage} passes: your trainer against the reference")
        trainers.race(view.stage, indent=indent)
    else:
        ok, what = trainers.build_trainer(view.stage)
        if ok:
            print(f"{indent}stage {view.stage} passes: your trainer is built: {common.rel(what)} "
                  f"(tools/course check {int(view.stage[:2])} runs it beside the reference)")
        else:
            print(f"{indent}stage {view.stage} passes, but your trainer does not build:")
            for l in what:
                print(f"{indent}  {l}")


def print_next(views, goals, stages, heading="next:"):
    """The card of the first task to work on, or what is left when every runnable task passes."""
    found = progress.next_task(views)
    if found:
        task, view = found
        r = view.results.get(task)
        if r:
            lines = result_lines(r, view.stage) or [""]
            now = [f"{state_word(view, task)}  {lines[0]}"] + lines[1:]
        elif view.states.get(task) == "not started":
            now = ['TODO  not started: its hole still throws "not implemented"']
        else:
            now = [f"{state_word(view, task)}  {view.gate}" if view.gate else state_word(view, task)]
        print(heading)
        tasks.print_task_card(task, view.stage, goals, now, result=r)
        print(f"    then:    tools/course check {task}   (or tools/course watch: re-checks on every save)")
        return task
    left = left_out_of(views)
    if left:
        first = stages[left[0]][0]
        print(f"every task of the stages that run here passes; the next task, Task {first}, needs a GPU "
              f"(tools/course watch {first} --gpu-stages rebuilds it on every save, to read the compiler's errors):")
        tasks.print_task_card(first, left[0], goals)
        return None
    print("every task passes: the whole course is done. tools/course compare --track exercise measures your trainers.")
    return None


# ---- check ---------------------------------------------------------------------
def cmd_check(args):
    stages = tasks.all_tasks()
    selected, error = select(stages, args.what)
    if error:
        print(error)
        return 2
    _, left = gpu.split_stages(list(selected), gpu.machine_gpu(), args.gpu_stages)
    if len(left) == len(selected):  # nothing to build or run here
        task = args.what if args.what and "." in args.what else ""
        print((f"Task {task} needs a GPU: " if task else "") + gpu.left_out_line(left, gpu.machine_gpu().reason))
        return 0
    common.say("building and checking your exercises (preset default)")
    if not build.configure():
        return 1
    goals = tasks.task_goals()
    # The stages up to the last one selected: the earlier ones only as far as their gate needs (their started
    # tasks), the selected ones in full. With --force only the selected ones.
    last = max(int(s[:2]) for s in selected)
    scope = {s: (selected[s] if s in selected else ts) for s, ts in stages.items()
             if int(s[:2]) <= last and (s in selected or not args.force)}
    views = []
    # The stages before those selected only gate them: their results are recalled where their test programs have
    # not changed since they ran, so that checking a task runs that task's tests and little else.
    for view in progress.survey(scope, run_untouched=set(selected), recall=set(scope) - set(selected),
                                own_programs=set(selected), force=args.force, gpu_stages=args.gpu_stages):
        views.append(view)
        if view.stage in selected:
            print_stage_check(view, goals, args.force)
    shown = [v for v in views if v.stage in selected]
    print()
    print_left_out(shown)
    if all(v.left_out for v in shown):
        return 0
    checked = [t for v in shown if not v.left_out for t in v.tasks]
    need_gpu = sum(v.count("needs a GPU") for v in shown if not v.left_out)
    gated = [v.stage[:2] for v in shown if v.gate]
    # The tasks checked here, named as such: "progress:" is every command's count over the whole course.
    checked_stages = [v.stage[:2] for v in shown if not v.left_out]
    print(f"checked: {sum(v.count('pass') for v in shown)} of the {len(checked)} tasks of "
          f"stage{'s' if len(checked_stages) > 1 else ''} {', '.join(checked_stages)} pass"
          + (f"; {need_gpu} need a GPU (their tests skip here)" if need_gpu else "")
          + (f"; stage{'s' if len(gated) > 1 else ''} {', '.join(gated)} gated" if gated else ""))
    if args.what is None or re.fullmatch(r"\d+", args.what):  # whole stages: what comes after them
        for v in shown:
            if v.passes:
                stage_passed(v, run_trainer=not args.no_trainer)
        runnable = [v for v in shown if not v.left_out]
        if runnable and runnable[-1].passes and runnable[-1] is shown[-1]:
            later = [s for s in stages if int(s[:2]) > last]
            if later:
                print(f"\nstage {shown[-1].stage} passes: on to stage {later[0]}")
                rest = list(progress.survey({later[0]: stages[later[0]]}, run_untouched=False, force=True,
                                            gpu_stages=args.gpu_stages))
                print_next(rest, goals, stages)
        else:
            print()
            print_next(views, goals, stages)
    passing = all(v.left_out or v.not_built or v.passes for v in shown)
    return 0 if passing else 1


def print_stage_check(view, goals, force):
    if view.left_out:
        return  # said once, under the results
    if view.not_built:
        print(f"stage {view.stage}: {view.not_built}")
        return
    if view.gate:
        print(f"stage {view.stage}: {view.gate}  (tools/course check {int(view.stage[:2])} --force checks it anyway)")
        return
    print(f"stage {view.stage}:")
    if view.build_errors:
        print("  its tests do not compile; the compiler's first errors:")
        for l in view.build_errors:
            print("    " + l)
        return
    lesson = gen_exercises.lesson_page(view.stage)
    for task in view.tasks:
        goal = tasks.goal_of(task, goals, view.results.get(task))
        word = state_word(view, task)
        print(f"  Task {task:5} {word:4}  {goal}")
        r = view.results.get(task)
        if word == "TODO" and len(view.tasks) > 1:  # one line: its own test says no more than that
            places = tasks.task_places(task)
            where = ", ".join(f"{f}:{line}" for f, line in places)
            holes_ = "its holes in" if len(places) > 1 else "its hole in"
            print(f"               not started: {holes_} {where} still throw{'' if len(places) > 1 else 's'}; "
                  f"hint: tools/course hint {task}")
            continue
        for l in result_lines(r, view.stage):
            print(f"               {l}")
        if r and r.state in ("fail", "none"):
            _, line, _, _ = tasks.lesson_section(view.stage, task)
            print(f"               read {lesson}{':' + str(line) if line else ''} (Task {task}); "
                  f"hint: tools/course hint {task}")
    skipped = [r for r in view.results.values() if r.state == "skip"]
    if skipped:  # once per stage: why its tests skip
        print(f"  skipped because: {skipped[0].skip_reason}")


# ---- next ----------------------------------------------------------------------
def cmd_next(args):
    stages = tasks.all_tasks()
    if not build.configure():
        return 1
    goals = tasks.task_goals()
    views = []
    for view in progress.survey(stages, run_untouched=True, gpu_stages=args.gpu_stages):
        views.append(view)
        if view.passes:
            stage_passed(view, run_trainer=False, indent="")
        if view.build_errors:
            print(f"stage {view.stage}: its tests do not compile; the compiler's first errors:")
            for l in view.build_errors:
                print("    " + l)
    print()
    print_next(views, goals, stages)
    print()
    print(progress.summary_line(views))
    print_left_out(views)
    return 0


# ---- progress ------------------------------------------------------------------
def cmd_progress(args):
    stages = tasks.all_tasks()
    t = time.time()
    if not build.configured() and not build.configure():
        return 1
    views = list(progress.survey(stages, run_untouched=False, recall=True, gpu_stages=args.gpu_stages))
    for l in progress.table_lines(views):
        print(l)
    print()
    print(progress.summary_line(views) + f"  ({time.time() - t:.1f} s)")
    print_left_out(views)
    print()
    print_next(views, tasks.task_goals(), stages)
    return 0


# ---- watch ---------------------------------------------------------------------
def exercise_snapshot():
    """{path: (mtime, size)} of every source file of exercises/: what watch compares to see a save."""
    snap = {}
    for p in gen_exercises.EXERCISES.rglob("*"):
        if p.suffix in gen_exercises.SOURCE_SUFFIXES or p.name == "CMakeLists.txt":
            try:
                st = p.stat()
            except FileNotFoundError:
                continue
            snap[str(p)] = (st.st_mtime_ns, st.st_size)
    return snap


def changed_files(before, after):
    return sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))


def wait_for_save(snapshot):
    """Returns once a source file of exercises/ differs from `snapshot` (saved, created, removed), including a
    save made while the last check ran. inotifywait when installed, else a poll every half second."""
    inotify = shutil.which("inotifywait")
    while exercise_snapshot() == snapshot:
        if inotify:
            subprocess.run([inotify, "-q", "-q", "-r", "-t", "30", "-e", "close_write", "-e", "moved_to", "-e", "create",
                            "-e", "delete", str(gen_exercises.EXERCISES)], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        else:
            time.sleep(0.5)
    time.sleep(0.2)  # an editor writes a file in several steps; let it finish


def watch_header(task, stage, goals):
    stamp = time.strftime("%H:%M:%S")
    if sys.stdout.isatty():
        print("\033[2J\033[H", end="")
    print(RULE)
    print(f"{stamp}  Task {task}  {tasks.goal_of(task, goals)}{tasks.parts_note(task, goals)}")
    places = ", ".join(f"{f}:{line}" for f, line in tasks.task_places(task))
    lesson, line, _, anchor = tasks.lesson_section(stage, task)
    print(f"          {places}  |  {lesson}:{line or 1} (#{anchor})  |  tools/course hint {task}")


def watch_once(task, stage, goals, note="", started=None):
    """One round: build, run the task's tests, print what the learner needs. Returns its TaskResult, or None
    when the build failed. `started`: when the save was seen (the round's seconds count from there)."""
    watch_header(task, stage, goals)
    if note:
        print(note)
    t = started or time.time()
    targets, programs = progress.test_programs(stage, [task], tasks.all_tasks()[stage], build.known_targets())
    ok, out = build.build_targets(targets)
    if not ok:
        print(f"  BUILD FAILED ({time.time() - t:.0f} s); the compiler's first errors:")
        for l in build.compiler_errors(out):
            print("    " + l)
        return None
    r = results.run_task(programs[task], task, stage)
    print_round(r, time.time() - t, goals)
    return r


def print_round(r, took, goals=None):
    if r.state == "pass":
        print(f"  PASS  all {r.tests} tests ({took:.0f} s)")
    elif r.state == "skip":
        print(f"  SKIP  builds; its tests need a GPU ({took:.0f} s): {r.skip_reason}")
    else:
        lines = results.fail_lines(r, with_command=False)
        print(f"  FAIL  {lines[0]}")
        for l in lines[1:]:
            print(f"        {l}")
        print(f"        {r.failed} of {r.tests} tests fail ({took:.0f} s); the full output: {r.command}")
        if goals and tasks.parts_note(r.task, goals) and not r.not_started:
            print(f"        the part it points at: {tasks.goal_of(r.task, goals, r)}")


def regressions(task, stages, changed, passed):
    """The tasks before `task` that passed in this watch and live in a file that just changed, each run again:
    [(task, TaskResult)] of those that no longer pass."""
    order = tasks.task_order(stages)
    earlier = [t for t in order[:order.index(task)] if t in passed and
               any(str(f) in changed for f in tasks.task_files(t))]
    by_stage = {}
    for t in earlier:
        by_stage.setdefault(tasks.stage_of(t, stages), []).append(t)
    broken = []
    for stage, ts in by_stage.items():
        targets, programs = progress.test_programs(stage, ts, stages[stage], build.known_targets())
        ok, _ = build.build_targets(targets)
        if not ok:
            continue  # the current task's round shows the compiler's errors
        for t in ts:
            r = results.run_task(programs[t], t, stage)
            if r.state not in ("pass", "skip"):
                broken.append((t, r))
    return broken


def watch_progress(stages, gpu_stages):
    views = list(progress.survey(stages, run_untouched=False, recall=True, gpu_stages=gpu_stages,
                                 build_tests=False))
    return progress.summary_line(views)


def cmd_watch(args):
    stages = tasks.all_tasks()
    if args.task and not tasks.stage_of(args.task, stages):
        print(f"no Task {args.task}; tasks: " + " ".join(tasks.task_order(stages)))
        return 2
    if not build.configure():
        return 1
    goals = tasks.task_goals()
    runnable, left = gpu.split_stages(list(stages), gpu.machine_gpu(), args.gpu_stages)
    how = "inotifywait" if shutil.which("inotifywait") else \
        "polling every 0.5 s (apt-get install inotify-tools to wait on inotify)"
    if args.task:
        task, stage = args.task, tasks.stage_of(args.task, stages)
        if stage in left:
            print(f"Task {task} is in a GPU stage: {gpu.left_out_line(left, gpu.machine_gpu().reason)}")
            return 1
        views = list(progress.survey(stages, run_untouched=False, recall=True, gpu_stages=args.gpu_stages,
                                     build_tests=False))
    else:
        views = list(progress.survey(stages, run_untouched=True, gpu_stages=args.gpu_stages))
        found = progress.next_task(views)
        if not found:
            print_next(views, goals, stages)
            return 0
        task, stage = found[0], found[1].stage
    passed = {t for v in views for t in v.tasks if v.states.get(t) == "pass"}  # watched for regressions
    order = tasks.task_order(stages)
    note, saved, changed = "", None, []
    try:
        while True:
            snapshot = exercise_snapshot()
            r = watch_once(task, stage, goals, note, saved)  # the task at hand first: its verdict comes first
            note = ""
            # Then the tasks that passed earlier in this watch and live in a file just saved.
            broken = regressions(task, stages, changed, passed) if changed else []
            if broken:
                passed -= {b for b, _ in broken}
                back, _ = broken[0]
                files = ", ".join(common.rel(f) for f in tasks.task_files(back) if str(f) in changed)
                note = (f"  FAILS AGAIN: Task {back} passed earlier in this watch; {files} changed "
                        f"(back to it from Task {task})")
                task, stage, changed = back, tasks.stage_of(back, stages), []
                continue  # its round at once, its seconds still counted from the save
            saved, changed = None, []
            while r is not None and r.state in ("pass", "skip"):
                passed.add(task)
                later = order[order.index(task) + 1:]
                if not later or tasks.stage_of(later[0], stages) in left:
                    print("\nevery task of the stages that run here passes.")
                    if later:
                        print(gpu.left_out_line(left, gpu.machine_gpu().reason))
                    print(watch_progress(stages, args.gpu_stages))
                    return 0
                nxt = later[0]
                next_stage = tasks.stage_of(nxt, stages)
                if next_stage != stage:
                    print()
                    stage_passed(progress.StageView(stage, stages[stage]), run_trainer=False)
                task, stage = nxt, next_stage
                print(f"\n  -> on to Task {task}")
                r = watch_once(task, stage, goals)
            print(f"  {watch_progress(stages, args.gpu_stages)}")
            print(f"  watching exercises/ ({how}): save a file to check again; Ctrl-C to stop")
            wait_for_save(snapshot)
            saved = time.time()
            changed = changed_files(snapshot, exercise_snapshot())
    except KeyboardInterrupt:
        print(f"\nwatch: stopped. {watch_progress(stages, args.gpu_stages)}")
        return 0
