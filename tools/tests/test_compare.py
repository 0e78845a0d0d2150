"""Tests of tools/compare.py: the table's logic on canned trainer output, the Amdahl fit, the
CSV/JSON/SVG files, and one tiny real run when the trainers are built.

    python3 -m unittest discover -s tools/tests
    COMPARE_BUILD_DIR=build-cmp python3 -m unittest discover -s tools/tests   (trainers from another build)
"""
import csv
import io
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import compare  # noqa: E402
from compare_lib import amdahl, stages, sweeps, table  # noqa: E402
from compare_lib.runs import (Run, full_epoch_images, interpret, run_from_dict, says_no_gpu,  # noqa: E402
                              trainer_command)

SVG_NS = "{http://www.w3.org/2000/svg}"
STAGE = {s.id: s for s in stages.KNOWN_STAGES}
NOTE = "fashion-mnist: 60000 train, 10000 test images from ./data/fashion-mnist"


def trainer_json(stage_id, device, seconds, images, accuracy=0.8, full=60000, threads=1, synthetic=False):
    """What a trainer's --json holds after training, trimmed to what compare.py reads.
    `seconds` is one number per epoch."""
    seconds = seconds if isinstance(seconds, list) else [seconds]
    note = NOTE if full == 60000 else f"fashion-mnist: {full} train, 10000 test images from x"
    if images < full:
        note += f"; training on the first {images} examples (--limit)"
    return {
        "stage": {"id": stage_id, "title": ""},
        "device": device,
        "threads": threads,
        "status": "ok",
        "data": {"dataset": "fashion-mnist", "note": note, "synthetic_fallback": synthetic,
                 "train_examples": images, "test_examples": 10000},
        "epochs": [{"epoch": i + 1, "seconds": s, "images_per_second": images / s, "loss": 0.5,
                    "train_accuracy": accuracy - 0.01, "test_accuracy": accuracy + 0.001 * i}
                   for i, s in enumerate(seconds)],
        "final": {"accuracy": accuracy + 0.001 * (len(seconds) - 1)},
    }


def ok_run(stage_id, model, seconds, images=60000, device=None, accuracy=0.8):
    stage = STAGE[stage_id]
    return interpret(stage, model, 0, "epoch 1/1 ...", "",
                     trainer_json(stage_id, device or stage.device, seconds, images, accuracy))


def failed_run(stage_id, model, code, stderr, stdout=""):
    return interpret(STAGE[stage_id], model, code, stdout, stderr, None)


NO_GPU = "error: stage 04 trains on a CUDA GPU, and there is none: no CUDA device on this machine"
NO_GPU_05 = "error: stage 05 trains on a CUDA GPU, and there is none: no usable GPU: cudaGetDeviceCount: " \
            "CUDA driver version is insufficient for CUDA runtime version"
CNN_IN_01 = ("error: stage 01_fc_softmax cannot run conv16k3p1,relu,pool2,conv32k3p1,relu,pool2,flatten,fc100,relu,"
             "fc10: layer 'conv16k3p1' is not part of stage 01 (dense layers and activations only)")


def canned_table():
    """A comparison of six stages as a GPU machine would see it, with a stage 03 that failed to build."""
    runs = [
        ok_run("01_fc_softmax", "mlp", 10.0),
        ok_run("02_conv_pool", "mlp", 12.5),
        Run(stage="03_openmp", model="mlp", status="skipped", reason="not built: no OpenMP", device="CPU, all cores"),
        ok_run("04_cuda_matmul", "mlp", 0.5, device="NVIDIA H100 80GB HBM3 (sm_90)"),
        ok_run("05_im2col_gemm", "mlp", 0.4, device="NVIDIA H100 80GB HBM3 (sm_90)"),
        failed_run("06_cudnn", "mlp", 1, "error: cudnnConvolutionForward failed: CUDNN_STATUS_EXECUTION_FAILED"),
        failed_run("01_fc_softmax", "cnn", 2, CNN_IN_01),
        ok_run("02_conv_pool", "cnn", 4.0, images=6000),   # 40 s per epoch, scaled
        Run(stage="03_openmp", model="cnn", status="skipped", reason="not built: no OpenMP", device="CPU, all cores"),
        Run(stage="04_cuda_matmul", model="cnn", status="n/a", reason=STAGE["04_cuda_matmul"].no_model_reason),
        ok_run("05_im2col_gemm", "cnn", 2.0, device="NVIDIA H100 80GB HBM3 (sm_90)"),
        ok_run("06_cudnn", "cnn", 0.8, device="NVIDIA H100 80GB HBM3 (sm_90)"),
    ]
    return table.order_rows(table.compute_speedups(runs), ["mlp", "cnn"])


