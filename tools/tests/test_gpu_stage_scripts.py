"""The GPU machine's stage script (tools/gpu/stage.sh NN, each stage's own runs in tools/gpu/stages/NN.sh), checked
where no GPU is: each parses (bash -n); stage 04's runs end to end as a dry run (STEP_DRY_RUN=1: every step's
command logged, none run), naming the stage's folder, targets and proof from the stage list; and the epoch
lines of a trainer's JSON (tools/gpu/epoch_lines.py).

    python3 -m unittest tools.tests.test_gpu_stage_scripts     (tools/test.d/compare-selftest runs it)
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GPU = ROOT / "tools" / "gpu"
sys.path.insert(0, str(GPU))

import epoch_lines  # noqa: E402


class StageScripts(unittest.TestCase):
    def test_every_stage_script_parses(self):
        scripts = sorted((GPU / "stages").glob("*.sh")) + [GPU / "stage.sh", GPU / "steps.sh"]
        self.assertEqual(len(scripts), 8)
        for script in scripts:
            proc = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
            self.assertEqual(proc.returncode, 0, f"{script.name}: {proc.stderr}")

    def test_a_stage_without_runs_is_refused_with_the_list(self):
        for args in ([], ["03"], ["4"]):
            proc = subprocess.run(["bash", str(GPU / "stage.sh"), *args], capture_output=True, text=True, timeout=30)
            self.assertEqual(proc.returncode, 2, args)
            self.assertIn("NN one of: 04 05 06 07 08 09", proc.stderr)

    def test_stage04_dry_run(self):
        with tempfile.TemporaryDirectory() as out:
            proc = subprocess.run(["bash", str(GPU / "stage.sh"), "04"], capture_output=True, text=True, timeout=120,
                                  env=dict(os.environ, STEP_DRY_RUN="1", OUT=out))
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            self.assertEqual(sorted(os.listdir(out)), ["results.tar.gz", "stage04.log"])
            log = (Path(out) / "stage04.log").read_text()
        self.assertIn("stage 04 (04_cuda_matmul) on ", log)
        self.assertIn("--target s04_train_solution s04_tests_solution s04_tests_exercise s04_bench", log)
        self.assertIn("tools/prove_exercises.py --build-dir build/gpu --stage 04_cuda_matmul", log)
        self.assertIn("--tool racecheck", log)
        summary = log.split("================ summary")[1].splitlines()[1:]
        steps = [l for l in summary if l.strip() and "dry run" in l]
        self.assertEqual(len(steps), 16, summary)  # configure, build, tests, 6 runs, 2 sweeps, 3 tools, bench, proof
        self.assertTrue(log.rstrip().endswith(f"logs in {out}"), log[-200:])


class EpochLines(unittest.TestCase):
    def test_a_line_per_epoch_with_the_workspace(self):
        run = {"device": "H100", "data": {"dataset": "fashion-mnist"},
               "stage_results": {"workspace_bytes": 2.5e6, "split_k_chunks": 8},
               "epochs": [{"epoch": 1, "seconds": 0.5, "images_per_second": 120000, "loss": 0.5,
                           "test_accuracy": 0.85}, {"epoch": 2, "seconds": 0.25, "loss": None}]}
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "train_cnn_own.json"
            path.write_text(json.dumps(run))
            lines = list(epoch_lines.lines(path))
        self.assertEqual(len(lines), 2)
        self.assertTrue(lines[0].startswith("cnn_own "), lines[0])
        self.assertIn("epoch 1: 0.500 s     120000 img/s  loss 0.5000  test 85.00%  workspace 2.50 MB, split-K 8  "
                      "(H100, fashion-mnist)", lines[0])
        self.assertIn("loss nan", lines[1])


if __name__ == "__main__":
    unittest.main()
