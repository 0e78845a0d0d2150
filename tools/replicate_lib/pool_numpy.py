"""The max-pooling study's own method in its own language: Python with NumPy, a window at a time.

Each window of the N x N image is taken out, multiplied by the K x K identity with NumPy's matmul, and its
largest value written to the output: the loop over windows runs in Python, as the study's serial program
did. Timed here so that the Python-against-C++ factor on one machine is measured (s03_pool_study times the
same method in C++, "study_serial"), not guessed. The output is checked against NumPy's own vectorised max
over the windows. The image is NumPy's (uniform in [-1, 1)), not the C++ program's: the time does not
depend on the values.

    python3 tools/replicate_lib/pool_numpy.py --sizes 4,8,16 --settings k2s2p0 [--min-ms 300]

prints one JSON object: {"numpy": version, "python": version, "rows": [...]}, rows in the form of
s03_pool_study's --json (method "study_numpy"). Without NumPy it prints {"status": "skipped", "reason": ...}.
tools/replicate_lib/pooling.py runs it for E5 with the first Python that has NumPy.
"""
import argparse
import json
import platform
import re
import sys
import time


def parse_setting(text):
    m = re.fullmatch(r"k(\d+)s(\d+)p(\d+)", text)
    if not m:
        raise ValueError(f"{text}: a setting is k<K>s<S>p<P>, e.g. k2s2p0")
    return tuple(int(v) for v in m.groups())


def pool_by_identity(np, x, K, S, P):
    """The study's method: every window times the identity (a matmul per window), then its largest cell.
    Padding cells hold the lowest float, so that they never win (as in s03_pool_study's C++ version)."""
    low = np.finfo(np.float32).min
    padded = np.pad(x, P, constant_values=low) if P else x
    n_out = (x.shape[0] + 2 * P - K) // S + 1
    identity = np.eye(K, dtype=np.float32)
    y = np.empty((n_out, n_out), dtype=np.float32)
    for i in range(n_out):
        for j in range(n_out):
            window = padded[i * S:i * S + K, j * S:j * S + K].copy()
            y[i, j] = np.matmul(window, identity).max()
    return y


def pool_reference(np, x, K, S, P):
    """The same output, NumPy's vectorised max over the windows (the check, not timed)."""
    low = np.finfo(np.float32).min
    padded = np.pad(x, P, constant_values=low) if P else x
    windows = np.lib.stride_tricks.sliding_window_view(padded, (K, K))[::S, ::S]
    return windows.max(axis=(2, 3))


def time_one(np, n, setting, min_ms, min_runs, max_runs, seed):
    K, S, P = parse_setting(setting)
    row = {"setting": setting, "K": K, "S": S, "P": P, "N": n, "method": "study_numpy", "threads": 1}
    if P >= K or K > n + 2 * P:
        return {**row, "status": "skipped", "reason": "refused by every stage (padding as large as the window)"
                if P >= K else "a window larger than the padded image"}
    x = np.random.default_rng(seed + n).uniform(-1.0, 1.0, size=(n, n)).astype(np.float32)
    n_out = (n + 2 * P - K) // S + 1
    row["outputs"] = n_out * n_out
    y = pool_by_identity(np, x, K, S, P)  # once untimed
    runs = []
    while len(runs) < max_runs and (len(runs) < min_runs or sum(runs) * 1e3 < min_ms):
        t0 = time.perf_counter()
        pool_by_identity(np, x, K, S, P)
        runs.append(time.perf_counter() - t0)
    runs.sort()
    return {**row, "status": "ok", "seconds": runs[len(runs) // 2], "runs": len(runs), "calls_per_run": 1,
            "matches_reference": bool(np.array_equal(y, pool_reference(np, x, K, S, P)))}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="4,8,16,32,64,128,256,512,1024")
    ap.add_argument("--settings", default="k2s2p0")
    ap.add_argument("--min-ms", type=float, default=300)
    ap.add_argument("--min-runs", type=int, default=3)
    ap.add_argument("--max-runs", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args(argv)
    try:
        import numpy as np
    except ImportError:
        print(json.dumps({"status": "skipped", "reason": f"NumPy is not installed for {sys.executable} "
                                                         "(Debian: apt-get install python3-numpy)"}))
        return 0
    sizes = [int(s) for s in args.sizes.split(",") if s]
    rows = [time_one(np, n, setting, args.min_ms, args.min_runs, args.max_runs, args.seed)
            for setting in args.settings.split(",") for n in sizes]
    print(json.dumps({"status": "ok", "numpy": np.__version__, "python": platform.python_version(),
                      "executable": sys.executable, "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