class InterpretTrainerOutput(unittest.TestCase):
    def test_a_whole_epoch_is_not_scaled(self):
        r = ok_run("01_fc_softmax", "mlp", 4.0)
        self.assertEqual(r.status, "ok")
        self.assertFalse(r.scaled)
        self.assertEqual((r.images, r.images_per_epoch), (60000, 60000))
        self.assertAlmostEqual(r.seconds_per_epoch, 4.0)
        self.assertAlmostEqual(r.images_per_second, 15000.0)
        self.assertAlmostEqual(r.test_accuracy, 0.8)

    def test_a_partial_epoch_is_scaled_to_the_whole_one(self):
        r = ok_run("02_conv_pool", "cnn", 4.0, images=6000)
        self.assertTrue(r.scaled)
        self.assertAlmostEqual(r.scale_factor, 10.0)
        self.assertAlmostEqual(r.seconds_measured, 4.0)
        self.assertAlmostEqual(r.seconds_per_epoch, 40.0)
        self.assertAlmostEqual(r.images_per_second, 1500.0)  # a rate needs no scaling

    def test_several_epochs_take_the_median_and_the_last_accuracy(self):
        r = interpret(STAGE["02_conv_pool"], "mlp", 0, "", "",
                      trainer_json("02_conv_pool", "CPU, 1 thread", [9.0, 5.0, 6.0], 60000, accuracy=0.8))
        self.assertEqual(r.epochs, 3)
        self.assertAlmostEqual(r.seconds_per_epoch, 6.0)
        self.assertAlmostEqual(r.images_per_second, 10000.0)
        self.assertAlmostEqual(r.test_accuracy, 0.802)

    def test_the_full_epoch_comes_from_the_data_note(self):
        self.assertEqual(full_epoch_images({"note": NOTE + "; training on the first 500 examples (--limit)",
                                            "train_examples": 500}), 60000)
        self.assertEqual(full_epoch_images({"note": "synthetic: 8000 train, 2000 test built-in examples",
                                            "train_examples": 8000}), 8000)
        self.assertEqual(full_epoch_images({"note": "mnist not found: using the built-in synthetic set",
                                            "train_examples": 700}), 700)

    def test_stage_01_cannot_run_a_cnn(self):
        r = failed_run("01_fc_softmax", "cnn", 2, CNN_IN_01)
        self.assertEqual((r.status, r.reason), ("n/a", "stage 01 has no conv layers"))

    def test_a_gpu_stage_without_a_gpu_is_skipped_with_the_reason(self):
        r = failed_run("04_cuda_matmul", "mlp", 1, NO_GPU)
        self.assertEqual(r.status, "skipped")
        self.assertEqual(r.reason, "no CUDA device on this machine")
        r = failed_run("05_im2col_gemm", "cnn", 1, NO_GPU_05)
        self.assertEqual(r.status, "skipped")
        self.assertTrue(r.reason.startswith("no usable GPU: cudaGetDeviceCount: CUDA driver version"), r.reason)
        # A message whose tail does not say why is kept whole.
        r = failed_run("06_cudnn", "cnn", 1, "error: stage 06 has no GPU: unknown")
        self.assertEqual((r.status, r.reason), ("skipped", "stage 06 has no GPU: unknown"))

    def test_a_gpu_failure_that_is_not_a_missing_gpu_is_an_error(self):
        r = failed_run("04_cuda_matmul", "mlp", 1, "error: CUDA_CHECK(cudaMemcpy) failed at x.cu:12: an illegal "
                                                   "memory access was encountered")
        self.assertEqual(r.status, "error")
        self.assertIn("exit code 1", r.reason)
        # A GPU that vanishes after training started is an error too.
        r = failed_run("04_cuda_matmul", "mlp", 1, "error: no CUDA device", stdout="epoch 1/2  loss 0.5\n")
        self.assertEqual(r.status, "error")

    def test_a_crash_is_an_error_naming_the_signal(self):
        r = failed_run("04_cuda_matmul", "mlp", -11, "")
        self.assertEqual(r.status, "error")
        self.assertIn("SIGSEGV", r.reason)

    def test_a_cpu_stage_is_never_skipped_for_want_of_a_gpu(self):
        self.assertEqual(failed_run("02_conv_pool", "mlp", 1, "error: no CUDA device").status, "error")

    def test_an_exercise_hole_is_todo_and_a_divergence_an_error(self):
        r = failed_run("02_conv_pool", "cnn", 3, "Task 2.1 is not implemented yet: conv2d_forward (lesson ...)")
        self.assertEqual(r.status, "todo")
        self.assertIn("Task 2.1", r.reason)
        diverged = interpret(STAGE["01_fc_softmax"], "mlp", 4, "", "loss is NaN at epoch 1",
                             {"status": "diverged", "epochs": [{"epoch": 1, "loss": None, "seconds": 1.0}]})
        self.assertEqual(diverged.status, "error")
        self.assertIn("diverged", diverged.reason)

    def test_says_no_gpu(self):
        self.assertTrue(says_no_gpu("s04_matmul_sweep needs a CUDA GPU: no CUDA device on this machine"))
        self.assertFalse(says_no_gpu("cudnnConvolutionForward failed: CUDNN_STATUS_EXECUTION_FAILED"))

    def test_trainer_command(self):
        cmd = trainer_command("bin/s03", STAGE["03_openmp"], "cnn", epochs=2, batch=64, limit=6000, seed=42,
                              dataset="fashion-mnist", json_path="x.json", threads=4, extra=["--parallel", "loops"])
        self.assertEqual(cmd[cmd.index("--threads") + 1], "4")
        self.assertEqual(cmd[cmd.index("--limit") + 1], "6000")
        self.assertEqual(cmd[-2:], ["--parallel", "loops"])
        self.assertIn("--no-progress", cmd)
        cmd = trainer_command("bin/s02", STAGE["02_conv_pool"], "mlp", epochs=1, batch=64, limit=0, seed=1,
                              dataset="fashion-mnist", json_path="x.json", threads=4)
        self.assertNotIn("--threads", cmd)  # stage 02's trainer has no --threads option


