"""E5, the max-pooling study: runs s05_pool_study (the GPU's ways too) where a GPU can run it, else
s03_pool_study (serial and OpenMP), reads its --json, and works out what the study reported: the
time against the size, Amdahl's parallel fraction of the OpenMP runs, and the size from which each
other way beats the serial one."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

from compare_lib.amdahl import fit_parallel_fraction

from . import studies

METHODS = ("serial", "study_serial", "study_numpy", "openmp", "gpu_kernel", "gpu_with_transfers", "gpu_per_window")
METHOD_NAMES = {"serial": "serial (stage 02)", "study_serial": "the study's way, C++",
                "study_numpy": "the study's way, NumPy", "openmp": "OpenMP", "gpu_kernel": "GPU kernel (stage 05)",
                "gpu_with_transfers": "GPU kernel + copies", "gpu_per_window": "GPU, a transfer per window"}
NUMPY_SCRIPT = Path(__file__).resolve().parent / "pool_numpy.py"
# The study's serial program ran to N = 1024; NumPy's loop over windows takes seconds there.
NUMPY_MAX_SIZE = 1024


def run_pool_study(ctx, sizes, settings, threads=None, min_ms=30, per_window_max=70000):
    """Runs the study's program; returns the payload: its JSON, plus "status"/"reason" and the analysis."""
    bins = Path(ctx.build_dir) / "bin"
    exe = None
    if ctx.gpu_usable and (bins / "s05_pool_study").is_file():
        exe = bins / "s05_pool_study"
    elif (bins / "s03_pool_study").is_file():
        exe = bins / "s03_pool_study"
    elif (bins / "s05_pool_study").is_file():
        exe = bins / "s05_pool_study"
    if exe is None:
        return {"status": "skipped", "reason": f"neither s03_pool_study nor s05_pool_study is built in {ctx.build_dir} "
                                               f"(cmake --build {ctx.build_dir} --target s03_pool_study)",
                "rows": [], "settings": []}
    logs = Path(ctx.out_dir) / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    raw = (logs / "e5_pool_study_raw.json").resolve()
    if raw.exists():
        raw.unlink()
    cmd = [str(exe), "--json", str(raw), "--sizes", ",".join(map(str, sizes)), "--settings", ",".join(settings),
           "--min-ms", f"{min_ms:g}"]
    if threads:
        cmd += ["--threads", ",".join(map(str, threads))]
    if exe.name == "s05_pool_study":
        cmd += ["--per-window-max", str(per_window_max)]
        if not ctx.gpu_usable:
            cmd += ["--gpu", "0"]
    ctx.progress("  $ " + " ".join([exe.name] + cmd[1:]))
    try:
        proc = subprocess.run(cmd, cwd=ctx.root, capture_output=True, text=True, timeout=ctx.timeout)
        code, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired:
        code, out, err = -1, "", f"timed out after {ctx.timeout} s"
    (logs / "e5_pool_study.log").write_text("$ " + " ".join(cmd) + "\n" + out + err)
    try:
        data = json.loads(raw.read_text())
    except (OSError, ValueError):
        last = ((err or out).strip().splitlines() or ["no output"])[-1]
        return {"status": "error", "reason": f"{exe.name}: {last} (exit code {code})", "rows": [], "settings": [],
                "program_command": [exe.name] + cmd[1:]}
    data["program_command"] = [exe.name] + cmd[1:]
    data["status"] = "ok" if code == 0 else "error"
    data["reason"] = "" if code == 0 else f"{exe.name} exited {code}: {(err.strip().splitlines() or [''])[-1]}"
    if not ctx.gpu_usable and data.get("gpu", {}).get("status") != "ok":
        data["gpu"] = {**data.get("gpu", {}), "status": "skipped", "reason": ctx.gpu_reason or data["gpu"]["reason"]}
    data["numpy"] = run_numpy(ctx, [n for n in sizes if n <= NUMPY_MAX_SIZE])
    data["rows"] += data["numpy"].pop("rows", [])
    data["analysis"] = analyse(data)
    return data


