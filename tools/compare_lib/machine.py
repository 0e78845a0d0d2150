"""What the figures were measured on: CPU, cores, memory, OS, build, date, and the command."""
import datetime
import os
import platform
import re
import shlex
import subprocess
import sys
from pathlib import Path

from .stages import read_cmake_cache


def cpu_model(cpuinfo="/proc/cpuinfo"):
    """The CPU's model name ("AMD EPYC 9654 96-Core Processor"), or what platform says."""
    try:
        for line in Path(cpuinfo).read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model", "cpu model") and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def usable_cores():
    """The cores this process may run on (a container or taskset can allow fewer than exist)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def memory_gib(meminfo="/proc/meminfo"):
    try:
        m = re.search(r"^MemTotal:\s+(\d+) kB", Path(meminfo).read_text(), re.M)
        return round(int(m.group(1)) / 2**20, 1) if m else None
    except OSError:
        return None


def os_name():
    try:
        m = re.search(r'^PRETTY_NAME="?([^"\n]*)"?', Path("/etc/os-release").read_text(), re.M)
        if m:
            return m.group(1)
    except OSError:
        pass
    return f"{platform.system()} {platform.release()}"


def git_revision(root):
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=root, capture_output=True,
                             text=True, timeout=10)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def load_average():
    """The 1-minute load average (runnable processes, averaged): above the core count, other work
    competes with the trainers for the CPU and every CPU figure comes out slower."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def load_warning(load, cores):
    """A line for the table's header when the machine was busy before the comparison started."""
    if load is None or load <= 0.5 * cores:
        return None
    return (f"warning: the 1-minute load average was {load:g} on {cores} cores when this started: other programs "
            f"were using the CPU, so the CPU figures are slower than on a quiet machine")


def now():
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


def command_line(root, argv=None):
    """The command as a person would retype it from the repository root: python3 tools/compare.py ..."""
    argv = list(sys.argv if argv is None else argv)
    script = Path(argv[0])
    try:
        shown = str(script.resolve().relative_to(Path(root).resolve()))
    except ValueError:
        shown = str(script)
    return shlex.join(["python3", shown] + argv[1:])


def machine_info(root, build_dir, gpu=None):
    """A dict for the JSON files. `gpu` is the device string a GPU trainer printed, or why there is none."""
    cache = read_cmake_cache(build_dir)
    return {
        "cpu": cpu_model(),
        "cores": usable_cores(),
        "cores_on_machine": os.cpu_count(),
        "memory_gib": memory_gib(),
        "os": os_name(),
        "hostname": platform.node(),
        "gpu": gpu,
        "build_dir": str(build_dir),
        "build_type": cache.get("CMAKE_BUILD_TYPE"),
        "cxx_compiler": cache.get("CMAKE_CXX_COMPILER"),
        "native": cache.get("COURSE_NATIVE"),
        "git": git_revision(root),
    }


def machine_line(info):
    """One line for the table's header and the charts: 'AMD EPYC, 2 cores, 7.8 GiB, Debian GNU/Linux 12; GPU: none'."""
    parts = [info.get("cpu") or "unknown CPU", f"{info.get('cores')} cores"]
    if info.get("memory_gib"):
        parts.append(f"{info['memory_gib']:g} GiB")
    if info.get("os"):
        parts.append(info["os"])
    line = ", ".join(parts) + f"; GPU: {info.get('gpu') or 'not used'}"
    load = info.get("load_average_at_start")
    if load is not None and load > 0.5 * (info.get("cores") or 1):
        line += f"; busy: load average {load:g} at the start"
    return line