class Speedups(unittest.TestCase):
    def setUp(self):
        self.rows = canned_table()
        self.by = {(r.stage, r.model): r for r in self.rows}

    def test_rows_are_grouped_by_model_in_stage_order(self):
        self.assertEqual([(r.model, r.stage[:2]) for r in self.rows],
                         [("mlp", s) for s in ("01", "02", "03", "04", "05", "06")] +
                         [("cnn", s) for s in ("01", "02", "03", "04", "05", "06")])

    def test_the_first_stage_is_its_own_base(self):
        r = self.by[("01_fc_softmax", "mlp")]
        self.assertIsNone(r.vs_prev)
        self.assertEqual(r.vs_first[0], "01_fc_softmax")
        self.assertAlmostEqual(r.vs_first[1], 1.0)

    def test_speedup_over_the_previous_stage_passes_over_skipped_ones(self):
        r = self.by[("04_cuda_matmul", "mlp")]
        self.assertEqual(r.vs_prev[0], "02_conv_pool")   # 03 was skipped
        self.assertAlmostEqual(r.vs_prev[1], 12.5 / 0.5)
        self.assertEqual(r.vs_first[0], "01_fc_softmax")
        self.assertAlmostEqual(r.vs_first[1], 10.0 / 0.5)
        self.assertAlmostEqual(self.by[("02_conv_pool", "mlp")].vs_prev[1], 0.8)  # slower: below 1

    def test_the_cnn_is_compared_with_the_first_stage_that_ran_it(self):
        base = self.by[("02_conv_pool", "cnn")]
        self.assertEqual(base.vs_first[0], "02_conv_pool")
        self.assertIsNone(base.vs_prev)
        r = self.by[("05_im2col_gemm", "cnn")]
        self.assertEqual(r.vs_prev[0], "02_conv_pool")   # 03 skipped, 04 n/a
        self.assertAlmostEqual(r.vs_prev[1], 40.0 / 2.0)  # stage 02's seconds were scaled from 6,000 images
        r = self.by[("06_cudnn", "cnn")]
        self.assertEqual(r.vs_prev[0], "05_im2col_gemm")
        self.assertAlmostEqual(r.vs_prev[1], 2.5)
        self.assertAlmostEqual(r.vs_first[1], 50.0)

    def test_rows_that_did_not_run_have_no_speedups(self):
        for key in [("03_openmp", "mlp"), ("06_cudnn", "mlp"), ("01_fc_softmax", "cnn"), ("04_cuda_matmul", "cnn")]:
            self.assertIsNone(self.by[key].vs_prev)
            self.assertIsNone(self.by[key].vs_first)
        self.assertEqual(self.by[("06_cudnn", "mlp")].status, "error")

    def test_the_text_table(self):
        text = table.format_table(self.rows, ["header"])
        self.assertIn("n/a: stage 01 has no conv layers", text)
        self.assertIn("skipped: not built: no OpenMP", text)
        self.assertIn("error: cudnnConvolutionForward failed", text)
        self.assertIn("20.00x vs 01", text)        # stage 04 MLP over stage 01
        self.assertIn("1.00x vs 02", text)         # the CNN's base is labelled as stage 02
        self.assertIn("40.00*", text)              # scaled seconds are marked
        self.assertIn("6,000 of 60,000, scaled", text)
        self.assertIn("* measured on the first 6,000 of the 60,000 training images", text)
        row = next(l for l in text.splitlines() if l.startswith("05_im2col_gemm") and " cnn " in l)
        self.assertIn("20.00x vs 02", row)
        self.assertNotIn("*", row)                 # a whole epoch: nothing scaled

    def test_the_speedup_text(self):
        self.assertEqual(table.times(1.0), "1.00x")
        self.assertEqual(table.times(31.42), "31.4x")
        self.assertEqual(table.times(1234.5), "1,234x")