def pythons_to_try():
    """This Python first, then the system's (Debian's python3-numpy installs for /usr/bin/python3)."""
    seen = []
    for exe in (sys.executable, "/usr/bin/python3", shutil.which("python3")):
        if exe and Path(exe).is_file() and Path(exe).resolve() not in [Path(s).resolve() for s in seen]:
            seen.append(exe)
    return seen


def run_numpy(ctx, sizes, setting="k2s2p0"):
    """The study's method in Python with NumPy (pool_numpy.py), k2 s2 p0 as the study timed it, with the first
    Python that has NumPy: {"status", "reason", "numpy", "python", "rows"}."""
    if not sizes:
        return {"status": "skipped", "reason": f"no size up to {NUMPY_MAX_SIZE}", "rows": []}
    reasons = []
    for exe in pythons_to_try():
        cmd = [exe, str(NUMPY_SCRIPT), "--sizes", ",".join(map(str, sizes)), "--settings", setting]
        ctx.progress("  $ " + " ".join(["python3", "tools/replicate_lib/pool_numpy.py"] + cmd[2:]) + f"   ({exe})")
        try:
            proc = subprocess.run(cmd, cwd=ctx.root, capture_output=True, text=True, timeout=ctx.timeout)
            out = json.loads(proc.stdout)
        except subprocess.TimeoutExpired:
            return {"status": "error", "reason": f"pool_numpy.py timed out after {ctx.timeout} s", "rows": []}
        except ValueError:
            return {"status": "error", "reason": f"pool_numpy.py: {(proc.stderr.strip().splitlines() or ['no output'])[-1]}",
                    "rows": []}
        if out.get("status") == "ok":
            return out
        reasons.append(out.get("reason", "?"))
    return {"status": "skipped", "reason": "; ".join(reasons) or "no Python found", "rows": []}


def seconds(data, setting, method, n, threads=None):
    for r in data.get("rows", []):
        if r["setting"] == setting and r["method"] == method and r["N"] == n and r["status"] == "ok" and \
                (threads is None or r["threads"] == threads):
            return r["seconds"]
    return None


def best_openmp(data, setting, n):
    """(seconds, threads) of the fastest OpenMP run of one size, or (None, None)."""
    runs = [(r["seconds"], r["threads"]) for r in data.get("rows", [])
            if r["setting"] == setting and r["method"] == "openmp" and r["N"] == n and r["status"] == "ok"]
    return min(runs) if runs else (None, None)


def analyse(data):
    """Per setting timed: Amdahl fits of the OpenMP runs at each size (speedup over its 1-thread run), and
    the smallest size from which each way beats the serial one (for good: at that size and every larger)."""
    out = {}
    sizes = sorted({r["N"] for r in data.get("rows", [])})
    for s in data.get("settings", []):
        if s["status"] != "ok":
            continue
        name = s["setting"]
        fits = {}
        for n in sizes:
            one = seconds(data, name, "openmp", n, threads=1)
            pts = [(r["threads"], one / r["seconds"]) for r in data["rows"]
                   if one and r["setting"] == name and r["method"] == "openmp" and r["N"] == n and r["status"] == "ok"]
            if one and any(t > 1 for t, _ in pts):
                f = fit_parallel_fraction(pts)
                fits[str(n)] = {"p": f["p"], "rms": f["rms"], "max_speedup": f["max_speedup"],
                                "at_bound": f["at_bound"], "points": f["points"]}
        wins = {}
        for method in ("openmp", "gpu_kernel", "gpu_with_transfers", "gpu_per_window"):
            timed, first = [], None
            for n in sizes:
                serial = seconds(data, name, "serial", n)
                other = best_openmp(data, name, n)[0] if method == "openmp" else seconds(data, name, method, n)
                if serial is None or other is None:
                    continue
                timed.append((n, other < serial))
            for i, (n, win) in enumerate(timed):
                if win and all(w for _, w in timed[i:]):
                    first = n
                    break
            wins[method] = {"from_size": first, "timed_sizes": [n for n, _ in timed],
                            "never": bool(timed) and first is None}
        out[name] = {"amdahl": fits, "beats_serial": wins}
    return out


def study_points(kind):
    """[(N, seconds)] the study reported for k2 s2 p0: kind "serial" or "gpu"."""
    return sorted(studies.POOL_STUDY[kind]["seconds"].items())
