"""The figures docs/replication.md's own prose quotes from the runs' JSON, each checked against it.

The tables between the page's markers are generated; the paragraphs around them are written by
hand and quote the same runs. Each entry of FIGURES below names a run (experiment, machine), a
piece of the page's prose with {} where a figure stands, and how that figure is computed from the
run's JSON, formatted as the page writes it. `python3 tools/replicate.py --tables --check` fails
when a piece, with the figures the JSON gives today, is not in the page: a figure edited by hand,
or a JSON measured again without the prose that quotes it.

What is checked: the figures each experiment's prose quotes from the course's runs (E1 to E6, both
machines), and the ratios it computes from them. Not checked here: the studies' own figures (they
are the studies' tables, tools/replicate_lib/studies.py), the models' sizes and FLOPs of the setup
table, the counts of kernels that the lessons measure, and the dates and times of the runs.
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


def two_sig(x):
    """A large ratio to two significant digits, as the page writes it: 2092.6 -> 2,100."""
    return f"{float(f'{x:.2g}'):,.0f}"


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
        ("e5", "about {} µs a window, {} times the serial loop at 512 ({})",
         lambda run: [f"{s(run('h100'), 512, 'gpu_per_window') / 65536 * 1e6:.0f}",
                      two_sig(s(run("h100"), 512, "gpu_per_window") / s(run("h100"), 512)), t(s(run("h100"), 512))]),
        ("e5", "against the study's 5.18 s, {} to {} times less",
         lambda run: [two_sig(5.18 / s(run("h100"), 1024)), two_sig(5.18 / s(run("vm"), 1024))]),
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


def row_seconds(payload, stage, model, threads=None):
    """The seconds of a trainer's row (E1 to E4: stage, model and, for stage 03, threads)."""
    for r in payload.get("rows", []):
        if r.get("stage") == stage and r.get("model") == model and (threads is None or r.get("threads") == threads):
            if r.get("status") != "ok":
                break
            return r
    raise KeyError(f"no row of {stage} for {model}" + (f" on {threads} threads" if threads else ""))


def x2(a, b):
    return f"{a / b:.2f}"


