"""tools/gpu_table.py: README's table of GPUs is the one the rules give, and the rules read as the C++ reads them."""
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import gpu_table  # noqa: E402


class GpuTableTest(unittest.TestCase):
    def setUp(self):
        self.features = {f["id"]: f for f in gpu_table.read_features()}
        self.fallbacks = gpu_table.read_fallbacks()

    def test_readme_table_is_the_rules_table(self):
        self.assertEqual(gpu_table.main(["--check"]), 0,
                         "README.md's table of GPUs is stale: python3 tools/gpu_table.py --write")

    def test_every_feature_the_fallbacks_name_exists(self):
        for kernel, (feature, instead) in self.fallbacks.items():
            self.assertIn(feature, self.features, f"kernel {kernel}")
            self.assertLess(instead, kernel, f"kernel {kernel} falls back to a later kernel")

    def test_kernel_that_runs_follows_the_chain_to_the_end(self):
        run = lambda k, cc: gpu_table.kernel_that_runs(k, cc, self.features, self.fallbacks)  # noqa: E731
        self.assertEqual(run(11, 75), 8)    # 11 -> 10 -> 8 on a T4
        self.assertEqual(run(13, 80), 12)   # no wgmma on an A100
        self.assertEqual(run(13, 90), 13)
        self.assertEqual(run(14, 100), 11)  # sm_90a code runs on 9.0 alone
        for k in gpu_table.STAGE07_KERNELS:
            self.assertEqual(run(k, 90), k)

    def test_the_table_changes_when_a_rule_does(self):
        features = dict(self.features)
        features["Tf32Mma"] = dict(features["Tf32Mma"], lowest=86)
        self.assertEqual(gpu_table.kernel_that_runs(11, 80, features, self.fallbacks), 10)
        self.assertNotEqual(gpu_table.tables(list(features.values()), self.fallbacks),
                            gpu_table.tables(list(self.features.values()), self.fallbacks))


if __name__ == "__main__":
    unittest.main()
