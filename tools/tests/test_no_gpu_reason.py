"""The comparison's skipped rows on a machine without a GPU: each row quotes CUDA's words, and what they
mean here (common/gpu/cuda_check.hpp's no_gpu_reason) is said once, under the table.

    python3 -m unittest tools.tests.test_no_gpu_reason     (tools/test.d/compare-selftest runs it)
"""
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from compare_lib import stages, table  # noqa: E402
from compare_lib.runs import interpret  # noqa: E402

STAGE = {s.id: s for s in stages.KNOWN_STAGES}
CUDA_WORDS = "no usable GPU: cudaGetDeviceCount: CUDA driver version is insufficient for CUDA runtime version"
# What a GPU trainer prints on this machine (stages/05_im2col_gemm/main.cpp + no_gpu_reason).
REFUSAL = (f"error: stage 05 trains on a CUDA GPU, and there is none: {CUDA_WORDS} (this machine has no NVIDIA "
           "driver, hence no GPU to run on): stages 01-03 run here on the CPU; the GPU stages, 04 and later, build "
           "here and can be read; their figures, measured on an H100, are in docs/figures/ and in the lessons")


class NoGpuRows(unittest.TestCase):
    def runs(self):
        return [interpret(STAGE[s], m, 1, "", REFUSAL.replace("stage 05", f"stage {s[:2]}"), None)
                for s, m in (("05_im2col_gemm", "mlp"), ("06_cudnn", "mlp"), ("06_cudnn", "cnn"))]

    def test_the_row_keeps_the_whole_reason_in_its_data(self):
        r = self.runs()[0]
        self.assertEqual(r.status, "skipped")
        self.assertTrue(r.reason.startswith(CUDA_WORDS + " (this machine has no NVIDIA driver"), r.reason)

    def test_the_table_quotes_cuda_in_each_row_and_explains_once(self):
        text = table.format_table(self.runs())
        rows = [l for l in text.splitlines() if "skipped:" in l]
        self.assertEqual(len(rows), 3)
        for row in rows:
            self.assertTrue(row.rstrip().endswith(f"skipped: {CUDA_WORDS} (what it means: below)"), row)
        notes = [l for l in text.splitlines() if "this machine has no NVIDIA driver" in l]
        self.assertEqual(len(notes), 1, text)
        self.assertEqual(notes[0], f"'{CUDA_WORDS}': this machine has no NVIDIA driver, hence no GPU to run on. "
                                   "Stages 01-03 run here on the CPU; the GPU stages, 04 and later, build here and "
                                   "can be read; their figures, measured on an H100, are in docs/figures/ and in the "
                                   "lessons.")

    def test_a_short_reason_stays_whole_in_its_row(self):
        # The reasons measured before the explanation existed (docs/figures/compare_vm.json) read as they did.
        self.assertEqual(table.split_reason(CUDA_WORDS), (CUDA_WORDS, ""))
        self.assertEqual(table.split_reason("stage 04 has no conv layers (it trains the MLP)"),
                         ("stage 04 has no conv layers (it trains the MLP)", ""))


if __name__ == "__main__":
    unittest.main()