def e1_figures():
    def sec(p, stage, model, threads=1):
        return row_seconds(p, stage, model, threads)["seconds"]

    def epochs(p, stage, model, threads=1):
        return [t(e) for e in row_seconds(p, stage, model, threads)["epoch_seconds"]]

    def omp(p, model, n):  # stage 03 on n threads against stage 03 on one
        return x2(sec(p, "03_openmp", model), sec(p, "03_openmp", model, n))

    def fit_p(p, model):
        return f"{next(f for f in p['fits'] if f['model'] == model)['fit']['p']:.3f}"

    return [
        ("e1", "the second thread gives {}x, {}x and {}x the speed of stage 03's own one thread (m0, m1, m2)",
         lambda run: [omp(run("vm"), m, 2) for m in ("m0", "m1", "m2")]),
        ("e1", "m0 runs {}x, {}x, {}x and {}x as fast on 2, 4, 8 and 16 threads as on one, m2 {}x, {}x, {}x and {}x",
         lambda run: [omp(run("h100"), m, n) for m in ("m0", "m2") for n in (2, 4, 8, 16)]),
        ("e1", "stage 02 over stage 03 is {}x for M0, against the thesis's 7.92x; on 16 threads it is {}x. That {}x "
               "is the product of two factors: {}x from the threads, and {}x because on that host stage 03 on one "
               "thread ran M0's epoch faster ({}) than stage 02 ({}); on the 2-core machine the two take the same "
               "time ({} and {})",
         lambda run: [x2(sec(run("h100"), "02_conv_pool", "m0"), sec(run("h100"), "03_openmp", "m0", 8)),
                      x2(sec(run("h100"), "02_conv_pool", "m0"), sec(run("h100"), "03_openmp", "m0", 16)),
                      x2(sec(run("h100"), "02_conv_pool", "m0"), sec(run("h100"), "03_openmp", "m0", 16)),
                      omp(run("h100"), "m0", 16),
                      x2(sec(run("h100"), "02_conv_pool", "m0"), sec(run("h100"), "03_openmp", "m0")),
                      t(sec(run("h100"), "03_openmp", "m0")), t(sec(run("h100"), "02_conv_pool", "m0")),
                      t(sec(run("vm"), "03_openmp", "m0")), t(sec(run("vm"), "02_conv_pool", "m0"))]),
        ("e1", "(m1 on stage 02: {}, then {}; m2 on stage 03 with one thread: {}, then {})",
         lambda run: epochs(run("h100"), "02_conv_pool", "m1") + epochs(run("h100"), "03_openmp", "m2")),
        ("e1", "(m1 {}x on 2 threads and {}x on 4, m2 {}x on 2) and m1's stage 02 / stage 03 of only {}x on 16 threads",
         lambda run: [omp(run("h100"), "m1", 2), omp(run("h100"), "m1", 4), omp(run("h100"), "m2", 2),
                      x2(sec(run("h100"), "02_conv_pool", "m1"), sec(run("h100"), "03_openmp", "m1", 16))]),
        ("e1", "M0's epoch takes {} on one core of the 2-core machine (AMD EPYC) and {} on one core of the H100 host "
               "(Intel Xeon) against the thesis's 101 s, {} and {} times less",
         lambda run: [t(sec(run("vm"), "02_conv_pool", "m0")), t(sec(run("h100"), "02_conv_pool", "m0")),
                      two_sig(101 / sec(run("vm"), "02_conv_pool", "m0")),
                      two_sig(101 / sec(run("h100"), "02_conv_pool", "m0"))]),
        ("e1", "1,000 images are 11 GFLOP: {} GFLOP/s on one EPYC core and {} GFLOP/s on one Xeon core",
         lambda run: [f"{11 / sec(run(m), '02_conv_pool', 'm0'):.0f}" for m in ("vm", "h100")]),
        ("e1", "The course's step takes {} ms (EPYC) to {} ms (Xeon) on one thread and {} ms on 16 (M0's {} for 32 "
               "batches)",
         lambda run: [f"{sec(run(m), '02_conv_pool', 'm0') / 32 * 1e3:.0f}" for m in ("vm", "h100")]
         + [f"{sec(run('h100'), '03_openmp', 'm0', 16) / 32 * 1e3:.0f}", t(sec(run("h100"), "03_openmp", "m0", 16))]),
        ("e1", "m2 (123,824 parameters for 7.13 MFLOP an image) fits p = {}, m0 (210,998 for 3.66 MFLOP) {} and m1 "
               "(326,198 for 5.71 MFLOP) {}. The 2-core machine's fits put the models in the same order (m2 {}, m0 "
               "{}, m1 {})",
         lambda run: [fit_p(run(m), model) for m in ("h100", "vm") for model in ("m2", "m0", "m1")]),
        ("e1", "(load average {} at the start)", lambda run: [run("vm")["machine"]["load_average_at_start"]]),
    ]


