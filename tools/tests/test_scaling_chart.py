"""Tests of tools/scaling_chart.py on canned stage 09 trainer JSON (no GPU needed).

    python3 -m unittest discover -s tools/tests
"""
import json
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import scaling_chart  # noqa: E402


def run_json(model, gpus, batch, images_per_second, spec=None, status="ok", stage="09_multi_gpu"):
    """What s09_train_solution --json holds, trimmed to what the chart reads; two epochs, the first slower."""
    return {"stage": {"id": stage}, "status": status, "device": f"{gpus} x NVIDIA H200 (sm_90)",
            "options": {"batch": batch},
            "arch": {"model": "custom" if spec else model, "spec": spec or model},
            "stage_results": {"ranks": gpus, "global_batch": batch, "allreduce": "buckets"},
            "epochs": [{"epoch": 1, "images_per_second": images_per_second / 2},
                       {"epoch": 2, "images_per_second": images_per_second}]}


class ScalingChart(unittest.TestCase):
    def setUp(self):
        self.dir = Path(self.enterContext(tempfile.TemporaryDirectory()))

    def write(self, name, data):
        p = self.dir / f"{name}.json"
        p.write_text(json.dumps(data))
        return str(p)

    def test_weak_and_strong_speedups(self):
        files = [self.write("a", run_json("cnn", 1, 64, 300000)),       # weak base (64 = 64 x 1)
                 self.write("b", run_json("cnn", 2, 128, 540000)),      # weak, 2 GPUs: 1.8x
                 self.write("c", run_json("cnn", 1, 256, 400000)),      # strong base
                 self.write("d", run_json("cnn", 2, 256, 600000)),      # strong: 1.5x
                 self.write("e", run_json(None, 1, 64, 50000, spec=scaling_chart.WIDE)),
                 self.write("f", run_json(None, 2, 128, 99000, spec=scaling_chart.WIDE))]
        runs = [scaling_chart.read_run(f)[0] for f in files]
        rows = scaling_chart.scaling_rows(runs, 64, 256)
        by = {(r["kind"], r["model"], r["gpus"]): r for r in rows}
        self.assertAlmostEqual(by[("weak", "cnn", 2)]["speedup"], 1.8)
        self.assertAlmostEqual(by[("weak", "cnn", 2)]["efficiency"], 0.9)
        self.assertAlmostEqual(by[("strong", "cnn", 2)]["speedup"], 1.5)
        self.assertAlmostEqual(by[("weak", "wide", 2)]["speedup"], 1.98)
        self.assertEqual(by[("weak", "cnn", 1)]["images_per_second"], 300000, "the epochs after the first")
        self.assertNotIn(("strong", "wide", 1), by, "batch 64 on one GPU is no strong-scaling run at 256")
        text = scaling_chart.format_table(rows)
        self.assertIn("1.80x", text)
        chart = ET.fromstring(scaling_chart.to_svg(rows, per_gpu_batch=64, global_batch=256))
        names = {e.get("data-model") + "/" + e.get("data-kind")
                 for e in chart.iter("{http://www.w3.org/2000/svg}polyline") if e.get("data-model")}
        self.assertEqual(names, {"cnn/weak", "cnn/strong", "wide/weak"})

    def test_runs_that_are_not_stage_09_or_did_not_finish_are_left_out(self):
        self.assertIsNone(scaling_chart.read_run(self.write("x", run_json("cnn", 1, 64, 1, stage="06_cudnn")))[0])
        run, why = scaling_chart.read_run(self.write("y", run_json("cnn", 1, 64, 1, status="diverged")))
        self.assertIsNone(run)
        self.assertIn("did not finish", why)
        rows = scaling_chart.scaling_rows([scaling_chart.read_run(self.write("z", run_json("cnn", 2, 128, 9)))[0]], 64,
                                          256)
        self.assertIsNone(rows[0]["speedup"], "no one-GPU run: no speedup")
        self.assertIn("no 1-GPU run", scaling_chart.format_table(rows))

    def test_wide_is_the_lessons_model(self):
        header = (ROOT / "solutions" / "09_multi_gpu" / "scaling_models.hpp").read_text()
        self.assertIn(f'return "{scaling_chart.WIDE}";', header, "the chart and the trainer must name one model")

    def test_command_line(self):
        files = [self.write("a", run_json("cnn-deep", 1, 64, 200000)), self.write("b", run_json("cnn-deep", 2, 128, 380000))]
        out_svg, out_csv = self.dir / "s.svg", self.dir / "s.csv"
        self.assertEqual(scaling_chart.main(files + ["--svg", str(out_svg), "--csv", str(out_csv)]), 0)
        self.assertTrue(out_svg.read_text().startswith("<?xml"))
        self.assertIn("weak,cnn-deep,2,128", out_csv.read_text())
        self.assertEqual(scaling_chart.main([self.write("c", run_json("mlp", 4, 100, 1))]), 1, "nothing fits")


if __name__ == "__main__":
    unittest.main()