class OutputFiles(unittest.TestCase):
    def setUp(self):
        self.rows = canned_table()

    def test_csv_reads_back(self):
        records = list(csv.DictReader(io.StringIO(table.to_csv(self.rows))))
        self.assertEqual(len(records), 12)
        self.assertEqual(list(records[0].keys()), table.CSV_FIELDS)
        by = {(r["stage"], r["model"]): r for r in records}
        r = by[("06_cudnn", "cnn")]
        self.assertEqual((r["status"], r["vs_prev_stage"], r["vs_first_stage"]), ("ok", "05_im2col_gemm", "02_conv_pool"))
        self.assertAlmostEqual(float(r["speedup_vs_first"]), 50.0)
        self.assertAlmostEqual(float(by[("02_conv_pool", "cnn")]["seconds_per_epoch"]), 40.0)
        self.assertEqual(by[("02_conv_pool", "cnn")]["scaled"], "true")
        self.assertEqual(by[("01_fc_softmax", "cnn")]["status"], "n/a")
        self.assertEqual(by[("01_fc_softmax", "cnn")]["seconds_per_epoch"], "")
        self.assertEqual(by[("01_fc_softmax", "mlp")]["speedup_vs_prev"], "")

    def test_json_loads_with_the_machine_and_the_command(self):
        data = json.loads(table.to_json(self.rows, machine={"cpu": "x", "cores": 2, "gpu": None},
                                        command="python3 tools/compare.py", date="2026-01-01T00:00:00+00:00",
                                        settings={"batch": 64}))
        self.assertEqual(data["command"], "python3 tools/compare.py")
        self.assertEqual(data["machine"]["cores"], 2)
        self.assertEqual(len(data["rows"]), 12)
        row = next(r for r in data["rows"] if r["stage"] == "02_conv_pool" and r["model"] == "cnn")
        self.assertTrue(row["scaled"])
        self.assertAlmostEqual(row["seconds_per_epoch"], 40.0)
        self.assertTrue(any("scaled" in n for n in data["notes"]))

    def test_json_rows_redraw_the_same_table(self):
        data = json.loads(table.to_json(self.rows, machine={}, command="c", date="d", settings={}))
        again = [run_from_dict(d) for d in data["rows"]]
        self.assertEqual(table.format_table(again), table.format_table(self.rows))
        self.assertEqual(table.to_csv(again), table.to_csv(self.rows))

    def test_svg_is_well_formed_with_one_bar_per_run(self):
        text = table.to_svg(self.rows, ["mlp", "cnn"], list(stages.KNOWN_STAGES), machine_line="test machine",
                            date="2026-01-01", command="python3 tools/compare.py", dataset="fashion-mnist", batch=64)
        root = ET.fromstring(text.encode())
        self.assertEqual(root.tag, SVG_NS + "svg")
        bars = [e for e in root.iter(SVG_NS + "rect") if e.get("class") == "bar"]
        ok = [r for r in self.rows if r.status == "ok"]
        self.assertEqual(len(bars), len(ok))
        got = {(b.get("data-stage"), b.get("data-model")): float(b.get("data-speedup")) for b in bars}
        for r in ok:
            self.assertAlmostEqual(got[(r.stage, r.model)], r.vs_first[1], places=3)
        for b in bars:
            self.assertGreater(float(b.get("height")), 0)
        texts = " ".join(t.text or "" for t in root.iter(SVG_NS + "text"))
        self.assertIn("Training speed of every stage", texts)
        self.assertIn("test machine", texts)
        self.assertIn("speedup over stage 02_conv_pool", texts)
        self.assertIn("n/a", texts)


