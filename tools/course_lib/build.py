"""Configuring build/default and building targets: only what changed, with the build's progress on one line."""
import re
import subprocess
import sys
from pathlib import Path

from .common import JOBS, PRESET, ROOT, build_dir, run


def configure(quiet=True, again=False):
    """cmake --preset default, unless build/default is configured already (a build re-runs the configure step
    itself when a CMakeLists.txt or a source folder changed) or `again`; True when it worked. Quiet: the
    feature lines only when it fails."""
    if configured() and not again:
        return True
    if not quiet:
        return run(["cmake", "--preset", PRESET]) == 0
    print(f"==> configuring {PRESET} build (cmake --preset {PRESET}): the first time only", flush=True)
    proc = subprocess.run(["cmake", "--preset", PRESET], cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        print(proc.stdout + proc.stderr)
        print("the configure step failed (cmake --preset default): its messages are above")
    return proc.returncode == 0


def configured():
    return (build_dir() / "CMakeCache.txt").is_file()


def known_targets():
    """The targets this build folder defines (a stage the configure step left out has none), read once per
    configuration: the list changes only when the configure step runs again."""
    cache = build_dir() / "CMakeCache.txt"
    stamp = cache.stat().st_mtime_ns if cache.exists() else None
    if _targets.get("stamp") != stamp or "names" not in _targets:
        out = subprocess.run(["cmake", "--build", "--preset", PRESET, "--target", "help"], cwd=ROOT,
                             capture_output=True, text=True).stdout
        # Makefiles list "... name", Ninja "name: phony".
        _targets.update(stamp=stamp, names=set(re.findall(r"^(?:\.\.\. )?([A-Za-z0-9_]+)(?::| *$)", out, re.M)))
    return _targets["names"]


_targets = {}


def build_targets(targets, label=None):
    """Builds `targets` (only what changed), showing the build's "[ n%] file" lines, on one line rewritten in
    place on a terminal. Returns (ok, the compiler's whole output)."""
    if not targets:
        return True, ""
    label = label or " ".join(targets)
    cmd = ["cmake", "--build", "--preset", PRESET, "-j", JOBS]
    for t in targets:
        cmd += ["--target", t]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out, tty, shown = [], sys.stdout.isatty(), False
    for line in proc.stdout:
        out.append(line)
        m = re.match(r"\[\s*(\d+)%\] Building \S+ object (\S+)", line)
        if m:
            step = f"    building {label}: [{m[1]:>3}%] {Path(m[2]).name.removesuffix('.o')}"
            print(f"\r{step[:100]:<100}" if tty else step, end="" if tty else "\n", flush=True)
            shown = True
    proc.wait()
    if tty and shown:
        print("\r" + " " * 100 + "\r", end="", flush=True)
    return proc.returncode == 0, "".join(out)


def compiler_errors(output, limit=25):
    """The compiler's first errors, each with the lines that follow it (the code and the caret)."""
    lines = output.splitlines()
    keep, i = [], 0
    while i < len(lines) and len(keep) < limit:
        if re.search(r"\berror\b", lines[i]) and not lines[i].startswith(("make", "gmake", "ninja")):
            keep.extend(lines[i:i + 4])
            i += 4
        else:
            i += 1
    return keep[:limit] or lines[-limit:]
