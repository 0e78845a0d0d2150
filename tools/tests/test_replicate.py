"""Tests of tools/replicate.py (the studies' experiments, docs/replication.md): the studies' figures
against the code that defines the models, the reading of trainer runs, the Amdahl fits and crossovers,
the pooling study's analysis, the tables and charts on canned payloads, the doc's generated blocks,
and a tiny real run of the CPU experiments on the trainers of COMPARE_BUILD_DIR (build/ci by default),
skipped with the reason where they are not built.

    python3 -m unittest tools/tests/test_replicate.py
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
from unittest import mock
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import replicate  # noqa: E402
from compare_lib.runs import Run  # noqa: E402
from replicate_lib import charts, doc, experiments, pooling, prose, studies, tables  # noqa: E402

SVG_NS = "{http://www.w3.org/2000/svg}"
MACHINE = {"cpu": "AMD EPYC", "cpu_family": "25", "cpu_model_number": "1", "cpu_vector": "AVX2", "cores": 2, "memory_gib": 23.5, "os": "Debian GNU/Linux 12 (bookworm)",
           "gpu": "none (no usable GPU)", "build_dir": "build/ci", "build_type": "Release", "git": "abc1234",
           "load_average_at_start": 0.5, "load_average_at_end": 0.7}


def row(stage, model, seconds, status="ok", threads=1, gpu=False, reason="", **more):
    r = {"stage": stage, "model": model, "status": status, "reason": reason, "device": "CPU", "gpu": gpu,
         "threads": threads, "seconds": seconds if status == "ok" else None, "seconds_taken_as": "the last of 2 epochs",
         "epoch_seconds": [seconds, seconds] if status == "ok" else [], "images": 1000 if status == "ok" else None,
         "test_accuracy": 0.5 if status == "ok" else None, "command": [], "log": "", "tag": ""}
    r.update(more)
    return r


def payload(exp, **result):
    return {"experiment": exp, "title": doc.TITLES[exp], "date": "2026-11-27T12:00:00+00:00",
            "command": "python3 tools/replicate.py", "machine": MACHINE, "settings": {"images": None}, **result}


def canned_e1():
    base = {m: row("02_conv_pool", m, s) for m, s in (("m0", 4.0), ("m1", 6.0))}
    rows, fits = [], []
    for m in ("m0", "m1"):
        series = [row("03_openmp", m, base[m]["seconds"] * 1.05 / n ** 0.9, threads=n) for n in (1, 2, 4)]
        fits.append(experiments.threads_fit(m, base[m], series))
        rows += [base[m]] + series
    return payload("e1", rows=rows, fits=fits, thread_counts=[1, 2, 4], parallel="data")


def canned_pool():
    """What s05_pool_study writes for two sizes, with the GPU."""
    rows = []
    for n, serial, omp1, omp2, kern, copies, window in ((4, 3e-8, 1e-6, 5e-6, 3e-6, 2e-5, 6e-5),
                                                        (1024, 1e-3, 1.1e-3, 0.6e-3, 1e-5, 8e-4, 4.0)):
        for method, threads, s in (("serial", 1, serial), ("openmp", 1, omp1), ("openmp", 2, omp2),
                                   ("gpu_kernel", 1, kern), ("gpu_with_transfers", 1, copies),
                                   ("gpu_per_window", 1, window)):
            rows.append({"setting": "k2s2p0", "K": 2, "S": 2, "P": 0, "N": n, "outputs": (n // 2) ** 2,
                         "method": method, "threads": threads, "status": "ok", "seconds": s, "runs": 5,
                         "calls_per_run": 1, "matches_stage02": True})
    data = {"program": "s05_pool_study", "cores": 2, "threads": [1, 2], "sizes": [4, 1024],
            "gpu": {"status": "ok", "device": "NVIDIA H100 80GB HBM3 (sm_90)", "context_seconds": 0.3},
            "settings": [{"setting": "k2s2p0", "K": 2, "S": 2, "P": 0, "status": "ok", "reason": ""},
                         {"setting": "k2s2p2", "K": 2, "S": 2, "P": 2, "status": "refused",
                          "reason": "the padding must be smaller than the window"}],
            "rows": rows}
    data["analysis"] = pooling.analyse(data)
    return payload("e5", **data)


def markdown_tables_are_whole(lines, test):
    """Every Markdown table has the same number of cells in each of its lines."""
    block = []
    for line in lines + [""]:
        if line.startswith("|"):
            block.append(line.count("|"))
        elif block:
            test.assertEqual(len(set(block)), 1, f"a table with ragged lines: {block}")
            block = []


class TheStudiesFigures(unittest.TestCase):
    def test_the_thesis_models_are_those_of_arch_cpp(self):
        text = (ROOT / "common" / "model" / "arch.cpp").read_text()
        found = re.findall(r'\{"(m\d)",.*?Shape3\{(\d+), (\d+), (\d+)\}, TrainingRecipe\{(\d+), (\d+), ([0-9.e-]+)\}\}',
                           text, re.S)
        self.assertEqual([f[0] for f in found], list(studies.THESIS_MODELS))
        for name, c, h, w, batch, images, lr in found:
            m = studies.THESIS_MODELS[name]
            self.assertEqual(m["input"], (int(c), int(h), int(w)), name)
            self.assertEqual((m["batch"], m["images"]), (int(batch), int(images)), name)
            self.assertAlmostEqual(m["lr"], float(lr), msg=name)
        # The FLOPs are arch.hpp's table.
        table = (ROOT / "common" / "model" / "arch.hpp").read_text()
        for name, m in studies.THESIS_MODELS.items():
            self.assertIn(f"{m['flops']:,}", table, name)

    def test_the_implied_parallel_fraction(self):
        p = studies.implied_parallel_fraction(101 / 12.76, 8)
        self.assertAlmostEqual(1 / ((1 - p) + p / 8), 101 / 12.76)
        self.assertAlmostEqual(p, 0.99847, places=4)

    def test_table51_has_every_layer_once(self):
        keys = [(k, i, d) for k, i, d, _, _ in studies.THESIS_TABLE51]
        self.assertEqual(len(set(keys)), 12)
        self.assertEqual(sum(1 for *_, cudnn, cuda in studies.THESIS_TABLE51 if cuda > cudnn), 9)
        self.assertEqual(studies.table51_layer("conv", 0), "conv1")


class ReadingRuns(unittest.TestCase):
    def test_a_cpu_figure_is_the_last_epoch_and_a_gpu_figure_the_median_after_the_first(self):
        run = Run(stage="05_im2col_gemm", model="m0", status="ok", epoch_seconds=[0.9, 0.2, 0.3, 0.1])
        self.assertEqual(experiments.figure_seconds(run, gpu=True), (0.2, "median of epochs 2-4"))
        self.assertEqual(experiments.figure_seconds(run, gpu=False), (0.1, "the last of 4 epochs"))
        one = Run(stage="02_conv_pool", model="m0", status="ok", epoch_seconds=[0.5])
        self.assertEqual(experiments.figure_seconds(one, gpu=True), (0.5, "one epoch"))

    def test_the_thesis_models_get_their_recipe_and_input(self):
        self.assertEqual(experiments.model_args("m0"), ["--lr", "0.001", "--resize", "32x32", "--channels", "3"])
        self.assertEqual(experiments.model_args("m2")[:2], ["--lr", "1e-05"])
        stages = experiments.stage_table(ROOT)
        self.assertTrue(stages["05_im2col_gemm"].can_run("m4"))
        self.assertFalse(stages["01_fc_softmax"].can_run("m0"))
        self.assertNotIn("09_multi_gpu", {s for s, st in stages.items() if st.gpus > 1})

    def test_thread_fits(self):
        e1 = canned_e1()
        fit = next(f for f in e1["fits"] if f["model"] == "m0")
        self.assertGreater(fit["fit"]["p"], 0.85)
        self.assertEqual(fit["most_threads"], 4)
        self.assertAlmostEqual(fit["speedup_at_most_threads"], 4 ** 0.9 / 1.05)
        self.assertAlmostEqual(fit["thesis"]["speedup"], 101 / 12.76)
        self.assertNotIn("thesis", next(f for f in e1["fits"] if f["model"] == "m1"))
        r2 = next(r for r in e1["rows"] if r["model"] == "m0" and r["threads"] == 2 and r["stage"] == "03_openmp")
        self.assertAlmostEqual(r2["speedup_vs_1_thread"], 2 ** 0.9)

    def test_the_crossover(self):
        def rows(ratios):
            out = []
            for m, r in zip(studies.FIG54_MODELS, ratios):
                out.append({**row("05_im2col_gemm", m, r, gpu=True), "variant": ""})
                for v in ("graph on", "graph off"):
                    out.append({**row("06_cudnn", m, 1.0, gpu=True), "variant": v})
            return out
        c = experiments.crossover(rows([0.8, 0.9, 1.2, 1.5, 3.0]), studies.FIG54_MODELS)
        self.assertEqual(c["graph on"]["verdict"], "between m1 and m2")
        self.assertEqual(experiments.crossover(rows([1.2] * 5), studies.FIG54_MODELS)["graph off"]["verdict"],
                         "none: cuDNN ahead on every model")
        self.assertEqual(experiments.crossover(rows([0.5] * 5), studies.FIG54_MODELS)["graph on"]["verdict"],
                         "none: stage 05 ahead on every model")
        skipped = [{**row("05_im2col_gemm", m, 0, status="skipped", gpu=True), "variant": ""}
                   for m in studies.FIG54_MODELS]
        self.assertEqual(experiments.crossover(skipped, studies.FIG54_MODELS)["graph on"]["verdict"], "not measured")

    def test_the_tabular_shape(self):
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / "train.csv").write_text("a,b,c,label\n0.1,0.2,0.3,0\n0.4,0.5,0.6,2\n")
            (Path(d) / "test.csv").write_text("0.1,0.2,0.3,1\n")
            self.assertEqual(experiments.tabular_shape(d), (3, 3))

    def test_a_trainer_that_refuses_the_practices_flags_is_a_skip(self):
        with tempfile.TemporaryDirectory() as d:
            log = Path(d) / "01.log"
            log.write_text("$ s01 ...\n--- stderr\nerror: The following arguments were not expected: sigmoid --output\n"
                           "Run with --help for the options.\n")
            run = Run(stage="01_fc_softmax", model="mlp", status="error", exit_code=2, log=str(log))
            self.assertEqual(experiments.flags_refused(run),
                             "The following arguments were not expected: sigmoid --output")
            run.exit_code = 1
            self.assertEqual(experiments.flags_refused(run), "")

    def test_the_targets_built(self):
        self.assertEqual(replicate.targets_for("e1", False), ["s02_train_solution", "s03_train_solution"])
        self.assertEqual(replicate.targets_for("e5", False), ["s03_pool_study"])
        self.assertIn("s05_pool_study", replicate.targets_for("e5", True))
        everything = replicate.targets_for("", False)
        self.assertFalse(set(everything) & replicate.GPU_TARGETS)
        self.assertIn("s01_train_solution", everything)


class PoolingAnalysis(unittest.TestCase):
    def test_the_step_from_the_study_splits_into_method_language_and_machine(self):
        data = canned_pool()
        for method, s in (("study_serial", 6e-3), ("study_numpy", 0.6)):
            data["rows"].append({**data["rows"][0], "N": 1024, "method": method, "seconds": s})
        data["numpy"] = {"status": "ok", "numpy": "1.24.2", "python": "3.11.2"}
        [line] = tables.study_steps(data)
        self.assertIn("stage 02's loop, 6.00x", line)          # 6 ms / 1 ms
        self.assertIn("it in C++, 100x", line)                   # 0.6 s / 6 ms
        self.assertIn("5.1822 s on n49 against the course's NumPy figure, 8.64x", line)
        self.assertIn("together 5,182x", line)
        text = "\n".join(tables.e5(data))
        self.assertIn("| the study's way, C++ | the study's way, NumPy |", text)
        self.assertIn("NumPy 1.24.2 on Python 3.11.2", text)


    def test_amdahl_and_where_each_way_wins(self):
        data = canned_pool()
        a = data["analysis"]["k2s2p0"]
        self.assertNotIn("k2s2p2", data["analysis"])
        fit = a["amdahl"]["1024"]
        speedup = 1.1e-3 / 0.6e-3
        self.assertAlmostEqual(fit["p"], studies.implied_parallel_fraction(speedup, 2), places=6)
        self.assertEqual(a["beats_serial"]["openmp"]["from_size"], 1024)
        self.assertEqual(a["beats_serial"]["gpu_kernel"]["from_size"], 1024)
        self.assertEqual(a["beats_serial"]["gpu_with_transfers"]["from_size"], 1024)
        self.assertTrue(a["beats_serial"]["gpu_per_window"]["never"])
        self.assertEqual(pooling.best_openmp(data, "k2s2p0", 1024), (0.6e-3, 2))
        self.assertEqual(tables.study_steps(data), [], "no line without the study's way in C++ and in NumPy")
        self.assertEqual(pooling.study_points("serial")[0], (4, 0.0004))
        self.assertEqual(pooling.study_points("serial")[-1], (1024, 5.1822))
        self.assertEqual(len(pooling.study_points("serial")), 9)  # n49, N = 4 ... 1024


class Tables(unittest.TestCase):
    def test_every_experiment_renders(self):
        e3_rows = []
        for m in studies.FIG54_MODELS:
            e3_rows.append({**row("05_im2col_gemm", m, 0.1, gpu=True), "variant": "", "flops": 1})
            e3_rows.append({**row("06_cudnn", m, 0.05, gpu=True), "variant": "graph on", "flops": 1})
            e3_rows.append({**row("06_cudnn", m, 0.2, gpu=True), "variant": "graph off", "flops": 1})
        canned = {
            "e1": canned_e1(),
            "e2": payload("e2", stages=list(experiments.E2_STAGES), rows=[
                row("02_conv_pool", "m0", 4.0), row("03_openmp", "m0", 1.0, threads=4),
                row("05_im2col_gemm", "m0", 0.05, gpu=True, speedup_vs_openmp=20.0),
                row("06_cudnn", "m0", None, status="skipped", gpu=True, reason="no usable GPU"),
                row("08_fused", "m0", None, status="skipped", gpu=True, reason="no usable GPU")]),
            "e3": payload("e3", rows=e3_rows, models=list(studies.FIG54_MODELS),
                          crossover=experiments.crossover(e3_rows, studies.FIG54_MODELS)),
            "e4": payload("e4", model="m2", rows=[], table=[
                {"layer": f"{k} {d} {i}", "course_layer": studies.table51_layer(k, i), "direction": d,
                 "thesis_cudnn_ms": a, "thesis_cuda_ms": b, "stage06_ms": 0.01, "stage05_ms": 0.02}
                for k, i, d, a, b in studies.THESIS_TABLE51]),
            "e5": canned_pool(),
            "e6": payload("e6", status="skipped", reason="tools/make_tabular.py is not in this checkout", rows=[],
                          flags=experiments.PRACTICE_FLAGS, epochs=3, batch=32, lr=0.05),
        }
        for exp, p in canned.items():
            lines = tables.experiment_lines(exp, p)
            text = "\n".join(lines)
            markdown_tables_are_whole(lines, self)
            self.assertIn("- Measured on: AMD EPYC (family 25, model 1; AVX2), 2 cores", text, exp)
            self.assertIn("- Command: `python3 tools/replicate.py`", text, exp)
        expected = {  # what each experiment's table says of the canned runs
            "e1": ["101 s; 12.76 s on 8 thr (7.92x, p = 0.998)", "| m1 (3x40x40) ", "not transcribed"],
            "e2": ["50 ms (20.00x)", "Stages 06, 08 skipped: no usable GPU."],
            "e3": ["none: cuDNN ahead on every model", "none: stage 05 ahead on every model",
                   "|              2.00x |               0.50x |"],
            "e4": ["| conv backward 1 (conv2) "],
            "e5": ["**k2 s2 p2**: refused by every stage", "5.1822 s", "396.7 s", "N = 1,024",
                   "0.0015x",  # 3e-8 s / 2e-5 s at N = 4
                   "1.25x",    # 1e-3 s / 8e-4 s at 1024
                   "never"],
        }
        for exp, texts in expected.items():
            table = "\n".join(getattr(tables, exp)(canned[exp]))
            for text in texts:
                self.assertIn(text, table, exp)
        self.assertIn("Not run: tools/make_tabular.py", "\n".join(tables.experiment_lines("e6", canned["e6"])))
        self.assertEqual(doc.headline("e6", canned["e6"]), "not run: tools/make_tabular.py is not in this checkout")
        one_stage = payload("e6", status="partial", speedup=None, rows=[
            row("01_fc_softmax", "mlp", 1.38e-3),
            row("04_cuda_matmul", "mlp", None, status="skipped", gpu=True,
                reason="no usable GPU (this machine has no NVIDIA driver)")])
        self.assertEqual(doc.headline("e6", one_stage), "stage 01: 1.38 ms an epoch; stage 04 skipped: no usable GPU")
        base = row("02_conv_pool", "m0", 4.0)
        series = [row("03_openmp", "m0", 4.0 / n, threads=n) for n in (1, 2, 4, 8, 16)]
        sweep = payload("e1", rows=[base] + series, fits=[experiments.threads_fit("m0", base, series)],
                        thread_counts=[1, 2, 4, 8, 16], parallel="data")
        self.assertEqual(doc.headline("e1", sweep), "M0: 4 s an epoch on 1 thread, 0.5 s on 8 (8.00x), 0.25 s on 16 (16.00x)")
        self.assertEqual(doc.STUDY_HEADLINES["e4"], "cuDNN faster on 9 of 12 layers (4 of 6 conv, 5 of 6 pool)")
        for exp, p in canned.items():
            picture = charts.chart(exp, p)
            if exp in ("e1", "e2", "e3", "e4", "e5"):
                self.assertIsNotNone(picture, exp)
                ET.fromstring(picture.encode())
        root = ET.fromstring(charts.chart("e5", canned["e5"]).encode())
        studied = {e.get("data-study") for e in root.iter(SVG_NS + "polyline") if e.get("data-study")}
        self.assertEqual(studied, {"serial", "gpu"})
        root = ET.fromstring(charts.chart("e3", canned["e3"]).encode())
        self.assertEqual(len([e for e in root.iter(SVG_NS + "rect") if e.get("class") == "bar"]), 10)

    def test_seconds_read_as_a_person_reads_them(self):
        self.assertEqual([tables.fmt_s(x) for x in (101.0, 2.314, 0.456, 0.0123, 4.56e-5, 2.7e-8, None)],
                         ["101 s", "2.31 s", "0.456 s", "12.3 ms", "45.6 us", "27 ns", "-"])


class TheDoc(unittest.TestCase):
    def test_blocks_are_written_between_their_markers_and_checked(self):
        # A page of markers alone: no prose to quote the runs (the prose check has its own test below).
        with tempfile.TemporaryDirectory() as d, mock.patch.object(prose, "figures", lambda: []):
            figures = Path(d) / "figures"
            figures.mkdir()
            (figures / "replication_vm_e1.json").write_text(json.dumps(canned_e1()))
            page = Path(d) / "replication.md"
            markers = ["summary"] + [f"{e}:{m}" for e in doc.EXPERIMENTS for m in doc.MACHINES]
            page.write_text("# page\n\nprose stays\n" +
                            "".join(f"<!-- replication:{n} -->\nold\n<!-- /replication:{n} -->\n" for n in markers))
            self.assertEqual(doc.write(check=True, doc=page, figures=figures), 1)
            self.assertEqual(doc.write(doc=page, figures=figures), 0)
            text = page.read_text()
            self.assertIn("prose stays", text)
            self.assertNotIn("\nold\n", text)
            self.assertIn("| m0 (3x32x32) ", text)
            self.assertIn("*To be measured on the GPU machine (H100)", text)
            self.assertIn("M0: 4 s an epoch on 1 thread", text)
            self.assertEqual(doc.write(check=True, doc=page, figures=figures), 0)
            page.write_text(text.replace("<!-- /replication:e6:h100 -->", ""))
            self.assertEqual(doc.write(check=True, doc=page, figures=figures), 1)

    def test_the_committed_page_matches_its_json(self):
        self.assertEqual(doc.write(check=True), 0, "python3 tools/replicate.py --tables rewrites docs/replication.md")

    def test_a_prose_figure_that_differs_from_its_json_fails_the_check(self):
        # The committed page and its JSON, with one figure of E5's prose changed by hand (2.26 ms to 2.27 ms):
        # the tables are still as generated, so only the prose check can catch it.
        text = doc.DOC.read_text()
        self.assertEqual(prose.problems(text, lambda exp, machine: doc.load(machine, exp)), [])
        planted = text.replace("At 1024 stage 02's loop takes 2.26 ms", "At 1024 stage 02's loop takes 2.27 ms", 1)
        self.assertNotEqual(planted, text, "the planted sentence is no longer in the page: plant another")
        with tempfile.TemporaryDirectory() as d:
            page = Path(d) / "replication.md"
            page.write_text(planted)
            self.assertEqual(doc.write(check=True, doc=page), 1)
            found = prose.problems(planted, lambda exp, machine: doc.load(machine, exp))
            self.assertEqual(len(found), 1, found)
            self.assertIn("At 1024 stage 02's loop takes 2.26 ms (EPYC)", found[0])
        # A run that is not measured yet leaves its pieces unchecked rather than failing them.
        self.assertEqual(prose.problems(planted, lambda exp, machine: None), [])


FAKE_TRAINER = r"""#!/usr/bin/env python3
# A stand-in for a GPU stage's trainer (the tests' machine has no GPU): writes what a trainer's --json holds,
# with seconds that grow with the model's work, stage 05 ahead on the small models and cuDNN on the large.
import json, sys
a = sys.argv[1:]
opt = lambda name, default=None: a[a.index(name) + 1] if name in a else default
stage = sys.argv[0].rsplit("/", 1)[1][1:3]
model, images, epochs = opt("--model"), int(opt("--limit", "0")) or 60000, int(opt("--epochs", "1"))
work = {"m0": 1.0, "m1": 1.6, "m2": 2.0, "m3": 7.0, "m4": 33.0}.get(model, 1.0)
graph = opt("--graph", "on") == "on" and stage in ("06", "08")
seconds = {"05": 0.010 + 0.004 * work, "06": (0.004 if graph else 0.014) + 0.002 * work, "08": 0.003 + 0.001 * work,
           "04": 0.002, "01": 0.05}[stage]
