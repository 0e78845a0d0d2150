"""What the figures were measured on: CPU, cores, memory, OS, build, date, and the command."""
import datetime
import hashlib
import os
import platform
import re
import shlex
import subprocess
import sys
import time
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


# The widest SIMD extension a CPU has, by its /proc/cpuinfo flag, widest first. The width decides how many
# partial sums a `#pragma omp simd` reduction keeps under -march=native (16 floats in an AVX-512 register,
# 8 in AVX2), hence the rounding of every dot product, hence the last digits of a CPU trainer's loss and
# accuracy; it also bounds the CPU stages' speed. A figure from another CPU is read with this in mind.
VECTOR_FLAGS = [("avx512f", "AVX-512"), ("avx2", "AVX2"), ("avx", "AVX"), ("sse4_2", "SSE4.2"), ("sse2", "SSE2"),
                ("sve2", "SVE2"), ("sve", "SVE"), ("asimd", "NEON")]


def cpu_details(cpuinfo="/proc/cpuinfo"):
    """(family, model number, vector width) from /proc/cpuinfo's first processor, each None where it says
    nothing: ("25", "1", "AVX2") on an AMD EPYC 7003 (Zen 3). A virtual machine's model name can be as
    bare as "AMD EPYC"; the family and model numbers still tell one generation from another."""
    try:
        text = Path(cpuinfo).read_text(errors="replace")
    except OSError:
        return None, None, None
    fields = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break   # the first processor is enough: every core of a machine has the same flags
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    width = next((name for flag, name in VECTOR_FLAGS if flag in flags), None)
    return fields.get("cpu family") or None, fields.get("model") or None, width


def cpu_text(info):
    """The CPU as the machine line names it: "AMD EPYC (family 25, model 1; AVX2)". A JSON file written
    before the vector width was recorded says so rather than guess it."""
    cpu = info.get("cpu") or "unknown CPU"
    if "cpu_vector" not in info:
        return f"{cpu} (vector width not recorded)"
    ident = [f"family {info['cpu_family']}"] if info.get("cpu_family") else []
    ident += [f"model {info['cpu_model_number']}"] if info.get("cpu_model_number") else []
    detail = ", ".join(ident)
    width = info.get("cpu_vector") or "vector width unknown"
    return f"{cpu} ({detail + '; ' if detail else ''}{width})"


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


# What a run's code is made of: every file of these, tracked by git or new and not ignored.
SOURCE_PARTS = ("CMakeLists.txt", "CMakePresets.json", "cmake", "common", "solutions", "exercises", "stages",
                "tests", "benchmarks", "tools")


def source_tree_hash(root):
    """A hash of the source as it is on disk (16 hex digits): the path and content of every file under
    SOURCE_PARTS that git tracks or would track, changes not committed included, so that a copy of the tree
    with uncommitted changes is still told apart from its commit ("git describe --dirty" says only that it
    differs). Without git, every file under SOURCE_PARTS. None where nothing can be read."""
    root = Path(root)
    try:
        out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z", "--", *SOURCE_PARTS], cwd=root,
                             capture_output=True, timeout=30)
        names = sorted(n for n in out.stdout.decode().split("\0") if n) if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        names = None
    if names is None:
        names = sorted(str(p.relative_to(root)) for part in SOURCE_PARTS for p in
                       ([root / part] if (root / part).is_file() else (root / part).rglob("*")) if p.is_file())
    digest = hashlib.sha256()
    for name in names:
        path = root / name
        if not path.is_file():  # listed by git, deleted on disk
            continue
        digest.update(name.encode() + b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16] if names else None