class AmdahlFit(unittest.TestCase):
    def test_recovers_a_known_parallel_fraction(self):
        for p in (0.0, 0.5, 0.9, 0.97):
            pts = [(n, amdahl.amdahl_speedup(p, n)) for n in (1, 2, 4, 8, 16)]
            fit = amdahl.fit_parallel_fraction(pts)
            self.assertAlmostEqual(fit["p"], p, places=6)
            self.assertLess(fit["rms"], 1e-6)

    def test_noisy_speedups_fit_close(self):
        p = 0.85
        noise = [0.0, 0.02, -0.015, 0.01, -0.02]
        pts = [(n, amdahl.amdahl_speedup(p, n) * (1 + e)) for n, e in zip((1, 2, 4, 8, 16), noise)]
        fit = amdahl.fit_parallel_fraction(pts)
        self.assertLess(abs(fit["p"] - p), 0.02)
        self.assertAlmostEqual(fit["max_speedup"], 1 / (1 - fit["p"]))

    def test_it_minimises_squares_on_the_speedup(self):
        pts = [(2, 1.6), (4, 2.3), (8, 3.5)]
        fit = amdahl.fit_parallel_fraction(pts)

        def sse(p):
            return sum((s - amdahl.amdahl_speedup(p, n)) ** 2 for n, s in pts)
        for dp in (-1e-4, 1e-4):
            self.assertLessEqual(sse(fit["p"]), sse(fit["p"] + dp))

    def test_the_bounds(self):
        slower = amdahl.fit_parallel_fraction([(1, 1.0), (2, 0.7)])
        self.assertEqual((slower["p"], slower["at_bound"]), (0.0, "0"))
        self.assertIn("never gave a speedup", amdahl.describe_fit(slower))
        perfect = amdahl.fit_parallel_fraction([(2, 2.1), (4, 4.3)])
        self.assertEqual((perfect["p"], perfect["at_bound"]), (1.0, "1"))
        self.assertTrue(math.isinf(perfect["max_speedup"]))
        with self.assertRaises(ValueError):
            amdahl.fit_parallel_fraction([(1, 1.0)])


def sweep_runs():
    """Stage 03 at 1, 2, 4 threads, both strategies, the MLP; p = 0.8 for data, loops slower."""
    runs = []
    for mode, p in (("data", 0.8), ("loops", 0.5)):
        for n in (1, 2, 4):
            r = ok_run("03_openmp", "mlp", 8.0 / amdahl.amdahl_speedup(p, n), images=6000,
                       device=f"CPU, {n} threads")
            r.options = {"parallel": mode, "threads": n}
            runs.append(r)
    failed = failed_run("03_openmp", "mlp", 1, "error: out of memory")
    failed.options = {"parallel": "loops", "threads": 8}
    return runs + [failed], {"mlp": ok_run("02_conv_pool", "mlp", 10.0, images=6000)}


class ThreadSweep(unittest.TestCase):
    def test_thread_counts(self):
        self.assertEqual(sweeps.thread_counts(1), [1])
        self.assertEqual(sweeps.thread_counts(2), [1, 2])
        self.assertEqual(sweeps.thread_counts(6), [1, 2, 4, 6])
        self.assertEqual(sweeps.thread_counts(16), [1, 2, 4, 8, 16])

    def test_speedups_and_fits(self):
        runs, base = sweep_runs()
        s = sweeps.thread_sweep_summary(runs, base)
        row = next(r for r in s["rows"] if r["parallel"] == "data" and r["threads"] == 4)
        self.assertAlmostEqual(row["speedup_vs_1_thread"], amdahl.amdahl_speedup(0.8, 4))
        self.assertAlmostEqual(row["speedup_vs_stage02"], 100.0 / 80.0 * amdahl.amdahl_speedup(0.8, 4))
        fits = {f["parallel"]: f["fit"] for f in s["fits"]}
        self.assertAlmostEqual(fits["data"]["p"], 0.8, places=6)
        self.assertAlmostEqual(fits["loops"]["p"], 0.5, places=6)   # the failed 8-thread run is left out
        text = sweeps.format_thread_table(s, base)
        self.assertIn("data: p = 0.800", text)
        self.assertIn("error: out of memory", text)
        records = list(csv.DictReader(io.StringIO(sweeps.thread_sweep_csv(s))))
        self.assertEqual(len(records), 7)
        self.assertAlmostEqual(float(records[0]["amdahl_p"]), 0.8, places=3)
        root = ET.fromstring(sweeps.thread_sweep_svg(s, machine_line="m", date="d", command="c").encode())
        lines = [e for e in root.iter(SVG_NS + "polyline") if e.get("class") == "series"]
        self.assertEqual(len(lines), 5)   # 2 measured, 2 fits, the ideal line
        self.assertEqual({e.get("data-fit") for e in lines if e.get("data-fit")}, {"0.8000", "0.5000"})

    def test_no_fit_without_the_one_thread_run(self):
        runs, base = sweep_runs()
        runs = [r for r in runs if not (r.options["parallel"] == "data" and r.options["threads"] == 1)]
        s = sweeps.thread_sweep_summary(runs, base)
        fits = {f["parallel"]: f["fit"] for f in s["fits"]}
        self.assertIsNone(fits["data"])
        self.assertIn("no fit", sweeps.format_thread_table(s, base))


