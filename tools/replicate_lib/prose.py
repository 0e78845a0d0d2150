"""The figures docs/replication.md's own prose quotes from the runs' JSON, each checked against it.

The tables between the page's markers are generated; the paragraphs around them are written by
hand and quote the same runs. Each entry of FIGURES below names a run (experiment, machine), a
piece of the page's prose with {} where a figure stands, and how that figure is computed from the
run's JSON, formatted as the page writes it. `python3 tools/replicate.py --tables --check` fails
when a piece, with the figures the JSON gives today, is not in the page: a figure edited by hand,
or a JSON measured again without the prose that quotes it.

What is checked: the course's figures in E5's prose (the max-pooling study), on both machines.
A piece matches across line breaks (the page's text is wrapped at 100 columns)."""
import re

from . import tables


def rows(payload, **match):
    return [r for r in payload.get("rows", []) if all(r.get(k) == v for k, v in match.items())]


def seconds(payload, method, n, setting="k2s2p0", threads=1):
    """The seconds of one pooling row; KeyError naming it when the run has no such row."""
    found = [r for r in rows(payload, method=method, N=n, setting=setting) if r.get("threads", 1) == threads]
    if not found or found[0].get("status") != "ok":
        raise KeyError(f"no {method} row at N = {n}, {setting}, {threads} thread(s)")
    return found[0]["seconds"]


def fit(payload, setting, n):
    """Amdahl's fit of one size's OpenMP sweep: p to 3 decimals, its root mean square miss to 2."""
    a = payload["analysis"][setting]["amdahl"].get(str(n))
    if a is None:
        raise KeyError(f"no Amdahl fit at N = {n}, {setting}")
    return {"p": f"{a['p']:.3f}", "rms": f"{a['rms']:.2f}"}


def speedup(payload, setting, n, threads):
    """The OpenMP sweep's speedup on `threads` threads at N = n, to 2 decimals (what the fit was fitted to)."""
    points = dict((int(k), v) for k, v in payload["analysis"][setting]["amdahl"][str(n)]["points"])
    if threads not in points:
        raise KeyError(f"no {threads}-thread point at N = {n}, {setting}")
    return f"{points[threads]:.2f}"


def t(x):
    """A time as the page writes it: tables.fmt_s with µs for microseconds."""
    return tables.fmt_s(x).replace(" us", " µs")


def ratio(a, b, digits=2):
    return f"{a / b:.{digits}g}"


class Missing(Exception):
    """A run the page quotes is not in docs/figures/ yet: its pieces are not checked."""


