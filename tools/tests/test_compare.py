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
from compare_lib import amdahl, runs, stages, sweeps, table  # noqa: E402
from compare_lib.runs import (Run, as_variant, full_epoch_images, interpret, run_from_dict,  # noqa: E402
                              says_no_gpu, trainer_command)

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

    def test_one_off_setup_is_a_column_apart_and_the_table_says_what_it_holds(self):
        self.assertNotIn("setup s", table.format_table(self.rows, ["header"]), "no row paid any: no column")
        results = trainer_json("06_cudnn", "NVIDIA H100 80GB HBM3 (sm_90)", 0.8, 60000)
        results["setup"] = {"seconds": 0.35, "what": "the training set uploaded, ..."}
        gpu = interpret(STAGE["06_cudnn"], "cnn", 0, "", "", results)
        self.assertAlmostEqual(gpu.setup_seconds, 0.35)
        self.assertAlmostEqual(gpu.seconds_per_epoch, 0.8, msg="the setup is not in the epoch's seconds")
        peer = {**results, "setup": None, "peer": {"warmup_seconds": 12.5}}
        self.assertAlmostEqual(interpret(STAGE["06_cudnn"], "cnn", 0, "", "", peer).setup_seconds, 12.5)
        rows = [gpu if (r.stage, r.model) == ("06_cudnn", "cnn") else r for r in self.rows]
        text = table.format_table(rows, ["header"])
        head = next(l for l in text.splitlines() if l.startswith("stage "))
        self.assertIn("s/epoch  setup s", head)
        row = next(l for l in text.splitlines() if l.startswith("06_cudnn") and " cnn " in l)
        self.assertIn("0.80     0.35", row)
        self.assertIn("'setup s'", text)
        cpu = next(l for l in text.splitlines() if l.startswith("01_fc_softmax") and " mlp " in l)
        self.assertRegex(cpu, r"10\.00\s+-\s")
        self.assertIn("setup_seconds", table.to_csv(rows).splitlines()[0])

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


H100 = "NVIDIA H100 80GB HBM3 (sm_90)"
S07 = STAGE["07_fast_gemm"]
VARIANT = {v.label: v for v in S07.variants}
# A stage after 07, as stages 08 and 09 will be: its "prev" must be 07's own (FP32) row.
S08 = stages.Stage("08_fused", "GPU", gpu=True)


def precision_run(model, seconds, precision, accuracy=0.85):
    """Stage 07's trainer as it reports a run at `precision` (its --json "stage_results", as in the H100
    run of 2026-11-24), as the table's row for it: the FP32 run is the stage's own row."""
    results = trainer_json("07_fast_gemm", H100, seconds, 60000, accuracy)
    results["stage_results"] = {"gemm_kernel": {"fp32": 10, "tf32": 11, "bf16": 12}[precision], "precision": precision}
    run = interpret(S07, model, 0, "", "", results)
    return run if precision == "fp32" else as_variant(run, S07, VARIANT[precision])


def variant_table(fp32_ok=True):
    """Stages 05, 06, 07 in FP32, TF32 and BF16 and a stage 08, on the MLP; 07's FP32 row failed when
    not fp32_ok. The BF16 row is the fastest, so a wrong chain would make it 08's "prev"."""
    fp32 = precision_run("mlp", 0.5, "fp32") if fp32_ok else as_failed_07()
    runs = [ok_run("05_im2col_gemm", "mlp", 2.0, device=H100), ok_run("06_cudnn", "mlp", 1.0, device=H100),
            precision_run("mlp", 0.1, "bf16", accuracy=0.84), precision_run("mlp", 0.25, "tf32"), fp32,
            interpret(S08, "mlp", 0, "", "", trainer_json("08_fused", H100, 0.2, 60000))]
    return table.order_rows(table.compute_speedups(runs), ["mlp"])


def as_failed_07():
    return failed_run("07_fast_gemm", "mlp", 1, "error: CUDA_CHECK(cudaMemcpy) failed: an illegal memory access")