def e2_figures():
    def sec(p, stage, model, threads=None):
        return row_seconds(p, stage, model, threads)["seconds"]

    def vs_openmp(p, stage, model):
        return f"{row_seconds(p, stage, model)['speedup_vs_openmp']:.2f}"

    gpu = ("05_im2col_gemm", "06_cudnn", "08_fused")
    return [
        ("e2", "M0's epoch takes {} on stage 05 (CUDA), {} on stage 06 (cuDNN, with its CUDA graph) and {} on "
               "stage 08 (fused kernels), against {} for stage 03 on the host's 16 cores and {} for stage 02 on "
               "one: {}x, {}x and {}x stage 03's speed. M1 and M2 come in the same order (m1 {}x, {}x, {}x; "
               "m2 {}x, {}x, {}x)",
         lambda run: [t(sec(run("h100"), st, "m0")) for st in gpu]
         + [t(sec(run("h100"), "03_openmp", "m0")), t(sec(run("h100"), "02_conv_pool", "m0"))]
         + [vs_openmp(run("h100"), st, m) for m in ("m0", "m1", "m2") for st in gpu]),
        ("e2", "its stage 03 figure is the slower of its two epochs ({} after {}",
         lambda run: list(reversed([t(e) for e in row_seconds(run("h100"), "03_openmp", "m1")["epoch_seconds"]]))),
        ("e2", "(M0: {} on 2 threads)", lambda run: [t(sec(run("vm"), "03_openmp", "m0", 2))]),
        ("e2", "so M0's step takes {} ms on stage 05, {} ms on stage 06 and {} ms on stage 08",
         lambda run: [f"{sec(run('h100'), st, 'm0') / 32 * 1e3:.2g}" for st in gpu]),
        ("e2", "{} to {} TFLOP/s (11 GFLOP an epoch for M0; M2's 43 GFLOP run at {} to {} TFLOP/s)",
         lambda run: [f"{11e-3 / sec(run('h100'), st, 'm0'):.2g}" for st in ("05_im2col_gemm", "08_fused")]
         + [f"{43e-3 / sec(run('h100'), st, 'm2'):.2g}" for st in ("05_im2col_gemm", "08_fused")]),
        ("e2", "and takes {} times M0's epoch on stage 05, {} times on stage 06 and {} times on stage 08",
         lambda run: [x2(sec(run("h100"), st, "m1"), sec(run("h100"), st, "m0")) for st in gpu]),
    ]


def e3_figures():
    def sec(p, stage, model, variant=""):
        for r in p.get("rows", []):
            if r.get("stage") == stage and r.get("model") == model and (r.get("variant") or "") == variant:
                if r.get("status") == "ok":
                    return r["seconds"]
        raise KeyError(f"no row of {stage} for {model}" + (f" ({variant})" if variant else ""))

    def r5(p, model, variant):  # stage 05 / stage 06
        return sec(p, "05_im2col_gemm", model) / sec(p, "06_cudnn", model, variant)

    def steps(model):
        return 32 if model in ("m0", "m1") else 63  # the thesis's epochs at batch 32: 1,000 or 2,000 images

    def saved(p, model):  # what the graph saves stage 06 an epoch
        return sec(p, "06_cudnn", model, "graph off") - sec(p, "06_cudnn", model, "graph on")

    def grows(p, stage, variant):  # the epoch from m0 to m4
        return sec(p, stage, "m4", variant) / sec(p, stage, "m0", variant)

    models = ("m0", "m1", "m2", "m3", "m4")
    return [
        ("e3", "05 / 06 = {}x, {}x and {}x on m0, m1 and m2 (cuDNN takes {}, {} and {} times stage 05's time), and "
               "cuDNN is ahead from m3 on, {}x on m3 and {}x on m4",
         lambda run: [f"{r5(run('h100'), m, 'graph off'):.2f}" for m in ("m0", "m1", "m2")]
         + [f"{1 / r5(run('h100'), m, 'graph off'):.2f}" for m in ("m0", "m1", "m2")]
         + [f"{r5(run('h100'), m, 'graph off'):.2f}" for m in ("m3", "m4")]),
        ("e3", "takes nearly the same time for m2 and m3 ({} and {} ms an epoch of 63 steps)",
         lambda run: [t(sec(run("h100"), "06_cudnn", "m2", "graph off")).split()[0],
                      t(sec(run("h100"), "06_cudnn", "m3", "graph off")).split()[0]]),
        ("e3", "stage 05's epoch grows {} times ({} to {}), stage 06's {} times ({} to {})",
         lambda run: [f"{grows(run('h100'), '05_im2col_gemm', ''):.1f}",
                      t(sec(run("h100"), "05_im2col_gemm", "m0")), t(sec(run("h100"), "05_im2col_gemm", "m4")),
                      f"{grows(run('h100'), '06_cudnn', 'graph off'):.1f}",
                      t(sec(run("h100"), "06_cudnn", "m0", "graph off")).split()[0],
                      t(sec(run("h100"), "06_cudnn", "m4", "graph off"))]),
        ("e3", "cuDNN is ahead on every model, {}x to {}x",
         lambda run: [f"{min(r5(run('h100'), m, 'graph on') for m in models):.2f}",
                      f"{max(r5(run('h100'), m, 'graph on') for m in models):.2f}"]),
        ("e3", "It saves {} ms (m0) to {} ms (m4) an epoch, {} to {} ms a step",
         lambda run: [f"{saved(run('h100'), m) * 1e3:.3g}" for m in ("m0", "m4")]
         + [f"{f(saved(run('h100'), m) / steps(m) for m in models) * 1e3:.2f}" for f in (min, max)]),
        ("e3", "({}x on m1, {}x on m2): per step, stage 05 takes {} ms on m1 and {} ms on m2, while stage 06 goes from "
               "{} to {} ms",
         lambda run: [f"{r5(run('h100'), m, 'graph on'):.2f}" for m in ("m1", "m2")]
         + [f"{sec(run('h100'), '05_im2col_gemm', m) / steps(m) * 1e3:.2f}" for m in ("m1", "m2")]
         + [f"{sec(run('h100'), '06_cudnn', m, 'graph on') / steps(m) * 1e3:.2f}" for m in ("m1", "m2")]),
    ]


