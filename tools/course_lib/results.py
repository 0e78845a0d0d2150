"""Running one task's tests and saying what they found, the same way in check, next, watch and progress:
PASS, FAIL (the failing test's name and the first lines of its message: expected and actual, the diagnosis),
or SKIP (its tests need a GPU), and always the command that shows the test's full output.

Every run is remembered in build/default/course/results.json with the test program's time stamp, so that
`tools/course progress` can answer at once for a stage whose test program has not changed since."""
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import common
import prove_exercises  # noqa: E402

EXCERPT_LINES = 8


@dataclass
class TaskResult:
    task: str
    stage: str
    state: str                       # pass | fail | skip (its tests need a GPU) | none (no tests)
    tests: int = 0
    failed: int = 0
    skipped: int = 0
    test: str = ""                   # the first failing test, Suite.Name
    not_implemented: bool = False    # the hole still throws
    excerpt: list = field(default_factory=list)   # the lines of its failure to read first
    skip_reason: str = ""
    program: str = ""                # the test program that ran, as the learner types it ("" : the stage's)

    @property
    def command(self):
        return full_output_command(self.stage, self.task, self.program)

    @property
    def blocked_by(self):
        """The other task whose hole its tests ran into ("1.1" for Task 1.4's gradient checks, which run the
        forward pass of Task 1.1), or ""."""
        if not self.not_implemented or not self.excerpt:
            return ""
        m = re.match(r"Task (\d+\.\d+) is not implemented yet", self.excerpt[0])
        return m[1] if m and m[1] != self.task else ""

    @property
    def not_started(self):
        """Its tests stop at its own hole: not started (or one of its holes still open)."""
        return self.not_implemented and not self.blocked_by and len(self.excerpt) == 1


def exe_of(stage):
    return common.bin_path(common.tests_target(stage))


def full_output_command(stage, task, program=""):
    """The command that shows every test of a task with GoogleTest's whole output: the test program that ran
    them (the task's own, or the stage's)."""
    return f"{program or common.rel(exe_of(stage))} --gtest_filter='Task{task.replace('.', '_')}_*'"


def not_implemented_line(message):
    """'Task 1.1 is not implemented yet (...): read ..., fill in ..., then run: ...' from GoogleTest's wrapping
    of the exception (C++ exception with description "..." thrown in the test body)."""
    for l in message.splitlines():
        if "is not implemented yet" in l and "Task" in l:
            return l[l.find("Task"):].split('" thrown in')[0].strip()
    return None


_FILE_LINE = re.compile(r"^(/\S+|\S+\.(?:cpp|hpp|cu|cuh|h)):(\d+)(?:: Failure)?$")


def excerpt(message, limit=EXCERPT_LINES):
    """The lines of a GoogleTest failure a learner reads first, at most `limit`: the first failed check of the
    test without GoogleTest's frame (the file:line line, 'Value of: <the whole call>', 'Actual: false (',
    'Expected: true'), so that what remains is the test's own words: the tensor and its shape, expected and
    actual at the wrong entries, the diagnosis; then how many more checks failed. A GPU fault's one-line
    explanation and a hole's "not implemented yet" are kept whole, alone."""
    lines = [l.rstrip() for l in message.splitlines()]
    for l in lines:
        for key in ("GPU fault in ", "GPU context lost earlier: "):
            if key in l:
                return [l[l.find(key):].strip()]
    impl = not_implemented_line(message)
    if impl:
        return [impl]
    checks = [[]]                      # one list of lines per failed check (each starts at its file:line)
    for l in lines:
        if _FILE_LINE.match(l.strip()):
            if any(x.strip() for x in checks[-1]):
                checks.append([])
            continue
        checks[-1].append(l)
    out = _without_frame(checks[0])
    if len(out) > limit:
        out = out[:limit - 1] + [f"... {len(out) - (limit - 1)} more lines"]
    more = len(checks) - 1
    if more:
        out.append(f"... and {more} more failed check{'s' if more > 1 else ''} in this test")
    return out or ["failed (no message)"]