out = {"stage": {"id": stage}, "device": "FAKE GPU (sm_90)", "threads": 1, "status": "ok",
       "data": {"dataset": "fashion-mnist", "note": "fashion-mnist: 60000 train, 10000 test images; training on the "
                "first %d examples (--limit)" % images, "synthetic_fallback": False, "train_examples": images},
       "epochs": [{"epoch": i + 1, "seconds": seconds * (3 if i == 0 else 1), "images_per_second": images / seconds,
                   "test_accuracy": 0.5} for i in range(epochs)]}
if "--profile" in a:
    out["profile"] = {"batch": 32, "layers": [
        {"layer": "%s%d (x)" % (kind, i), "forward_ms_per_batch": 0.01 * i * (2 if stage == "05" else 1),
         "backward_ms_per_batch": 0.03 * i * (2 if stage == "05" else 1)} for kind in ("conv", "pool", "relu")
        for i in (1, 2, 3)]}
json.dump(out, open(opt("--json"), "w"))
print("epoch 1/%d" % epochs)
"""

FAKE_POOL = r"""#!/usr/bin/env python3
# A stand-in for s05_pool_study on a GPU: every way of pooling, with made-up seconds.
import json, sys
a = sys.argv[1:]
opt = lambda name, default=None: a[a.index(name) + 1] if name in a else default
sizes = [int(s) for s in opt("--sizes").split(",")]
threads = [int(s) for s in opt("--threads", "1,2").split(",")]
rows, settings = [], []
for s in opt("--settings").split(","):
    k, rest = s[1:].split("s"); st, p = rest.split("p")
    ok = int(p) < int(k)
    settings.append({"setting": s, "K": int(k), "S": int(st), "P": int(p), "status": "ok" if ok else "refused",
                     "reason": "" if ok else "the padding must be smaller than the window"})
    if not ok:
        continue
    for n in sizes:
        w = (n // int(st)) ** 2
        ways = [("serial", 1, 1e-9 * n * n)] + [("openmp", t, 1e-6 + 1e-9 * n * n / t) for t in threads] +                [("gpu_kernel", 1, 3e-6 + 1e-12 * n * n), ("gpu_with_transfers", 1, 2e-5 + 1e-9 * n * n / 4)]
        for m, t, sec in ways:
            rows.append({"setting": s, "N": n, "method": m, "threads": t, "status": "ok", "seconds": sec,
                         "matches_stage02": True})
        if w <= int(opt("--per-window-max", "70000")):
            rows.append({"setting": s, "N": n, "method": "gpu_per_window", "threads": 1, "status": "ok",
                         "seconds": 1.5e-5 * w, "matches_stage02": True})
        else:
            rows.append({"setting": s, "N": n, "method": "gpu_per_window", "threads": 1, "status": "not timed",
                         "reason": "above --per-window-max"})
json.dump({"program": "s05_pool_study", "cores": 2, "threads": threads, "sizes": sizes,
           "gpu": {"status": "ok", "reason": "", "device": "FAKE GPU (sm_90)", "context_seconds": 0.25},
           "settings": settings, "rows": rows}, open(opt("--json"), "w"))
"""


class GpuPathsWithStandIns(unittest.TestCase):
    """The GPU experiments' code paths (E2's GPU rows, E3's crossover, E4's layers, E5's GPU ways, E6) on
    stand-in programs that write what the real ones write: the tests' machine has no GPU."""

    def test_the_gpu_experiments(self):
        with tempfile.TemporaryDirectory() as d:
            bins = Path(d) / "build" / "bin"
            bins.mkdir(parents=True)
            for name in ("s01_train_solution", "s04_train_solution", "s05_train_solution", "s06_train_solution",
                         "s08_train_solution"):
                (bins / name).write_text(FAKE_TRAINER)
            (bins / "s05_pool_study").write_text(FAKE_POOL)
            for f in bins.iterdir():
                f.chmod(0o755)
            out = Path(d) / "out"
            proc = subprocess.run(
                [sys.executable, str(ROOT / "tools" / "replicate.py"), "--build-dir", str(bins.parent), "--out",
                 str(out), "--only", "e2,e3,e4,e5", "--models", "m0,m2", "--pool-sizes", "4,64,1024",
                 "--pool-threads", "1,2"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                env=dict(os.environ, COURSE_ASSUME_GPU="1"))
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            e2 = json.loads((out / "e2.json").read_text())
            by = {(r["model"], r["stage"]): r for r in e2["rows"]}
            self.assertEqual(by[("m0", "05_im2col_gemm")]["status"], "ok")
            self.assertAlmostEqual(by[("m0", "05_im2col_gemm")]["seconds"], 0.014)   # epochs 2-3, not the first
            self.assertEqual(by[("m0", "05_im2col_gemm")]["seconds_taken_as"], "median of epochs 2-3")
            self.assertEqual(by[("m2", "02_conv_pool")]["status"], "skipped")         # not built in the stand-in
            e3 = json.loads((out / "e3.json").read_text())
            self.assertEqual(len(e3["rows"]), 15)
            self.assertEqual(e3["crossover"]["graph off"]["verdict"], "between m2 and m3")
            self.assertEqual(e3["crossover"]["graph on"]["verdict"], "none: cuDNN ahead on every model")
            e4 = json.loads((out / "e4.json").read_text())
            conv1 = next(r for r in e4["table"] if r["layer"] == "conv backward 0")
            self.assertAlmostEqual(conv1["stage05_ms"], 0.06)
            self.assertAlmostEqual(conv1["stage06_ms"], 0.03)
            e5 = json.loads((out / "e5.json").read_text())
            self.assertEqual(e5["gpu"]["status"], "ok")
            self.assertIn("--per-window-max", e5["program_command"])
            gpu = e5["analysis"]["k2s2p0"]["beats_serial"]
            self.assertEqual(gpu["gpu_kernel"]["from_size"], 64)
            self.assertTrue(gpu["gpu_per_window"]["never"])
            for exp in ("e2", "e3", "e4", "e5"):
                ET.fromstring((out / f"{exp}.svg").read_bytes())
                lines = tables.experiment_lines(exp, json.loads((out / f"{exp}.json").read_text()))
                markdown_tables_are_whole(lines, self)
            e5_text = "\n".join(tables.e5(e5))
            self.assertIn("GPU kernel + copies", e5_text)
            self.assertIn("the first CUDA call of the program (creating its context) took 0.25 s", e5_text)
            e3_head = doc.headline("e3", json.loads((out / "e3.json").read_text()))
            self.assertTrue(e3_head.startswith("05 / 06, graph off (like for like) 0.88x to "), e3_head)
            self.assertIn(", crossover between m2 and m3; graph on 2.03x to 2.33x, cuDNN ahead on every model", e3_head)
            self.assertEqual(doc.headline("e4", e4), "cuDNN faster on 12 of 12 layers (6 of 6 conv, 6 of 6 pool)")


FAKE_TABULAR = r"""#!/usr/bin/env python3
import sys
from pathlib import Path
out = Path(sys.argv[sys.argv.index("--out") + 1])
out.mkdir(parents=True, exist_ok=True)
(out / "train.csv").write_text("".join(f"{i % 7 / 7},{i % 5 / 5},{i % 3 / 3},{i % 2 / 2},{i % 3}\n" for i in range(90)))
(out / "test.csv").write_text("".join(f"{i % 5 / 5},{i % 7 / 7},{i % 2 / 2},{i % 3 / 3},{i % 3}\n" for i in range(30)))
"""

REFUSING_TRAINER = """#!/bin/sh
echo "error: The following arguments were not expected: sigmoid --output" >&2
echo "Run with --help for the options." >&2
exit 2
"""


class ThePracticesNetwork(unittest.TestCase):
    """E6 on stand-ins: the tabular set's shape makes --layers, MAE is read, a trainer without the practice's
    flags is a skip with its words."""

    def run_e6(self, trainer, gpu=True):
        d = Path(self.enterContext(tempfile.TemporaryDirectory()))
        bins = d / "build" / "bin"
        bins.mkdir(parents=True)
        for name in ("s01_train_solution", "s04_train_solution"):
            (bins / name).write_text(trainer)
            (bins / name).chmod(0o755)
        script = d / "make_tabular.py"
        script.write_text(FAKE_TABULAR)
        ctx = experiments.Context(root=ROOT, build_dir=bins.parent, out_dir=d / "out", gpu_usable=gpu,
                                  gpu_reason="" if gpu else "no usable GPU", progress=lambda *_: None)
        return experiments.e6_practice(ctx, experiments.stage_table(ROOT), script=script)

    def test_both_stages_train_the_practices_network(self):
        fake = FAKE_TRAINER.replace('"test_accuracy": 0.5}', '"test_accuracy": 0.5, "test_mae": 0.125}')
        e6 = self.run_e6(fake)
        self.assertEqual(e6["status"], "ok", e6)
        self.assertEqual(e6["layers"], "4,16,8,3")
        self.assertAlmostEqual(e6["speedup"], 0.05 / 0.002)
        self.assertEqual(e6["rows"][0]["seconds_taken_as"], "median of epochs 2-5")
        self.assertEqual([r["mae"] for r in e6["rows"]], [0.125] * 4)  # two stages, two networks
        self.assertEqual(e6["networks"], ["4,16,8,3", "4,256,256,3"])
        self.assertEqual([r["layers"] for r in e6["rows"]], ["4,16,8,3"] * 2 + ["4,256,256,3"] * 2)
        self.assertIn("--output", e6["rows"][0]["command"])
        self.assertEqual(e6["rows"][0]["command"][e6["rows"][0]["command"].index("--dataset") + 1], "csv")
        text = "\n".join(tables.e6(payload("e6", **e6)))
        self.assertIn("Stage 04 over stage 01: 25.00x on `4,16,8,3`, 25.00x on `4,256,256,3`.", text)
        markdown_tables_are_whole(text.splitlines(), self)

    def test_a_trainer_without_the_flags_is_skipped_with_its_words(self):
        e6 = self.run_e6(REFUSING_TRAINER, gpu=False)
        self.assertEqual(e6["status"], "skipped")
        self.assertEqual(e6["rows"][0]["reason"], "this trainer does not take the practice's flags yet (The following "
                                                  "arguments were not expected: sigmoid --output)")
        self.assertEqual(e6["rows"][1]["reason"], "no usable GPU")
        self.assertIn("Not run:", "\n".join(tables.experiment_lines("e6", payload("e6", **e6))))


def built_dir():
    """The build folder of the tiny real run (COMPARE_BUILD_DIR, else build/ci or build/default), or None."""
    candidates = [os.environ.get("COMPARE_BUILD_DIR")] if os.environ.get("COMPARE_BUILD_DIR") else \
        [ROOT / "build" / "ci", ROOT / "build" / "default"]
    for d in candidates:
        if all((Path(d) / "bin" / b).is_file() for b in ("s02_train_solution", "s03_train_solution",
                                                           "s03_pool_study")):
            return Path(d).resolve()
    return None


@unittest.skipIf(built_dir() is None, "s02_train_solution, s03_train_solution and s03_pool_study are not built in "
                                      "COMPARE_BUILD_DIR (or build/ci, build/default): build them to run this test")
class TinyRealRun(unittest.TestCase):
    """The CPU experiments on tiny sizes: they run, write their tables, and their figures parse back."""

    def test_the_cpu_experiments(self):
        build = built_dir()
        with tempfile.TemporaryDirectory() as out:
            proc = subprocess.run(
                [sys.executable, str(ROOT / "tools" / "replicate.py"), "--build-dir", str(build), "--out", out,
                 "--only", "e1,e2,e5,e6", "--models", "m0", "--images", "64", "--dataset", "synthetic",
                 "--threads", "1,2", "--cpu-epochs", "1", "--pool-sizes", "4,32", "--pool-threads", "1,2",
                 "--pool-min-ms", "1"],
                cwd=ROOT, capture_output=True, text=True, timeout=240, env=dict(os.environ, COURSE_ASSUME_GPU="0"))
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            self.assertIn("the GPU stages' runs are left out: no usable GPU (COURSE_ASSUME_GPU=0 says so)", proc.stdout)
            e1 = json.loads((Path(out) / "e1.json").read_text())
            ok = [(r["stage"], r["threads"]) for r in e1["rows"] if r["status"] == "ok"]
            self.assertEqual(ok, [("02_conv_pool", 1), ("03_openmp", 1), ("03_openmp", 2)])
            self.assertTrue(all(r["images"] == 64 for r in e1["rows"]))
            self.assertIn("3x32x32", (Path(e1["rows"][0]["log"])).read_text())
            self.assertIsNotNone(e1["fits"][0]["fit"])
            e2 = json.loads((Path(out) / "e2.json").read_text())
            self.assertEqual({r["stage"]: r["status"] for r in e2["rows"]},
                             {"02_conv_pool": "ok", "03_openmp": "ok", "05_im2col_gemm": "skipped",
                              "06_cudnn": "skipped", "08_fused": "skipped"})
            e5 = json.loads((Path(out) / "e5.json").read_text())
            self.assertEqual(e5["status"], "ok")
            # The study's way in NumPy runs where some Python here has NumPy (k2 s2 p0, as the study timed it).
            numpy = e5["numpy"]["status"] == "ok"
            self.assertIn(e5["numpy"]["status"], ("ok", "skipped"), e5["numpy"])
            self.assertEqual({(r["setting"], r["method"]) for r in e5["rows"]},
                             {(s, m) for s in ("k2s2p0", "k2s1p0", "k2s2p1") for m in ("serial", "study_serial", "openmp")}
                             | ({("k2s2p0", "study_numpy")} if numpy else set()))
            self.assertTrue(all(r.get("matches_stage02", r.get("matches_reference")) for r in e5["rows"]))
            self.assertEqual([s["status"] for s in e5["settings"]], ["ok", "ok", "ok", "refused"])
            e6 = json.loads((Path(out) / "e6.json").read_text())
            self.assertIn(e6["status"], ("ok", "skipped", "partial"), e6)
            for exp in ("e1", "e2", "e5"):
                root = ET.fromstring((Path(out) / f"{exp}.svg").read_bytes())
                self.assertTrue(list(root.iter(SVG_NS + "polyline")) or list(root.iter(SVG_NS + "rect")))
                lines = doc.block(exp, "vm", json.loads((Path(out) / f"{exp}.json").read_text()))
                markdown_tables_are_whole(lines, self)
            root = ET.fromstring((Path(out) / "e5.svg").read_bytes())
            methods = {e.get("data-method") for e in root.iter(SVG_NS + "polyline") if e.get("data-method")}
            self.assertEqual(methods, {"serial", "study_serial", "openmp"} | ({"study_numpy"} if numpy else set()))
            self.assertTrue((Path(out) / "e1.csv").read_text().startswith("stage,model,status"))


if __name__ == "__main__":
    unittest.main()