def e5_figures():
    """E5's pieces: (experiment, piece, compute), compute(run) giving the figures in the piece's order,
    run(machine) the experiment's payload on that machine."""
    def s(p, n, method="serial", **k):
        return seconds(p, method, n, **k)

    def span(a, b):  # "2.26 to 7.34 ms": the unit once, when both have it
        ta, tb = t(a), t(b)
        return (ta.split()[0] if ta.split()[1] == tb.split()[1] else ta) + " to " + tb

    def growth(p):
        return [f"{s(p, 2048) / s(p, 1024):.1f}", span(s(p, 1024), s(p, 2048))]

    return [
        ("e5", "from 1024 to 2048, {} times on the 2-core machine ({})", lambda run: growth(run("vm"))),
        ("e5", "and {} times on the H100 host ({})", lambda run: growth(run("h100"))),
        ("e5", "At 1024 stage 02's loop takes {} (EPYC) and {} (Xeon)",
         lambda run: [t(s(run("vm"), 1024)), t(s(run("h100"), 1024))]),
        ("e5", "the study's method in C++ takes {}, {} times stage 02's loop",
         lambda run: [t(s(run("vm"), 1024, "study_serial")),
                      ratio(s(run("vm"), 1024, "study_serial"), s(run("vm"), 1024))]),
        ("e5", "in the study's program, {}, {} times the C++",
         lambda run: [t(s(run("vm"), 1024, "study_numpy")),
                      f"{s(run('vm'), 1024, 'study_numpy') / s(run('vm'), 1024, 'study_serial'):.0f}"]),
        ("e5", "At N = 4 (four windows) stage 02's loop takes {} and {} and the method in NumPy {}, against",
         lambda run: [t(s(run("vm"), 4)), t(s(run("h100"), 4)), t(s(run("vm"), 4, "study_numpy"))]),
        ("e5", "It takes {} for the 4 windows of N = 4 and {} for the 65,536 of N = 512",
         lambda run: [t(s(run("h100"), 4, "gpu_per_window")), t(s(run("h100"), 512, "gpu_per_window"))]),
        ("e5", "the serial loop at 512 ({})", lambda run: [t(s(run("h100"), 512))]),
        ("e5", "the kernel alone takes {} at every size up to 1024 ({} at 2048)",
         lambda run: [span(min(s(run("h100"), n, "gpu_kernel") for n in run("h100")["sizes"] if n <= 1024),
                           max(s(run("h100"), n, "gpu_kernel") for n in run("h100")["sizes"] if n <= 1024)),
                      t(s(run("h100"), 2048, "gpu_kernel"))]),
        ("e5", "it takes {} at N = 4 and {} at 1024",
         lambda run: [t(s(run("h100"), 4, "gpu_with_transfers")), t(s(run("h100"), 1024, "gpu_with_transfers"))]),
        ("e5", "from N = 128 ({}x), {}x at 1024 and {}x at 2048",
         lambda run: [f"{s(run('h100'), n) / s(run('h100'), n, 'gpu_with_transfers'):.3g}" for n in (128, 1024, 2048)]),
        ("e5", "creates the context, took {}", lambda run: [t(run("h100")["gpu"]["context_seconds"])]),
        ("e5", "({} at N = 4 on one thread of the 2-core machine, against {} serially)",
         lambda run: [t(s(run("vm"), 4, "openmp")), t(s(run("vm"), 4))]),
        ("e5", "two threads gave {}x at 1024 for k2 s2 p0 (p = {}) but {}x at 2048 (p = {}), and {}x and {}x "
               "with overlapping windows",
         lambda run: [speedup(run("vm"), "k2s2p0", 1024, 2), fit(run("vm"), "k2s2p0", 1024)["p"],
                      speedup(run("vm"), "k2s2p0", 2048, 2), fit(run("vm"), "k2s2p0", 2048)["p"],
                      speedup(run("vm"), "k2s1p0", 1024, 2), speedup(run("vm"), "k2s1p0", 2048, 2)]),
        ("e5", "({}x, {}x, {}x and {}x on 2, 4, 8 and 16 threads, p = {})",
         lambda run: [speedup(run("h100"), "k2s2p0", 2048, n) for n in (2, 4, 8, 16)]
         + [fit(run("h100"), "k2s2p0", 2048)["p"]]),
        ("e5", "(k2 s2 p0 at 256: {}x on 2 threads, {}x on 4, {}x on 8; k2 s1 p0 at 2048: {}x on 8, {}x on 16)",
         lambda run: [speedup(run("h100"), "k2s2p0", 256, n) for n in (2, 4, 8)]
         + [speedup(run("h100"), "k2s1p0", 2048, n) for n in (8, 16)]),
        ("e5", "the fits at 1024 (p = {}, {} and {}) miss their points by a root mean square of {} to {}",
         lambda run: [fit(run("h100"), st, 1024)["p"] for st in ("k2s2p0", "k2s1p0", "k2s2p1")]
         + [min(fit(run("h100"), st, 1024)["rms"] for st in ("k2s2p0", "k2s1p0", "k2s2p1")),
            max(fit(run("h100"), st, 1024)["rms"] for st in ("k2s2p0", "k2s1p0", "k2s2p1"))]),
        ("e5", "(load average {} at the start of E5, {} at its end)",
         lambda run: [run("h100")["machine"]["load_average_at_start"], run("h100")["machine"]["load_average_at_end"]]),
    ]


def figures():
    return e5_figures()


def squash(text):
    """The page's prose with its line breaks and runs of spaces made single spaces."""
    return re.sub(r"\s+", " ", text)


def problems(page_text, load):
    """What the page's prose misquotes: one line per piece not found with today's figures.
    `load(exp, machine)` gives a run's payload, or None when the run is not there (its pieces are skipped)."""
    prose = squash(page_text)
    out = []
    for exp, piece, compute in figures():
        def run(machine, exp=exp):
            payload = load(exp, machine)
            if payload is None:
                raise Missing(machine)
            return payload
        try:
            values = compute(run)
        except Missing:
            continue
        except KeyError as e:
            out.append(f"{exp}: {e.args[0]}, which the page quotes in: {piece}")
            continue
        want = squash(piece.format(*values))
        if want not in prose:
            out.append(f"{exp}: the page should read \"{want}\" (from its runs in docs/figures/)")
    return out