def e4_figures():
    def layer(p, name):
        for r in p.get("table", []):
            if r.get("layer") == name:
                return r
        raise KeyError(f"no layer '{name}' in E4's table")

    def ms(x):
        return f"{x:.3f}"

    def ratio(p, name):  # stage 05 / stage 06
        r = layer(p, name)
        return f"{r['stage05_ms'] / r['stage06_ms']:.2f}"

    def step_ms(p, stage):  # a profiled step: every row of the trainer's profile table
        return sum(v["forward_ms_per_batch"] + v["backward_ms_per_batch"] for v in p["layers"][stage].values())

    def conv_share(p, stage):
        convs = sum(v["forward_ms_per_batch"] + v["backward_ms_per_batch"]
                    for k, v in p["layers"][stage].items() if k.startswith("conv"))
        return f"{100 * convs / step_ms(p, stage):.0f}"

    def gap_ns(r):  # how much sooner cuDNN is done
        return (r["stage05_ms"] - r["stage06_ms"]) * 1e6

    def cudnn_wins(p):
        return str(sum(r["stage06_ms"] < r["stage05_ms"] for r in p["table"]))

    return [
        ("e4", "cuDNN (stage 06) is faster on {} of the {} figures here", lambda run: [cudnn_wins(run("h100")),
                                                                                   str(len(run("h100")["table"]))]),
        ("e4", "(pool forward 2 is a tie, {} ms on both, cuDNN ahead by {} ns)",
         lambda run: [ms(layer(run("h100"), "pool forward 2")["stage06_ms"]),
                      f"{gap_ns(layer(run('h100'), 'pool forward 2')):.0f}"]),
        ("e4", "cuDNN only conv forward 1 ({} against {} ms, {}x)",
         lambda run: [ms(layer(run("h100"), "conv forward 1")["stage06_ms"]),
                      ms(layer(run("h100"), "conv forward 1")["stage05_ms"]), ratio(run("h100"), "conv forward 1")]),
        ("e4", "05 / stage 06 = {}x here: {} against {} ms; 0.38x in the thesis), and the last block's forward is even "
               "here ({}x)",
         lambda run: [ratio(run("h100"), "conv backward 2"), ms(layer(run("h100"), "conv backward 2")["stage05_ms"]),
                      ms(layer(run("h100"), "conv backward 2")["stage06_ms"]), ratio(run("h100"), "conv forward 2")]),
        ("e4", "which stage 05 wins here ({} against {} ms, {}x), and the first block ({}x forward and {}x backward",
         lambda run: [ms(layer(run("h100"), "conv backward 1")["stage05_ms"]),
                      ms(layer(run("h100"), "conv backward 1")["stage06_ms"]), ratio(run("h100"), "conv backward 1"),
                      ratio(run("h100"), "conv forward 0"), ratio(run("h100"), "conv backward 0")]),
        ("e4", "a profiled step of m2 takes {} ms on stage 06 and {} ms on stage 05 (the trainers' profile tables), "
               "{}% and {}% of it in the three conv layers",
         lambda run: [ms(step_ms(run("h100"), "06_cudnn")), ms(step_ms(run("h100"), "05_im2col_gemm")),
                      conv_share(run("h100"), "06_cudnn"), conv_share(run("h100"), "05_im2col_gemm")]),
    ]