MATMUL_CSV = """table,shape,M,N,K,trans_a,trans_b,kernel,kernel_name,median_ms,gflops,fraction_of_cublas,rel_error
square,128,128,128,128,0,0,0,cuBLAS,0.01,419.4,1,0
square,128,128,128,128,0,0,2,grid,0.02,209.7,0.5,1.2e-07
square,4096,4096,4096,4096,0,0,0,cuBLAS,2.7,50903,1,0
square,4096,4096,4096,4096,0,0,2,grid,68.7,2000.5,0.0393,3.1e-07
square,4096,4096,4096,4096,0,0,6,register tiles,5.5,24989,0.4909,2e-07
"""


class MatmulSweep(unittest.TestCase):
    def test_parse_table_csv_and_svg(self):
        rows = sweeps.parse_matmul_csv(MATMUL_CSV)
        self.assertEqual(len(rows), 5)
        self.assertEqual((rows[4]["kernel"], rows[4]["kernel_name"], rows[4]["M"]), (6, "register tiles", 4096))
        text = sweeps.format_matmul_table(rows)
        line = next(l for l in text.splitlines() if l.startswith("4096"))
        self.assertIn("50,903", line)
        self.assertIn("24,989 (49%)", line)
        self.assertIn("n/a", next(l for l in text.splitlines() if l.startswith("128 ")))   # kernel 6 not timed at 128
        self.assertEqual(len(list(csv.DictReader(io.StringIO(sweeps.matmul_csv(rows))))), 5)
        root = ET.fromstring(sweeps.matmul_svg(rows, gpu="H100", machine_line="m", date="d", command="c").encode())
        lines = [e for e in root.iter(SVG_NS + "polyline") if e.get("class") == "series"]
        self.assertEqual(sorted(e.get("data-kernel") for e in lines), ["0", "2"])  # kernel 6 has one point: no line
        points = [e for e in root.iter(SVG_NS + "circle") if e.get("class") == "point"]
        self.assertEqual(len(points), 5)

    def test_no_gpu_is_skipped_and_a_wrong_kernel_is_an_error(self):
        r = sweeps.interpret_matmul(1, "", "s04_matmul_sweep needs a CUDA GPU: no CUDA device on this machine\n", [])
        self.assertEqual(r["status"], "skipped")
        self.assertIn("no CUDA device", r["reason"])
        rows = sweeps.parse_matmul_csv(MATMUL_CSV)
        r = sweeps.interpret_matmul(1, "table", "a kernel's result differs from cuBLAS by more than 1e-5", rows)
        self.assertEqual(r["status"], "error")
        self.assertEqual(sweeps.interpret_matmul(0, "table", "", rows)["status"], "ok")


