#!/usr/bin/env python3
"""Proves that every hole in exercises/ is caught by a test.

For every task marked in solutions/, runs that task's tests on the untouched
exercises track (sNN_tests_exercise --gtest_filter=*TaskN_M_*) and requires:

  * the task has tests;
  * every one of them fails (a test that passes on a stub cannot tell the
    stub from the solution: a learner would pass it without doing the work);
  * at least one failure names the task ("Task 2.3 is not implemented yet").

Tests that skip for want of a GPU make their task "not provable on this
machine"; that is reported, never counted as proven. Exits 1 on any error.

    tools/prove_exercises.py --build-dir build/ci [--stage 01_fc_softmax]
"""
import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_exercises  # noqa: E402


def tasks_by_stage():
    """{stage dir: [task, ...]} read from the markers in solutions/."""
    stages = {}
    for src in gen_exercises.solution_files():
        if src.suffix not in gen_exercises.SOURCE_SUFFIXES:
            continue
        stage = src.relative_to(gen_exercises.SOLUTIONS).parts[0]
        lines = src.read_text().split("\n")
        for _, _, m, _ in gen_exercises.parse_blocks(src, lines):
            stages.setdefault(stage, [])
            if m["task"] not in stages[stage]:
                stages[stage].append(m["task"])
    for tasks in stages.values():
        tasks.sort(key=lambda t: tuple(int(p) for p in t.split(".")))
    return dict(sorted(stages.items()))


def run_task(exe: Path, task: str):
    """Runs one task's tests; returns a list of (name, status, message)."""
    suite_prefix = "Task" + task.replace(".", "_") + "_"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        proc = subprocess.run([str(exe), f"--gtest_filter=*{suite_prefix}*", f"--gtest_output=json:{out}",
                               "--gtest_color=no"], capture_output=True, text=True, timeout=900)
        if not out.exists():  # crashed before writing its report
            return [(f"{suite_prefix}*", "crashed", (proc.stdout + proc.stderr)[-500:])]
        report = json.loads(out.read_text())
    results = []
    for suite in report.get("testsuites", []):
        for t in suite.get("testsuite", []):
            name = f"{suite['name']}.{t['name']}"
            if t.get("result") == "SKIPPED" or t.get("status") == "NOTRUN" or "skipped" in t:
                message = t.get("skipped", [{}])[0].get("message", "") if t.get("skipped") else ""
                results.append((name, "skipped", message or skip_message(proc.stdout, name)))
            elif t.get("failures"):
                results.append((name, "failed", "\n".join(f.get("failure", "") for f in t["failures"])))
            else:
                results.append((name, "passed", ""))
    return results


def skip_message(stdout, name):
    """Why a test skipped, from GoogleTest's printed output: the lines between its "file:line: Skipped" and its
    "[  SKIPPED ]" line (the JSON report of GoogleTest 1.12 leaves the message out)."""
    block = stdout.split(f"[ RUN      ] {name}\n", 1)[-1].split(f"[  SKIPPED ] {name}", 1)[0]
    lines = block.splitlines()
    start = next((i + 1 for i, l in enumerate(lines) if l.endswith(": Skipped")), None)
    return "\n".join(lines[start:]).strip() if start is not None else ""


def why_not_built(build_dir: Path):
    """The reason a build leaves a stage's exercise tests out, where its cache says it did on purpose."""
    cache = build_dir / "CMakeCache.txt"
    if cache.exists() and "COURSE_EXERCISE_GPU_STAGES:BOOL=OFF" in cache.read_text(errors="replace"):
        return (" (COURSE_EXERCISE_GPU_STAGES=OFF, CI's build: the GPU stages' exercise track is left out "
                "where no GPU can run it; the GPU machine builds and proves it)")
    return ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default="build/ci", type=Path)
    ap.add_argument("--stage", help="only this stage folder, e.g. 01_fc_softmax")
    args = ap.parse_args()
    errors, proven, unprovable = [], [], []
    for stage, tasks in tasks_by_stage().items():
        if args.stage and stage != args.stage:
            continue
        exe = args.build_dir / "bin" / f"s{stage[:2]}_tests_exercise"
        if not exe.exists():
            for task in tasks:
                unprovable.append((task, f"{exe.name} was not built here{why_not_built(args.build_dir)}"))
            continue
        for task in tasks:
            results = run_task(exe, task)
            tag = f"Task {task}"
            if not results:
                errors.append(f"{tag} has no tests (suites named Task{task.replace('.', '_')}_*): "
                              "a learner could leave it empty")
                continue
            if all(status == "skipped" for _, status, _ in results):
                unprovable.append((task, "its tests skip here: " + (results[0][2].strip().splitlines() or ["no GPU"])[0]))
                continue
            passing = [name for name, status, _ in results if status == "passed"]
            if passing:
                errors.append(f"{tag}: {', '.join(passing)} pass{'es' if len(passing) == 1 else ''} on the "
                              "unfilled exercise, so they cannot tell the stub from the solution")
            named = [name for name, status, msg in results if status == "failed" and tag in msg]
            if not named:
                errors.append(f"{tag}: no failing test names the task (its failures come from elsewhere)")
            if not passing and named:
                proven.append(task)
    print(f"exercise holes caught: {len(proven)} task(s) proven: {' '.join(proven)}")
    for task, why in unprovable:
        print(f"  not provable on this machine: Task {task} ({why})")
    for e in errors:
        print(f"  ERROR {e}")
    print(f"{len(proven)} passed, {len(errors)} failed" + (f", {len(unprovable)} skipped" if unprovable else ""))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