def e6_figures():
    def row(p, stage, tag):
        for r in p.get("rows", []):
            if r.get("stage") == stage and r.get("tag") == tag and r.get("status") == "ok":
                return r
        raise KeyError(f"no row of {stage} for {tag}")

    def sec(p, stage, tag="e6"):
        return row(p, stage, tag)["seconds"]

    def per_step_us(p, stage, tag="e6"):  # 3,000 rows at batch 64: 47 steps
        return f"{sec(p, stage, tag) / 47 * 1e6:.0f}"

    def acc(p, stage, tag):
        return f"{100 * row(p, stage, tag)['test_accuracy']:.2f}%"

    def mae(p, stage, tag):
        return f"{row(p, stage, tag)['mae']:.4f}"

    wide = "e6-256-256"
    return [
        ("e6", "stage 04 takes {} an epoch of 3,000 rows against stage 01's {} on one core of the host: {}x",
         lambda run: [t(sec(run("h100"), "04_cuda_matmul")), t(sec(run("h100"), "01_fc_softmax")),
                      f"{run('h100')['speedups']['12,16,8,3']:.2f}"]),
        ("e6", "an epoch is 47 steps, {} µs a step on the GPU against {} µs on one Xeon core ({} µs on one EPYC "
               "core of the 2-core machine: {} an epoch)",
         lambda run: [per_step_us(run("h100"), "04_cuda_matmul"), per_step_us(run("h100"), "01_fc_softmax"),
                      per_step_us(run("vm"), "01_fc_softmax"), t(sec(run("vm"), "01_fc_softmax"))]),
        ("e6", "Both stages learn the same thing: {} test accuracy and test MAE {} after 5 epochs on both",
         lambda run: [acc(run("h100"), "04_cuda_matmul", "e6"), mae(run("h100"), "04_cuda_matmul", "e6")]),
        ("e6", "Stage 01's epoch grows {}-fold, to {}; stage 04's barely moves, {} to {}",
         lambda run: [f"{sec(run('h100'), '01_fc_softmax', wide) / sec(run('h100'), '01_fc_softmax'):.0f}",
                      t(sec(run("h100"), "01_fc_softmax", wide)), t(sec(run("h100"), "04_cuda_matmul")),
                      t(sec(run("h100"), "04_cuda_matmul", wide))]),
        ("e6", "its launches still set its time: {}x", lambda run: [f"{run('h100')['speedups']['12,256,256,3']:.2f}"]),
        ("e6", "takes {} times as long as the 2-core machine's EPYC core on stage 01 here ({} against {})",
         lambda run: [f"{sec(run('h100'), '01_fc_softmax', wide) / sec(run('vm'), '01_fc_softmax', wide):.2g}",
                      t(sec(run("h100"), "01_fc_softmax", wide)), t(sec(run("vm"), "01_fc_softmax", wide))]),
        ("e6", "({} and {}, test MAE {} and {})",
         lambda run: [acc(run("h100"), "01_fc_softmax", wide), acc(run("h100"), "04_cuda_matmul", wide),
                      mae(run("h100"), "01_fc_softmax", wide), mae(run("h100"), "04_cuda_matmul", wide)]),
    ]


def figures():
    return e1_figures() + e2_figures() + e3_figures() + e4_figures() + e5_figures() + e6_figures()


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