class VariantRows(unittest.TestCase):
    """Stage 07's precision rows: beside the FP32 row, read against it, never in the chain of stages."""

    def setUp(self):
        self.rows = variant_table()
        self.by = {r.stage: r for r in self.rows}

    def test_the_stage_declares_its_variants(self):
        self.assertEqual([(v.label, v.args, v.env) for v in S07.variants],
                         [("tf32", ("--precision", "tf32"), ()), ("bf16", ("--precision", "bf16"), ()),
                          ("as_sm75", (), (("COURSE_AS_CC", "7.5"),))])
        self.assertEqual([(v.label, v.env) for v in STAGE["08_fused"].variants], [("as_sm80", (("COURSE_AS_CC", "8.0"),))])
        self.assertEqual(S07.models, stages.MODELS)
        self.assertTrue(S07.gpu)

    def test_rows_follow_their_stage_in_the_order_they_ran(self):
        self.assertEqual([r.stage for r in self.rows], ["05_im2col_gemm", "06_cudnn", "07_fast_gemm",
                                                        "07_fast_gemm bf16", "07_fast_gemm tf32", "08_fused"])
        self.assertEqual([r.variant_of for r in self.rows], ["", "", "", "07_fast_gemm", "07_fast_gemm", ""])

    def test_a_variant_reads_prev_against_its_own_stage(self):
        r = self.by["07_fast_gemm tf32"]
        self.assertEqual(r.vs_prev[0], "07_fast_gemm")
        self.assertAlmostEqual(r.vs_prev[1], 0.5 / 0.25)
        self.assertEqual(r.vs_first, ("05_im2col_gemm", 2.0 / 0.25))
        self.assertAlmostEqual(self.by["07_fast_gemm bf16"].vs_prev[1], 5.0)

    def test_the_chain_of_stages_passes_over_variants(self):
        self.assertEqual(self.by["07_fast_gemm"].vs_prev, ("06_cudnn", 2.0))
        r = self.by["08_fused"]
        self.assertEqual(r.vs_prev[0], "07_fast_gemm")     # not the faster bf16 row
        self.assertAlmostEqual(r.vs_prev[1], 0.5 / 0.2)
        self.assertEqual(r.vs_first[0], "05_im2col_gemm")

    def test_without_its_own_row_a_variant_has_no_prev_and_the_chain_goes_on(self):
        by = {r.stage: r for r in variant_table(fp32_ok=False)}
        self.assertEqual(by["07_fast_gemm"].status, "error")
        self.assertIsNone(by["07_fast_gemm tf32"].vs_prev)
        self.assertAlmostEqual(by["07_fast_gemm tf32"].vs_first[1], 8.0)
        self.assertEqual(by["08_fused"].vs_prev[0], "06_cudnn")

    def test_the_trainers_precision_goes_with_the_row(self):
        self.assertEqual(self.by["07_fast_gemm"].options, {"precision": "fp32"})
        self.assertEqual(self.by["07_fast_gemm bf16"].options,
                         {"precision": "bf16", "variant_args": ["--precision", "bf16"]})

    def test_the_text_table(self):
        text = table.format_table(self.rows, ["header"])
        line = next(l for l in text.splitlines() if l.startswith("07_fast_gemm tf32 "))
        self.assertIn(H100, line)
        self.assertIn("2.00x vs 07", line)
        self.assertIn("8.00x vs 05", line)
        self.assertIn("85.00%", line)
        self.assertIn("2.50x vs 07", next(l for l in text.splitlines() if l.startswith("08_fused")))
        self.assertIn("'07_fast_gemm bf16' and '07_fast_gemm tf32': stage 07's trainer with --precision bf16, "
                      "--precision tf32 ('07_fast_gemm' ran its defaults: precision fp32)", text)

    def test_the_files(self):
        records = list(csv.DictReader(io.StringIO(table.to_csv(self.rows))))
        by = {r["stage"]: r for r in records}
        self.assertEqual((by["07_fast_gemm tf32"]["variant_of"], by["07_fast_gemm tf32"]["vs_prev_stage"]),
                         ("07_fast_gemm", "07_fast_gemm"))
        self.assertEqual(by["07_fast_gemm"]["variant_of"], "")
        data = json.loads(table.to_json(self.rows, machine={}, command="c", date="d", settings={}))
        self.assertEqual([d["variant_of"] for d in data["rows"]][3:5], ["07_fast_gemm", "07_fast_gemm"])
        again = [run_from_dict(d) for d in data["rows"]]
        self.assertEqual(table.format_table(again), table.format_table(self.rows))
        root = ET.fromstring(table.to_svg(self.rows, ["mlp"], list(stages.KNOWN_STAGES) + [S08], machine_line="m",
                                          date="d", command="c", dataset="fashion-mnist", batch=64).encode())
        labels = [e.text for e in root.iter(SVG_NS + "text") if e.get("class") == "bar-label"]
        self.assertEqual(labels, ["05", "06", "07", "07 bf16", "07 tf32", "08"])
        bars = {b.get("data-stage"): b for b in root.iter(SVG_NS + "rect") if b.get("class") == "bar"}
        self.assertAlmostEqual(float(bars["07_fast_gemm tf32"].get("data-speedup")), 8.0)
        self.assertEqual(bars["07_fast_gemm tf32"].get("fill"), svg_colour("GPU"))

    def test_skipped_variant_rows(self):
        why = "no CUDA device on this machine"
        rows = [ok_run("01_fc_softmax", "mlp", 10.0)] + [
            as_variant(Run(stage="07_fast_gemm", model="mlp", status="skipped", reason=why, device="GPU", gpu=True),
                       S07, v) if v else Run(stage="07_fast_gemm", model="mlp", status="skipped", reason=why,
                                             device="GPU", gpu=True) for v in (None,) + S07.variants]
        rows = table.order_rows(table.compute_speedups(rows), ["mlp"])
        text = table.format_table(rows)
        line = next(l for l in text.splitlines() if l.startswith("07_fast_gemm bf16 "))
        self.assertEqual(line.split(), ["07_fast_gemm", "bf16", "GPU", "mlp", "skipped:"] + why.split())
        self.assertTrue(all(r.vs_prev is None and r.vs_first is None for r in rows[1:]))
        self.assertEqual([r["status"] for r in csv.DictReader(io.StringIO(table.to_csv(rows)))],
                         ["ok", "skipped", "skipped", "skipped", "skipped"])
        root = ET.fromstring(table.to_svg(rows, ["mlp"], list(stages.KNOWN_STAGES), machine_line="m", date="d",
                                          command="c", dataset="fashion-mnist", batch=64).encode())
        missing = [e.get("data-stage") for e in root.iter(SVG_NS + "text") if e.get("class") == "bar-missing"]
        self.assertEqual(missing, ["07_fast_gemm", "07_fast_gemm tf32", "07_fast_gemm bf16", "07_fast_gemm as_sm75"])

    def test_replot_of_a_json_from_before_variants(self):
        """A compare.json written before Run.variant_of existed (docs/figures/compare_*.json) replots as it did."""
        rows = canned_table()
        data = json.loads(table.to_json(rows, machine={"cpu": "x", "cores": 2, "build_dir": "b"}, command="c", date="d",
                                        settings={"dataset": "fashion-mnist", "batch": 64, "seed": 42}))
        for d in data["rows"]:
            del d["variant_of"]
        again = [run_from_dict(d) for d in data["rows"]]
        self.assertEqual(table.format_table(again), table.format_table(rows))
        with tempfile.TemporaryDirectory() as out:
            path = Path(out) / "old.json"
            path.write_text(json.dumps(data))
            with open(os.devnull, "w") as devnull:
                old, sys.stdout = sys.stdout, devnull
                try:
                    self.assertEqual(compare.main(["--replot", str(path), "--out", out]), 0)
                finally:
                    sys.stdout = old
            self.assertEqual(len(list(csv.DictReader(io.StringIO((Path(out) / "compare.csv").read_text())))), 12)
            ET.fromstring((Path(out) / "compare.svg").read_bytes())

    def test_the_docs_tables_print_variant_rows(self):
        """tools/compare_tables.py writes what --replot prints into the README and lessons: a run with
        precision rows brings them along, labelled, with their footnote."""
        import compare_tables
        data = json.loads(table.to_json(self.rows, machine={"cpu": "x", "cores": 16, "build_dir": "build/gpu",
                                                            "gpu": H100}, command="c", date="d",
                                        settings={"dataset": "fashion-mnist", "batch": 64, "seed": 42}))
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "compare_x.json"
            path.write_text(json.dumps(data))
            text = compare_tables.table_text(path)
        rows = [l.split()[:2] for l in text.splitlines() if l.startswith("07_fast_gemm")]
        self.assertEqual(rows, [["07_fast_gemm", H100.split()[0]], ["07_fast_gemm", "bf16"], ["07_fast_gemm", "tf32"]])
        self.assertIn("ran its defaults: precision fp32", text)

    def test_a_row_of_an_older_gpu_runs_only_below_this_gpu(self):
        env = (("COURSE_AS_CC", "8.0"),)
        self.assertEqual(runs.older_gpu_reason(env, 90), "")
        self.assertIn("its own row runs the path", runs.older_gpu_reason(env, 80))
        self.assertIn("older than COURSE_AS_CC=8.0", runs.older_gpu_reason(env, 75))
        self.assertEqual(runs.older_gpu_reason((), 75), "")
        self.assertEqual(runs.older_gpu_reason(env, None), "")

    def test_the_jobs_and_the_variants_option(self):
        def jobs(*argv):
            args = compare.parse_args(["--models", "mlp"] + list(argv))
            return [(s.id, v.label if v else None) for s, _, v in compare.comparison_jobs(args)]
        self.assertEqual(jobs("--stages", "07"), [("07_fast_gemm", None), ("07_fast_gemm", "tf32"),
                                                  ("07_fast_gemm", "bf16"), ("07_fast_gemm", "as_sm75")])
        self.assertEqual(jobs("--stages", "6,7", "--variants", "none"), [("06_cudnn", None), ("07_fast_gemm", None)])
        self.assertEqual(jobs("--stages", "07", "--variants", "bf16"),
                         [("07_fast_gemm", None), ("07_fast_gemm", "bf16")])
        self.assertEqual(compare.parse_args(["--variants", "bf16"]).variant_set, {"bf16"})
        with self.assertRaises(ValueError):
            stages.select_variants(list(stages.KNOWN_STAGES), "fp16")
        with self.assertRaises(ValueError):   # stage 06 has no tf32 row
            stages.select_variants([STAGE["06_cudnn"]], "tf32")
        self.assertEqual(stages.select_variants([STAGE["06_cudnn"]], "all"), set())