class StagesAndOptions(unittest.TestCase):
    def test_select_stages_and_models(self):
        all_ = list(stages.KNOWN_STAGES)
        self.assertEqual([s.id for s in stages.select_stages(all_, "3,01_fc_softmax")], ["01_fc_softmax", "03_openmp"])
        self.assertEqual(len(stages.select_stages(all_, "")), 8, "stages 01 to 06, and 09 on 1 and on 2 GPUs")
        with self.assertRaises(ValueError):
            stages.select_stages(all_, "07")
        with self.assertRaises(ValueError):
            stages.select_models("mlp,resnet")

    def test_stage_09_has_a_row_per_gpu_count(self):
        rows = stages.select_stages(list(stages.KNOWN_STAGES), "9")
        self.assertEqual([(s.id, s.gpus) for s in rows], [("09_multi_gpu", 1), ("09_multi_gpu", 2)])
        self.assertEqual([s.key for s in rows], ["09_multi_gpu_1gpu", "09_multi_gpu_2gpu"], "their logs differ")
        cmd = trainer_command("s09", rows[1], "cnn", epochs=1, batch=64, limit=0, seed=42, dataset="fashion-mnist",
                              json_path="x.json")
        self.assertEqual(cmd[-2:], ["--gpus", "2"])
        # What the trainer says on a machine with one GPU makes the 2-GPU row a skipped one, with the reason.
        message = ("error: --gpus 2: a GPU per rank is needed, and rank 1 has none: CUDA shows 1 GPU here "
                   "(CUDA_VISIBLE_DEVICES is not set)\n")
        run = interpret(rows[1], "cnn", 2, "", message, None)
        self.assertEqual(run.status, "skipped", run.reason)
        self.assertIn("rank 1 has none", run.reason)
        with tempfile.TemporaryDirectory() as tmp:
            root, build = Path(tmp) / "src", Path(tmp) / "build"
            (root / "stages" / "09_multi_gpu").mkdir(parents=True)
            (build / "CMakeFiles" / "3.25.1").mkdir(parents=True)
            (build / "CMakeFiles" / "3.25.1" / "CMakeCUDACompiler.cmake").write_text("")
            (build / "CMakeCache.txt").write_text("CUDNN_LIBRARY:FILEPATH=/x/libcudnn.so\n"
                                                  "NCCL_LIBRARY:FILEPATH=NCCL_LIBRARY-NOTFOUND\n")
            self.assertIn("no NCCL", stages.not_built_reason(root, build, rows[0]))

    def test_not_built_reasons(self):
        with tempfile.TemporaryDirectory() as tmp:
            root, build = Path(tmp) / "src", Path(tmp) / "build"
            for s in ("01_fc_softmax", "03_openmp", "04_cuda_matmul", "06_cudnn"):
                (root / "stages" / s).mkdir(parents=True)
            self.assertIn("not in this checkout", stages.not_built_reason(root, build, STAGE["05_im2col_gemm"]))
            self.assertIn("not a configured build", stages.not_built_reason(root, build, STAGE["01_fc_softmax"]))
            build.mkdir()
            (build / "CMakeCache.txt").write_text("OpenMP_CXX_FLAGS:STRING=OpenMP_CXX_FLAGS-NOTFOUND\n"
                                                  "CUDNN_LIBRARY:FILEPATH=CUDNN_LIBRARY-NOTFOUND\n")
            self.assertIn("no OpenMP", stages.not_built_reason(root, build, STAGE["03_openmp"]))
            self.assertIn("no CUDA toolkit", stages.not_built_reason(root, build, STAGE["04_cuda_matmul"]))
            (build / "CMakeFiles" / "3.25.1").mkdir(parents=True)
            (build / "CMakeFiles" / "3.25.1" / "CMakeCUDACompiler.cmake").write_text("")
            self.assertIn("no cuDNN", stages.not_built_reason(root, build, STAGE["06_cudnn"]))
            self.assertIn("--target s04_train_solution", stages.not_built_reason(root, build, STAGE["04_cuda_matmul"]))

    def test_images_per_run(self):
        args = compare.parse_args(["--build-dir", "x"])
        self.assertEqual(compare.images_limit(STAGE["02_conv_pool"], "cnn", args), compare.CPU_CONV_IMAGES)
        self.assertEqual(compare.images_limit(STAGE["02_conv_pool"], "mlp", args), 0)
        self.assertEqual(compare.images_limit(STAGE["05_im2col_gemm"], "cnn", args), 0)
        self.assertEqual(compare.images_limit(STAGE["03_openmp"], "cnn", args), compare.CPU_CONV_IMAGES)
        full = compare.parse_args(["--full"])
        self.assertEqual(compare.images_limit(STAGE["02_conv_pool"], "cnn", full), 0)
        self.assertEqual(compare.images_limit(STAGE["04_cuda_matmul"], "mlp", compare.parse_args(["--limit", "500"])), 500)

    def test_contradictory_options_are_refused(self):
        with open(os.devnull, "w") as devnull:
            old, sys.stderr = sys.stderr, devnull
            try:
                for argv in (["--full", "--limit", "10"], ["--models", "vgg"], ["--stages", "12"], ["--batch", "0"]):
                    with self.assertRaises(SystemExit):
                        compare.parse_args(argv)
            finally:
                sys.stderr = old


def built_trainers_dir():
    """The build folder whose stage 01 trainer the end-to-end tests use, or None."""
    candidates = [os.environ.get("COMPARE_BUILD_DIR")] if os.environ.get("COMPARE_BUILD_DIR") else \
        [ROOT / "build" / "ci", ROOT / "build" / "default"]
    for d in candidates:
        if (Path(d) / "bin" / "s01_train_solution").is_file():
            return Path(d).resolve()
    return None


