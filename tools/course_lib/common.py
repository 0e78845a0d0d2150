"""What every part of tools/course shares: where the repository and its build are, and how a command is shown
and run."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
JOBS = os.environ.get("COURSE_JOBS") or str(os.cpu_count() or 2)
PRESET = "default"


def say(msg):
    print(f"==> {msg}", flush=True)


def exit_with(main, interrupted="interrupted"):
    """sys.exit(main()), but Ctrl-C ends the command with one line on stderr (`interrupted`, which may say
    what was left undone) and exit code 130, as a shell reports a command SIGINT stopped, not a traceback."""
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print(f"\n{interrupted}", file=sys.stderr)
        sys.exit(130)


def shown(arg):
    """An argument as a person would type it from the repository root."""
    if str(arg) == sys.executable:
        return "python3"
    if isinstance(arg, Path):
        return rel(arg)
    return str(arg)


def run(cmd, **kw):
    """Prints the command as a person would type it, then runs it from the repository root."""
    print("$ " + " ".join(shown(c) for c in cmd), flush=True)
    return subprocess.run([str(c) for c in cmd], cwd=ROOT, **kw).returncode


def run_tee(cmd):
    """As run(), and returns (exit status, everything the command printed): its output is shown as it comes and
    kept, for what is read from it afterwards (ctest's gates: course_lib/gates.py)."""
    print("$ " + " ".join(shown(c) for c in cmd), flush=True)
    proc = subprocess.Popen([str(c) for c in cmd], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, errors="replace")
    kept = []
    for line in proc.stdout:
        print(line, end="", flush=True)
        kept.append(line)
    return proc.wait(), "".join(kept)


def build_dir(preset=PRESET):
    return ROOT / "build" / preset


def bin_path(name, preset=PRESET):
    return build_dir(preset) / "bin" / name


def rel(path):
    """A path as the learner types it from the repository root."""
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def tests_target(stage):
    return f"s{stage[:2]}_tests_exercise"


def task_target(task, stage):
    """The test program of one task alone (cmake/CourseStage.cmake): built on demand, from the task's own test
    files, so that checking a task recompiles no other task's tests."""
    return f"s{stage[:2]}_task{task.replace('.', '_')}_exercise"


def trainer_target(stage, track="exercise"):
    return f"s{stage[:2]}_train_{track}"
