"""tools/include_graph.py: common/ includes in one direction. A miniature common/ in a temporary folder:
a clean one passes; a loop through a source file (the data.cpp / data_transform.hpp kind), a loop of two
headers, an include of a layer above, an include of a stage's code and a file in no layer each fail,
naming the files.
(The repository itself is checked by tools/test.d/include-graph.)

    python3 -m unittest tools.tests.test_include_graph     (tools/test.d/compare-selftest runs it)
"""
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import include_graph  # noqa: E402

CLEAN = {
    "common/core/rng.hpp": "",
    "common/model/arch.hpp": '#include "common/core/rng.hpp"\n',
    "common/data/data.hpp": '#include "common/model/arch.hpp"\n',
    "common/data/data.cpp": '#include "common/data/data.hpp"\n',
    "common/data/load_data.hpp": '#include "common/data/data.hpp"\n',
    "common/data/load_data.cpp": '#include "common/data/load_data.hpp"\n#include "common/data/data_transform.hpp"\n',
    "common/data/data_transform.hpp": '#include "common/data/data.hpp"\n',
    "common/train/engine.hpp": '#include "common/data/data.hpp"\n',
    "common/gpu/gpu_engine.hpp": '#include "common/train/engine.hpp"\n#include "common/gpu/step_capture.hpp"\n',
    "common/gpu/step_capture.hpp": "",
    "common/gpu/step_capture.cu": '#include "common/gpu/step_capture.hpp"\n',
    "common/multi_gpu/launcher.cpp": '#include "common/gpu/gpu_engine.hpp"\n',
}


def problems(changes):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for rel, text in {**CLEAN, **changes}.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        return include_graph.problems(root)


class IncludeGraphTest(unittest.TestCase):
    def assert_one_problem(self, changes, says):
        """The clean tree with `changes` planted has exactly one problem, and its line holds `says`."""
        found = problems(changes)
        self.assertEqual(len(found), 1, found)
        self.assertIn(says, found[0])

    def test_clean_tree_passes(self):
        self.assertEqual(problems({}), [])

    def test_loop_through_a_source_file(self):
        self.assert_one_problem({"common/data/data.cpp":
                                 '#include "common/data/data.hpp"\n#include "common/data/data_transform.hpp"\n'},
                                "include loop among common/data/data, common/data/data_transform")

    def test_loop_of_two_headers(self):
        self.assert_one_problem({"common/data/data_transform.hpp": '#include "common/data/load_data.hpp"\n'},
                                "common/data/data_transform, common/data/load_data")

    def test_include_of_a_layer_above(self):
        found = problems({"common/train/engine.hpp": '#include "common/gpu/step_capture.hpp"\n'})
        self.assertEqual(found, ["common/train/engine.hpp:1: includes common/gpu/step_capture.hpp, of the layer "
                                 "above (common/gpu is above common/train)"])
        self.assert_one_problem({"common/gpu/step_capture.cu": '\n#include "common/multi_gpu/launcher.hpp"\n'},
                                "common/gpu/step_capture.cu:2:")
        found = problems({"common/data/data.hpp": '#include "common/train/engine.hpp"\n'})
        self.assertIn("common/data/data.hpp:1: includes common/train/engine.hpp, of the layer above", found[0])

    def test_include_of_a_stage(self):
        self.assert_one_problem({"common/train/engine.hpp": '#include "04_cuda_matmul/mlp_step.hpp"\n'},
                                "a stage's code")

    def test_a_file_in_no_layer(self):
        self.assert_one_problem({"common/helpers.hpp": ""}, "common/helpers.hpp: at common/'s root, in no layer")

    def test_the_repository_passes(self):
        self.assertEqual(include_graph.problems(ROOT), [])


if __name__ == "__main__":
    unittest.main()