@unittest.skipIf(built_trainers_dir() is None, "no built s01_train_solution (build the preset ci or default first)")
class EndToEnd(unittest.TestCase):
    """A real run of compare.py on a tiny workload: stages 01 and 02 (when built), 500 images."""

    def test_a_tiny_comparison(self):
        build = built_trainers_dir()
        stage_arg = "01,02" if (build / "bin" / "s02_train_solution").is_file() else "01"
        with tempfile.TemporaryDirectory() as out:
            proc = subprocess.run([sys.executable, str(ROOT / "tools" / "compare.py"), "--build-dir", str(build),
                                   "--stages", stage_arg, "--models", "mlp,cnn", "--limit", "500", "--out", out],
                                  cwd=ROOT, capture_output=True, text=True, timeout=300)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            self.assertIn("n/a: stage 01 has no conv layers", proc.stdout)
            records = list(csv.DictReader(io.StringIO((Path(out) / "compare.csv").read_text())))
            by = {(r["stage"], r["model"]): r for r in records}
            mlp = by[("01_fc_softmax", "mlp")]
            self.assertEqual((mlp["status"], mlp["images_measured"]), ("ok", "500"))
            if mlp["synthetic_data"] == "false":  # CI without the data set falls back to the synthetic set
                self.assertEqual(mlp["scaled"], "true")
            per_epoch = float(mlp["seconds_per_epoch"])
            rate = float(mlp["images_per_second"])
            self.assertAlmostEqual(per_epoch, int(mlp["images_per_epoch"]) / rate, delta=per_epoch * 1e-3)
            self.assertEqual(by[("01_fc_softmax", "cnn")]["status"], "n/a")
            data = json.loads((Path(out) / "compare.json").read_text())
            self.assertEqual(data["machine"]["cores"] > 0, True)
            self.assertIn("--limit 500", data["command"])
            root = ET.fromstring((Path(out) / "compare.svg").read_bytes())
            bars = [e for e in root.iter(SVG_NS + "rect") if e.get("class") == "bar"]
            self.assertEqual(len(bars), sum(1 for r in records if r["status"] == "ok"))
            self.assertTrue((Path(out) / "logs" / "01_fc_softmax_mlp.log").is_file())

    def test_a_tiny_thread_sweep(self):
        build = built_trainers_dir()
        if not all((build / "bin" / f"s0{n}_train_solution").is_file() for n in (2, 3)):
            self.skipTest(f"stages 02 and 03 are not built in {build}")
        with tempfile.TemporaryDirectory() as out:
            proc = subprocess.run([sys.executable, str(ROOT / "tools" / "compare.py"), "--build-dir", str(build),
                                   "--sweep-threads", "--models", "mlp", "--thread-counts", "1,2", "--limit", "500",
                                   "--out", out], cwd=ROOT, capture_output=True, text=True, timeout=300)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            self.assertIn("Amdahl's law", proc.stdout)
            data = json.loads((Path(out) / "sweep_threads.json").read_text())
            self.assertEqual(len(data["rows"]), 4)   # data and loops at 1 and 2 threads
            self.assertTrue(all(r["status"] == "ok" for r in data["rows"]), data["rows"])
            for r in data["rows"]:
                if r["threads"] == 1:
                    self.assertAlmostEqual(r["speedup_vs_1_thread"], 1.0)
            self.assertEqual(len(list(csv.DictReader(io.StringIO((Path(out) / "sweep_threads.csv").read_text())))), 4)
            ET.fromstring((Path(out) / "sweep_threads.svg").read_bytes())

    def test_the_matmul_sweep_runs_or_says_why_not(self):
        build = built_trainers_dir()
        with tempfile.TemporaryDirectory() as out:
            proc = subprocess.run([sys.executable, str(ROOT / "tools" / "compare.py"), "--build-dir", str(build),
                                   "--sweep-matmul", "--sizes", "128,256", "--out", out],
                                  cwd=ROOT, capture_output=True, text=True, timeout=300)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            data = json.loads((Path(out) / "sweep_matmul.json").read_text())
            self.assertIn(data["status"], ("ok", "skipped"))
            if data["status"] == "skipped":
                self.assertTrue(data["reason"])
                self.assertIn("skipped: " + data["reason"], proc.stdout)
            else:
                self.assertEqual({r["M"] for r in data["rows"]}, {128, 256})
                ET.fromstring((Path(out) / "sweep_matmul.svg").read_bytes())


if __name__ == "__main__":
    unittest.main()