def load_average():
    """The 1-minute load average (runnable processes, averaged), recorded in the JSON files. It is no measure
    of what competes with a run: it decays over minutes, so a build that ended a moment ago still counts in
    it. The busy check (CpuWatch) measures the run itself."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def cpu_busy_seconds(stat_text, hz):
    """CPU seconds the whole machine has spent busy since boot, summed over its cores, from /proc/stat's
    first line: user, nice, system, irq, softirq and steal (the hypervisor running another guest on this
    machine's core slows a run as much as another program does); idle and iowait are not busy. None where
    the text is not a /proc/stat."""
    for line in stat_text.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            try:
                v = [int(x) for x in parts[1:9]] + [0] * (8 - len(parts[1:9]))
            except ValueError:
                return None
            user, nice, system, _idle, _iowait, irq, softirq, steal = v[:8]
            return (user + nice + system + irq + softirq + steal) / hz
    return None


def own_cpu_seconds():
    """CPU seconds of this process and of every child it has waited for (the trainers it ran, and theirs)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _read_proc_stat():
    try:
        return Path("/proc/stat").read_text()
    except OSError:
        return ""


class CpuWatch:
    """What other programs did with the CPU while this one ran: the machine's busy CPU seconds from
    /proc/stat over the watch, less those of this process and the children it waited for, per second of
    the watch, is how many cores other programs kept busy on average. Unlike the load average it counts
    only what ran during the watch, so the course's own build that ended before the comparison started
    does not count, and a program that starts in the middle does.

    `read_stat`, `own_cpu` and `clock` are for the tests (canned /proc readings); `hz` is the kernel's
    clock ticks per second. The CPU time of a child counts only once it has been waited for (subprocess.run waits)."""

    def __init__(self, read_stat=_read_proc_stat, own_cpu=own_cpu_seconds, clock=time.monotonic, hz=None):
        self.read_stat, self.own_cpu, self.clock = read_stat, own_cpu, clock
        self.hz = hz or (os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100)
        self.start = self._sample()

    def _sample(self):
        return cpu_busy_seconds(self.read_stat(), self.hz), self.own_cpu(), self.clock()

    def other_cores(self):
        """(cores other programs kept busy on average since the watch started, seconds watched); (None,
        seconds) where /proc/stat cannot be read (not Linux)."""
        busy0, own0, t0 = self.start
        busy1, own1, t1 = self._sample()
        seconds = t1 - t0
        if busy0 is None or busy1 is None or seconds <= 0:
            return None, round(seconds, 1)
        # Ticks are coarse (10 ms) and this process's own times are read apart from /proc/stat: a small
        # negative remainder is rounding, not negative work.
        return round(max(0.0, (busy1 - busy0) - (own1 - own0)) / seconds, 2), round(seconds, 1)

    def record(self, info):
        """Adds the watch's result to a machine_info() dict, for the JSON, the busy warning and the line."""
        info["other_cores_during"], info["watched_seconds"] = self.other_cores()
        return info


def other_cores_threshold(cores):
    """Other programs' average use, in cores, above which the CPU figures are called slowed: a tenth of the
    machine, and at least a quarter of a core (a shell or an editor stays below it; on 2 cores, a run
    that uses both, as stage 03 does, would share them with what is above it)."""
    return max(0.25, 0.1 * (cores or 1))


def busy_warning(other_cores, cores, seconds=None):
    """The warning line when other programs used the CPU during a run (CpuWatch.other_cores()), else None.
    The one check of every command that times the trainers (compare.py, the trainer comparison of
    `tools/course`)."""
    if other_cores is None or other_cores <= other_cores_threshold(cores):
        return None
    over = f" over its {seconds:g} s" if seconds else ""
    return (f"warning: other programs kept {other_cores:g} of the {cores} cores busy on average during this "
            f"run{over}, so its CPU figures are slower than on a quiet machine")


def info_busy_warning(info):
    """busy_warning() of a machine_info() dict: from the watch where the run recorded one; a JSON file from
    before the watch has only the 1-minute load average at the start, and is judged by it as it was then."""
    cores = info.get("cores") or 1
    if "other_cores_during" in info:
        return busy_warning(info["other_cores_during"], cores, info.get("watched_seconds"))
    load = info.get("load_average_at_start")
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
    family, model_number, vector = cpu_details()
    return {
        "cpu": cpu_model(),
        "cpu_family": family,
        "cpu_model_number": model_number,
        "cpu_vector": vector,
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
        "source_tree": source_tree_hash(root),
    }


def machine_line(info):
    """One line for the table's header and the charts: 'AMD EPYC (family 25, model 1; AVX2), 2 cores, 23.5 GiB,
    Debian GNU/Linux 12 (bookworm); GPU: none', and a busy mark where other programs used the CPU."""
    parts = [cpu_text(info), f"{info.get('cores')} cores"]
    if info.get("memory_gib"):
        parts.append(f"{info['memory_gib']:g} GiB")
    if info.get("os"):
        parts.append(info["os"])
    line = ", ".join(parts) + f"; GPU: {info.get('gpu') or 'not used'}"
    cores = info.get("cores") or 1
    if "other_cores_during" in info:
        others = info["other_cores_during"]
        if others is not None and others > other_cores_threshold(cores):
            line += f"; busy: other programs used {others:g} of {cores} cores during the run"
    else:
        load = info.get("load_average_at_start")
        if load is not None and load > 0.5 * cores:
            line += f"; busy: load average {load:g} at the start"
    return line