def svg_colour(device):
    from compare_lib import svg
    return svg.DEVICE_COLOURS[device]


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


# From the H100 run of 2026-11-24 (tools/gpu/stage.sh 07 perf: .sample/sweep_square.csv and
# sweep_course.csv, s07_matmul_sweep --csv), a few rows as they were written.
FAST_GEMM_CSV = """table,shape,M,N,K,trans_a,trans_b,split_k,contender,precision,median_us,gflops,fraction_of_cublas,rel_error
square,"128 NN",128,128,128,0,0,0,"0 cuBLAS fp32",fp32,13.6,308.405,1,0
square,"128 NN",128,128,128,0,0,0,"10 autotuned",fp32,11.488,365.103,1.18384,0
square,"128 NN",128,128,128,0,0,0,"cuBLAS tf32",tf32,10.272,408.324,1,0
square,"128 NN",128,128,128,0,0,0,"11 TF32 mma",tf32,9.6,436.907,1.07,0
square,"128 NN",128,128,128,0,0,0,"cuBLAS bf16",bf16,10.4,403.298,1,0
square,"128 NN",128,128,128,0,0,0,"13 BF16 wgmma bf16 in",bf16,8.992,466.448,1.15658,0
square,"4096 NN",4096,4096,4096,0,0,0,"0 cuBLAS fp32",fp32,2673.02,51417,1,0
square,"4096 NN",4096,4096,4096,0,0,0,"10 autotuned",fp32,3000.9,45799.3,0.890742,0
square,"4096 NN",4096,4096,4096,0,0,0,"cuBLAS tf32",tf32,352.224,390203,1,0
square,"4096 NN",4096,4096,4096,0,0,0,"11 TF32 mma",tf32,1040.86,132043,0.338396,0
square,"4096 NN",4096,4096,4096,0,0,0,"cuBLAS bf16",bf16,190.368,721965,1,0
square,"4096 NN",4096,4096,4096,0,0,0,"13 BF16 wgmma bf16 in",bf16,262.432,523713,0.725399,0
cnn,"conv1 dW B=64",16,9,50176,1,0,1,"0 cuBLAS fp32",fp32,29.952,482.462,1,0
cnn,"conv1 dW B=64",16,9,50176,1,0,1,"10 autotuned",fp32,23.008,628.072,1.30181,4.22564e-07
cnn,"conv1 dW B=64",16,9,50176,1,0,1,"cuBLAS bf16",bf16,36.448,396.474,1,0
cnn,"conv1 dW B=64",16,9,50176,1,0,1,"12 BF16 mma fp32 in",bf16,35.168,410.904,1.0364,1.09425e-06
"""
# The lines s07_matmul_sweep --roofline prints first, in its format (fast_gemm_sweep.cpp); the figures
# are made up for the test.
SWEEP_OUTPUT = """NVIDIA H100 80GB HBM3 (sm_90); median of >= 5 runs (>= 100 ms) per point; % = the same precision's cuBLAS time / this one's

ceilings of this GPU (each operation alone, operands in registers):
  FP32 FMA (CUDA cores)          50.0 TFLOP/s  (8 independent FMA chains per thread)
  BF16 mma.sync m16n8k16        600.0 TFLOP/s  (4 independent mma per warp, operands in registers)
  device memory (HBM3)            3.0 TB/s     (cudaMemcpy of 1 GiB device to device, bytes read plus written)

square: C[n, n] = A[n, n] B[n, n]
shape      |         0 cuBLAS fp32
"""