def _without_frame(lines):
    out = []
    for l in lines:
        s = l.strip()
        if not s or s.startswith("Value of: ") or s in ("Actual: false", "Actual: true"):
            continue
        if s in ("Expected: true", "Expected: false"):
            if out and out[-1].endswith(")"):
                out[-1] = out[-1][:-1]
                if not out[-1].strip():
                    out.pop()
            continue
        m = re.match(r"^\s*Actual: (?:false|true) \((.*)$", l)
        out.append(m[1] if m else l)
    indent = min((len(l) - len(l.lstrip()) for l in out if l.strip()), default=0)
    return [l[indent:] if len(l) - len(l.lstrip()) >= indent else l.lstrip() for l in out]


def run_task(exe, task, stage):
    """Runs a task's tests with the given test program; a TaskResult."""
    results = prove_exercises.run_task(exe, task)
    r = TaskResult(task, stage, "pass", tests=len(results), program=common.rel(exe))
    if not results:
        r.state, r.excerpt = "none", [f"no tests found (suites named Task{task.replace('.', '_')}_*)"]
        return remember(exe, r)
    failed = [(n, s, m) for n, s, m in results if s in ("failed", "crashed")]
    skipped = [(n, m) for n, s, m in results if s == "skipped"]
    r.failed, r.skipped = len(failed), len(skipped)
    if failed:
        name, status, msg = failed[0]
        r.state, r.test = "fail", name
        r.not_implemented = "is not implemented yet" in msg
        r.excerpt = excerpt(msg)
        if status == "crashed":
            tail = [l for l in msg.splitlines() if l.strip()][-EXCERPT_LINES + 1:]
            r.excerpt = ["the test program crashed (no report written); its last words:"] + tail
    elif skipped:  # all of them, or all but host-side tests: the task is not checked here
        r.state, r.skip_reason = "skip", skip_reason(results) or "its tests skip on this machine"
    return remember(exe, r)


def skip_reason(results):
    """Why a task's tests skipped, from run_task's results: GoogleTest's message without its "Skipped" line
    (where the GPU is missing, common/gpu/cuda_check.hpp's no_gpu_reason: what it means, what works here)."""
    for _, state, message in results:
        lines = [l.strip() for l in message.splitlines() if l.strip() and l.strip() != "Skipped"]
        if state == "skipped" and lines:
            return lines[-1]
    return ""


def fail_lines(r, with_command=True):
    """What a failing task shows, in every command: the test and its message's first lines, then how many
    tests fail and the command for their full output. A hole not filled in yet says so in one line."""
    if r.blocked_by:
        lines = [f"needs Task {r.blocked_by} first: {r.excerpt[0]}"]
    elif r.not_started:
        lines = [f"not implemented: {r.excerpt[0]}"]
    else:
        lines = [f"{r.test}:" if r.test else "failed:"] + ["  " + l for l in r.excerpt]
    if with_command:
        lines.append(f"{r.failed} of {r.tests} tests fail; the full output: {r.command}")
    return lines


# ---- the memory of the last runs, for tools/course progress -------------------
def store_path():
    return common.build_dir() / "course" / "results.json"


def _stamp(exe):
    try:
        st = Path(exe).stat()
        return f"{st.st_mtime_ns}:{st.st_size}"
    except OSError:
        return None


def _load():
    try:
        return json.loads(store_path().read_text())
    except (OSError, ValueError):
        return {}


def remember(exe, r):
    data = _load()
    data[r.task] = {"stamp": _stamp(exe), "result": asdict(r)}
    try:
        store_path().parent.mkdir(parents=True, exist_ok=True)
        store_path().write_text(json.dumps(data, indent=1))
    except OSError:
        pass
    return r


def recalled(exe, task):
    """The TaskResult of the last run of `task` by this very test program (same time stamp), or None."""
    entry = _load().get(task)
    stamp = _stamp(exe)
    if not entry or stamp is None or entry.get("stamp") != stamp:
        return None
    try:
        return TaskResult(**entry["result"])
    except TypeError:
        return None
