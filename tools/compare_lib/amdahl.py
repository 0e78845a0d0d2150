"""Amdahl's law: with a fraction p of the work parallel, n threads give the speedup
S(n) = 1 / ((1 - p) + p / n). Fitting p to measured speedups says how much of a training
step the threads actually share, and 1 / (1 - p) is the most any number of threads could give."""
import math


def amdahl_speedup(p, n):
    return 1.0 / ((1.0 - p) + p / n)


def _sse(p, points):
    return sum((s - amdahl_speedup(p, n)) ** 2 for n, s in points)


def fit_parallel_fraction(points):
    """The p in [0, 1] that minimises sum (S_i - S(n_i; p))^2 over points [(threads n_i, speedup S_i)],
    least squares on the speedup itself. Returns {p, rms, max_speedup, at_bound, points}.

    The sum of squares is smooth in p; a grid of 1001 values finds its basin and a golden-section
    search refines it to about 1e-12. at_bound is "0" when no p > 0 fits better (the threads never
    helped) and "1" when the data scale perfectly or better (super-linear: cache effects)."""
    pts = [(float(n), float(s)) for n, s in points if n >= 1 and s > 0 and math.isfinite(s)]
    if not pts or all(n == 1 for n, _ in pts):
        raise ValueError("fitting Amdahl's law needs a speedup measured at more than one thread")
    grid = [i / 1000 for i in range(1001)]
    best = min(grid, key=lambda p: _sse(p, pts))
    lo, hi = max(0.0, best - 0.001), min(1.0, best + 0.001)
    g = (math.sqrt(5) - 1) / 2
    a, b = hi - g * (hi - lo), lo + g * (hi - lo)
    fa, fb = _sse(a, pts), _sse(b, pts)
    for _ in range(100):
        if fa <= fb:
            hi, b, fb = b, a, fa
            a = hi - g * (hi - lo)
            fa = _sse(a, pts)
        else:
            lo, a, fa = a, b, fb
            b = lo + g * (hi - lo)
            fb = _sse(b, pts)
    p = (lo + hi) / 2
    for edge in (0.0, 1.0):  # the optimum may sit on the boundary of [0, 1]
        if _sse(edge, pts) <= _sse(p, pts):
            p = edge
    at_bound = "0" if p <= 1e-9 else ("1" if p >= 1 - 1e-9 else None)
    return {
        "p": p,
        "rms": math.sqrt(_sse(p, pts) / len(pts)),
        "max_speedup": math.inf if p >= 1 else 1.0 / (1.0 - p),
        "at_bound": at_bound,
        "points": [[n, s] for n, s in pts],
    }


def describe_fit(fit):
    """'p = 0.912 (at most 11.4x on any number of threads; rms error 0.03)'."""
    if fit["at_bound"] == "0":
        return f"p = 0 (the threads never gave a speedup; rms error {fit['rms']:.2f})"
    limit = "no limit" if math.isinf(fit["max_speedup"]) else f"at most {fit['max_speedup']:.1f}x on any number of threads"
    return f"p = {fit['p']:.3f} ({limit}; rms error {fit['rms']:.2f})"