def wrong_csv():
    """FAST_GEMM_CSV with kernel 11's result at 4096 made wrong (rel_error 1e-3, over the bound of ~3.1e-5)."""
    return FAST_GEMM_CSV.replace("132043,0.338396,0", "132043,0.338396,0.001")


class FastGemmSweep(unittest.TestCase):
    def test_parse_the_h100_rows(self):
        rows = sweeps.parse_fast_gemm_csv(FAST_GEMM_CSV)
        self.assertEqual(len(rows), 16)
        r = rows[9]
        self.assertEqual((r["contender"], r["precision"], r["M"], r["gflops"]), ("11 TF32 mma", "tf32", 4096, 132043.0))
        self.assertEqual([r["contender"] for r in rows if r["yardstick"]][:3], ["0 cuBLAS fp32", "cuBLAS tf32",
                                                                               "cuBLAS bf16"])
        self.assertEqual((rows[12]["trans_a"], rows[12]["split_k"], rows[12]["K"]), (True, True, 50176))
        self.assertFalse(any(r["wrong"] for r in rows))
        self.assertTrue(sweeps.parse_fast_gemm_csv(wrong_csv())[9]["wrong"])
        self.assertAlmostEqual(sweeps.fast_gemm_bound(4096), 1e-6 + 8 * 64 / 2 ** 24)

    def test_ceilings_and_gpu_from_the_output(self):
        c = sweeps.parse_ceilings(SWEEP_OUTPUT)
        self.assertEqual([x["what"] for x in c], ["FP32 FMA (CUDA cores)", "BF16 mma.sync m16n8k16",
                                                  "device memory (HBM3)"])
        self.assertEqual((c[1]["rate"], c[1]["unit"]), (600.0, "TFLOP/s"))
        self.assertEqual(c[2]["how"], "cudaMemcpy of 1 GiB device to device, bytes read plus written")
        self.assertEqual(sweeps.parse_ceilings("no roofline here\n"), [])
        self.assertEqual(sweeps.sweep_gpu("note: kernels 13 and 14 (wgmma) need a Hopper GPU\n" + SWEEP_OUTPUT),
                         "NVIDIA H100 80GB HBM3 (sm_90)")

    def test_the_table(self):
        rows = sweeps.parse_fast_gemm_csv(FAST_GEMM_CSV)
        text = sweeps.format_fast_gemm_table(rows, ["header"], sweeps.parse_ceilings(SWEEP_OUTPUT))
        lines = text.splitlines()
        self.assertIn("  BF16 mma.sync m16n8k16         600.0 TFLOP/s  (4 independent mma per warp, operands in "
                      "registers)", lines)
        for block in ("square, FP32: GFLOP/s (% of cuBLAS fp32)", "square, TF32: GFLOP/s (% of cuBLAS tf32)",
                      "square, BF16: GFLOP/s (% of cuBLAS bf16)", "cnn, FP32: GFLOP/s (% of cuBLAS fp32)"):
            self.assertIn(block, lines)
        tf32 = lines[lines.index("square, TF32: GFLOP/s (% of cuBLAS tf32)") + 3:][1]
        self.assertEqual(tf32.split(), ["4096", "NN", "390,203", "132,043", "(34%)"])
        self.assertIn("split-K", text)
        self.assertNotIn("WRONG", text)
        wrong = sweeps.format_fast_gemm_table(sweeps.parse_fast_gemm_csv(wrong_csv()))
        self.assertIn("WRONG 132,043 (34%)", wrong)
        self.assertIn("the sweep's bound", wrong)

    def test_csv_and_svg(self):
        rows = sweeps.parse_fast_gemm_csv(FAST_GEMM_CSV)
        records = list(csv.DictReader(io.StringIO(sweeps.fast_gemm_csv(rows))))
        self.assertEqual(len(records), 16)
        self.assertEqual((records[0]["yardstick"], records[1]["yardstick"], records[12]["split_k"]), ("1", "0", "1"))
        root = ET.fromstring(sweeps.fast_gemm_svg(rows, gpu="H100", machine_line="m", date="d", command="c").encode())
        panels = [e.text for e in root.iter(SVG_NS + "text") if e.get("class") == "panel-title"]
        self.assertEqual(panels, ["FP32: every kernel against cuBLAS fp32", "TF32: every kernel against cuBLAS tf32",
                                  "BF16: every kernel against cuBLAS bf16"])
        lines = [e for e in root.iter(SVG_NS + "polyline") if e.get("class") == "series"]
        self.assertEqual([(e.get("data-precision"), e.get("data-contender")) for e in lines],
                         [("fp32", "0 cuBLAS fp32"), ("fp32", "10 autotuned"), ("tf32", "cuBLAS tf32"),
                          ("tf32", "11 TF32 mma"), ("bf16", "cuBLAS bf16"), ("bf16", "13 BF16 wgmma bf16 in")])
        self.assertEqual({e.get("stroke") for e in lines if "cuBLAS" in e.get("data-contender")}, {"#222222"})
        self.assertEqual(len([e for e in root.iter(SVG_NS + "circle") if e.get("class") == "point"]), 12)  # square only
        self.assertTrue(int(root.get("height")) > 900)

    def test_no_gpu_is_skipped_and_a_wrong_kernel_is_an_error(self):
        r = sweeps.interpret_matmul(1, "", "s07_matmul_sweep needs a CUDA GPU: no CUDA device on this machine\n", [])
        self.assertEqual((r["status"], r["reason"]), ("skipped", "s07_matmul_sweep needs a CUDA GPU: no CUDA device "
                                                                 "on this machine"))
        rows = sweeps.parse_fast_gemm_csv(wrong_csv())
        r = sweeps.interpret_matmul(1, SWEEP_OUTPUT, "a kernel's result differs from cuBLAS of its precision by more "
                                                     "than the bound: see WRONG\n", rows)
        self.assertEqual(r["status"], "error")
        self.assertIn("see WRONG (exit code 1)", r["reason"])

    def test_not_built_is_skipped_with_the_target(self):
        with tempfile.TemporaryDirectory() as tmp:
            build = Path(tmp) / "build"
            (build / "CMakeFiles" / "3.25.1").mkdir(parents=True)
            (build / "CMakeFiles" / "3.25.1" / "CMakeCUDACompiler.cmake").write_text("")
            (build / "CMakeCache.txt").write_text("CMAKE_BUILD_TYPE:STRING=Release\n")
            r = sweeps.run_fast_gemm_sweep(ROOT, build, S07, Path(tmp) / "out")
            self.assertEqual(r["status"], "skipped")
            self.assertIn("--target s07_matmul_sweep", r["reason"])
            self.assertEqual((r["ceilings"], r["notes"], r["rows"]), ([], [], []))

    def test_a_sweep_binary_that_finds_a_wrong_kernel(self):
        """The whole path through a stand-in for s07_matmul_sweep: its options, its CSV, its exit code."""
        with tempfile.TemporaryDirectory() as tmp:
            build, out = Path(tmp) / "build", Path(tmp) / "out"
            (build / "bin").mkdir(parents=True)
            fake = build / "bin" / sweeps.FAST_SWEEP_BINARY
            fake.write_text(f"""#!{sys.executable}
import sys
args = sys.argv[1:]
open(args[args.index("--csv") + 1], "w").write({wrong_csv()!r})
print("note: kernels 13 and 14 (wgmma) need a Hopper GPU and an sm_90a build; here they run 12 and 11")
print({SWEEP_OUTPUT!r})
print("args:", " ".join(args))
sys.stderr.write("a kernel's result differs from cuBLAS of its precision by more than the bound: see WRONG\\n")
sys.exit(1)
""")
            fake.chmod(0o755)
            r = sweeps.run_fast_gemm_sweep(ROOT, build, S07, out, sizes=[128, 4096], course=True)
            self.assertEqual(r["status"], "error")
            self.assertEqual(len(r["rows"]), 16)
            self.assertEqual(len(r["ceilings"]), 3)
            self.assertEqual(len(r["notes"]), 1)
            self.assertIn("--roofline --sizes 128,4096 --course", r["output"])
            self.assertTrue((out / "logs" / "sweep_fast_gemm.log").is_file())
            fake.write_text(f"#!{sys.executable}\nimport sys\nargs = sys.argv[1:]\n"
                            "open(args[args.index('--csv') + 1], 'w').write('table,shape\\nsquare,128\\n')\n")
            r = sweeps.run_fast_gemm_sweep(ROOT, build, S07, out)
            self.assertEqual(r["status"], "error")   # a CSV it cannot read names the file
            self.assertIn("sweep_fast_gemm_raw.csv: KeyError", r["reason"])


class StagesAndOptions(unittest.TestCase):
    def test_select_stages_and_models(self):
        all_ = list(stages.KNOWN_STAGES)
        self.assertEqual([s.id for s in stages.select_stages(all_, "3,01_fc_softmax")], ["01_fc_softmax", "03_openmp"])
        self.assertEqual(len(stages.select_stages(all_, "")), 10,
                         "stages 01 to 08, and 09 on 1 and on 2 GPUs")
        with self.assertRaises(ValueError):
            stages.select_stages(all_, "99")
        with self.assertRaises(ValueError):
            stages.select_models("mlp,resnet")

    def test_stage_09_has_a_row_per_gpu_count(self):
        rows = stages.select_stages(list(stages.KNOWN_STAGES), "9")
        self.assertEqual([(s.id, s.gpus) for s in rows], [("09_multi_gpu", 1), ("09_multi_gpu", 2)])
        self.assertEqual([s.key for s in rows], ["09_multi_gpu_1gpu", "09_multi_gpu_2gpu"], "their logs differ")
        cmd = trainer_command("s09", rows[1], "cnn", epochs=1, batch=64, limit=0, seed=42, dataset="fashion-mnist",
                              json_path="x.json")
        self.assertEqual(cmd[cmd.index("--batch") + 1], "128", "64 a GPU: a global batch of 128")
        self.assertEqual(cmd[-8:], ["--gpus", "2", "--lr-scaling", "linear", "--lr-reference-batch", "64",
                                    "--warmup-steps", "100"])
        one = trainer_command("s09", rows[0], "cnn", epochs=1, batch=64, limit=0, seed=42, dataset="fashion-mnist",
                              json_path="x.json")
        self.assertEqual((one[one.index("--batch") + 1], one[-2:]), ("64", ["--gpus", "1"]))
        self.assertNotIn("--lr-scaling", one)
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

    def test_the_weak_scaling_row_says_what_it_ran(self):
        two = Run(stage="09_multi_gpu", model="cnn", status="ok", device="2 x NVIDIA H200 (sm_90)", gpu=True,
                  options={"weak_scaling": "64 images a GPU a step, a global batch of 128"})
        notes = table.footnotes([two, Run(stage="08_fused", model="cnn", status="ok", device="H200", gpu=True)])
        said = [n for n in notes if "global batch of 128" in n]
        self.assertEqual(len(said), 1, notes)
        self.assertIn("'09_multi_gpu' on 2 x NVIDIA H200", said[0])
        self.assertIn("accuracy is that of the larger batch", said[0])

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
            (root / "stages" / "08_fused").mkdir(parents=True)
            self.assertIn("no cuDNN", stages.not_built_reason(root, build, STAGE["08_fused"]))
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
            # What the busy check and the machine line read: the CPU's vector width and what other programs used.
            self.assertIn("cpu_vector", data["machine"])
            self.assertIn("other_cores_during", data["machine"])
            self.assertIn("--limit 500", data["command"])
            root = ET.fromstring((Path(out) / "compare.svg").read_bytes())
            bars = [e for e in root.iter(SVG_NS + "rect") if e.get("class") == "bar"]
            self.assertEqual(len(bars), sum(1 for r in records if r["status"] == "ok"))
            self.assertTrue((Path(out) / "logs" / "01_fc_softmax_mlp.log").is_file())

    def test_without_a_gpu_the_gpu_stages_are_one_line(self):
        # COURSE_ASSUME_GPU=0: what a machine without a usable GPU sees; the GPU trainers are not even started.
        build = built_trainers_dir()
        with tempfile.TemporaryDirectory() as out:
            proc = subprocess.run([sys.executable, str(ROOT / "tools" / "compare.py"), "--build-dir", str(build),
                                   "--stages", "01,04,05", "--models", "mlp,cnn", "--limit", "500", "--out", out],
                                  cwd=ROOT, capture_output=True, text=True, timeout=300,
                                  env=dict(os.environ, COURSE_ASSUME_GPU="0"))
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            lines = [l for l in proc.stdout.splitlines() if "COURSE_ASSUME_GPU=0" in l]
            self.assertEqual(len(lines), 1, proc.stdout)
            self.assertTrue(lines[0].startswith("GPU stages 04, 05 left out: no usable GPU"), lines[0])
            self.assertFalse([l for l in proc.stdout.splitlines() if l.startswith(("04_", "05_"))], proc.stdout)
            self.assertIn("running 2 trainers", proc.stdout)
            records = list(csv.DictReader(io.StringIO((Path(out) / "compare.csv").read_text())))
            self.assertEqual([(r["stage"], r["status"]) for r in records if r["stage"][:2] in ("04", "05")],
                             [("04_cuda_matmul", "skipped"), ("05_im2col_gemm", "skipped"),
                              ("04_cuda_matmul", "skipped"), ("05_im2col_gemm", "skipped")])
            self.assertFalse((Path(out) / "logs" / "04_cuda_matmul_mlp.log").exists())

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
            for name in ("sweep_matmul", "sweep_fast_gemm"):   # stage 04's, then stage 07's
                data = json.loads((Path(out) / f"{name}.json").read_text())
                self.assertIn(data["status"], ("ok", "skipped"))
                if data["status"] == "skipped":
                    self.assertTrue(data["reason"])
                    self.assertIn("skipped: " + data["reason"], proc.stdout)
                else:
                    self.assertEqual({r["M"] for r in data["rows"]}, {128, 256})
                    ET.fromstring((Path(out) / f"{name}.svg").read_bytes())
                    if name == "sweep_fast_gemm":
                        self.assertTrue(data["ceilings"], "--roofline prints the GPU's ceilings first")
                        self.assertEqual({r["precision"] for r in data["rows"]}, {"fp32", "tf32", "bf16"})

    def test_stage_07_and_its_precision_rows_run_or_say_why_not(self):
        build = built_trainers_dir()
        if not (build / "bin" / "s07_train_solution").is_file():
            self.skipTest(f"stage 07 is not built in {build}")
        with tempfile.TemporaryDirectory() as out:
            # --gpu-stages: run stage 07's trainers even without a GPU, so that each says why it cannot run.
            proc = subprocess.run([sys.executable, str(ROOT / "tools" / "compare.py"), "--build-dir", str(build),
                                   "--stages", "01,07", "--models", "mlp", "--limit", "500", "--out", out,
                                   "--gpu-stages"], cwd=ROOT, capture_output=True, text=True, timeout=300)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            records = list(csv.DictReader(io.StringIO((Path(out) / "compare.csv").read_text())))
            self.assertEqual([(r["stage"], r["variant_of"]) for r in records],
                             [("01_fc_softmax", ""), ("07_fast_gemm", ""), ("07_fast_gemm tf32", "07_fast_gemm"),
                              ("07_fast_gemm bf16", "07_fast_gemm"), ("07_fast_gemm as_sm75", "07_fast_gemm")])
            # The as_sm75 row runs only on a GPU newer than 7.5 (runs.older_gpu_reason): the precision rows here.
            s07 = records[1:4]
            self.assertEqual(len({r["status"] for r in s07}), 1, s07)   # a GPU runs all three, or none
            if s07[0]["status"] == "skipped":
                self.assertTrue(all(r["reason"] == s07[0]["reason"] != "" for r in s07), s07)
            else:
                self.assertEqual(s07[0]["status"], "ok")
                self.assertTrue(all(r["vs_prev_stage"] == "07_fast_gemm" for r in s07[1:]), s07)
                data = json.loads((Path(out) / "compare.json").read_text())
                self.assertEqual([r["options"].get("precision") for r in data["rows"][1:4]], ["fp32", "tf32", "bf16"])
            self.assertTrue((Path(out) / "logs" / "07_fast_gemm_mlp_bf16.log").is_file())
            ET.fromstring((Path(out) / "compare.svg").read_bytes())


if __name__ == "__main__":
    unittest.main()
