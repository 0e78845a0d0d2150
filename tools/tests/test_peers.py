"""Tests of the PyTorch peer of tools/compare.py, everything that needs no PyTorch: the copy of the course's
RNG and shuffle (against numbers the C++ prints, pinned in tests/common/rng_test.cpp too), the model-file
reader (on files the trainers write), the IDX reader, the recipe, the table, CSV, JSON and SVG with peer
rows (ran or skipped), the parity verdicts, and compare.py --peer pytorch where PyTorch is hidden.

    python3 -m unittest discover -s tools/tests
    COMPARE_PEER_PYTHON=/usr/bin/python3 python3 -m unittest discover -s tools/tests -k WithTorch
        also run PyTorch for real (CPU is enough): the parity self-test against stages 01 and 02, which
        must pass, and a comparison whose PyTorch CPU rows must run
"""
import csv
import gzip
import io
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET
from array import array
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from compare_lib import idx, model_file, peer_parity, peers, recipe, table  # noqa: E402
from compare_lib.course_rng import Rng, epoch_order  # noqa: E402
from compare_lib.runs import Run, full_epoch_images, interpret, run_from_dict  # noqa: E402
from test_compare import SVG_NS, built_trainers_dir, ok_run  # noqa: E402

HIDDEN_TORCH = f"{sys.executable} -S"   # -S: no site-packages, so no PyTorch whatever is installed
PEER = {p.id: p for p in peers.PYTORCH_ROWS}
TORCH_INFO = {"framework": "pytorch", "torch": "2.11.0+cu130", "cuda": "13.0", "cudnn": 91400,
              "init_written_by": "01_fc_softmax"}


class CourseRng(unittest.TestCase):
    """The numbers are the C++ generator's (also pinned in tests/common/rng_test.cpp)."""

    def test_pinned_first_values(self):
        self.assertEqual(Rng(42).next_u64(), 1546998764402558742)
        r = Rng(42)
        for want in (-1.61322379, 1.53448737, 0.781692028):
            self.assertAlmostEqual(r.normal(), want, places=6)
        r = Rng(42, 11)
        self.assertEqual(r.uniform(), 0.4581923489586518)
        self.assertEqual(r.uniform(-0.5, 0.5), 0.30663206536774645)

    def test_pinned_epoch_orders(self):
        cases = [(60000, 42, 0, [19911, 6414, 8512, 47660, 13461, 13805, 20195, 55348], 6900),
                 (60000, 42, 1, [43234, 46400, 14883, 34010, 51533, 32077, 56536, 13643], 11274),
                 (1280, 42, 0, [94, 1124, 1005, 152, 1233, 747, 950, 471], 20),
                 (10, 7, 3, [6, 5, 3, 2, 9, 7, 4, 8], 0)]
        for n, seed, epoch, first, last in cases:
            order = epoch_order(n, seed, epoch)
            self.assertEqual(order[:8], first, (n, seed, epoch))
            self.assertEqual(order[-1], last, (n, seed, epoch))
            self.assertEqual(sorted(order), list(range(n)))

    def test_below_is_in_range_and_refuses_zero(self):
        r = Rng(1)
        self.assertEqual({r.below(7) for _ in range(500)}, set(range(7)))
        with self.assertRaises(ValueError):
            r.below(0)


class Recipe(unittest.TestCase):
    CNN = "conv16k3p1,relu,pool2,conv32k3p1,relu,pool2,flatten,fc100,relu,fc10"

    def test_parameters_of_the_cnn(self):
        shapes = recipe.parameter_shapes(recipe.parse_spec(self.CNN), (1, 28, 28))
        self.assertEqual([(n, s) for n, s, _ in shapes],
                         [("conv1.weight", (16, 1, 3, 3)), ("conv1.bias", (16,)), ("conv2.weight", (32, 16, 3, 3)),
                          ("conv2.bias", (32,)), ("fc1.weight", (100, 1568)), ("fc1.bias", (100,)),
                          ("fc2.weight", (10, 100)), ("fc2.bias", (10,))])
        self.assertEqual([f for _, _, f in shapes][::2], [9, 144, 1568, 100])

    def test_shapes_and_spellings(self):
        layers = recipe.parse_spec("conv8k5s2p2, pool3s2, flatten, fc10")
        self.assertEqual(layers[0], recipe.Layer("conv", units=8, kernel=5, stride=2, pad=2))
        self.assertEqual(layers[1], recipe.Layer("pool", kernel=3, stride=2))
        self.assertEqual(recipe.layer_shapes(layers, (3, 32, 32)), [(8, 16, 16), (8, 7, 7), (392, 1, 1), (10, 1, 1)])
        for bad in ("fc", "conv16p1", "conv16k3k3", "pool", "dense10", ""):
            with self.assertRaises(ValueError, msg=bad):
                recipe.parse_spec(bad)

    def test_learning_rate_schedule(self):
        self.assertEqual(recipe.scheduled_learning_rate(0.02, "constant", 3, 5), 0.02)
        self.assertEqual(recipe.scheduled_learning_rate(0.02, "cosine", 0, 2), 0.02)
        self.assertAlmostEqual(recipe.scheduled_learning_rate(0.02, "cosine", 1, 2), 0.01)
        self.assertAlmostEqual(recipe.scheduled_learning_rate(0.02, "cosine", 2, 3), 0.005)
        with self.assertRaises(ValueError):
            recipe.scheduled_learning_rate(0.02, "step", 0, 1)

    def test_spread_values(self):
        v = recipe.spread_values([("fc1.weight", (4, 100)), ("fc1.bias", (4,))], 99)
        self.assertTrue(all(abs(x) <= 0.1 for x in v["fc1.weight"]))
        self.assertTrue(all(abs(x) <= 0.1 for x in v["fc1.bias"]))
        self.assertGreater(max(abs(x) for x in v["fc1.bias"]), 0.01)
        self.assertEqual(v, recipe.spread_values([("fc1.weight", (4, 100)), ("fc1.bias", (4,))], 99))
        self.assertNotEqual(v, recipe.spread_values([("fc1.weight", (4, 100)), ("fc1.bias", (4,))], 98))


def small_model():
    return model_file.Model("fc3,relu,fc2", (1, 2, 2), 2, "test", [
        model_file.Tensor("fc1.weight", (3, 4), array("f", [i / 8 - 0.5 for i in range(12)])),
        model_file.Tensor("fc1.bias", (3,), array("f", [0.25, -1.5, 3.0])),
        model_file.Tensor("fc2.weight", (2, 3), array("f", [1e-30, -2.5e10, 7, 0, -0.0, 1 / 3])),
        model_file.Tensor("fc2.bias", (2,), array("f", [0, 1]))])


class ModelFiles(unittest.TestCase):
    def test_round_trip(self):
        m = small_model()
        again = model_file.decode(model_file.encode(m))
        self.assertEqual((again.arch, again.input, again.classes, again.stage), (m.arch, m.input, m.classes, m.stage))
        self.assertEqual([(t.name, t.shape, list(t.values)) for t in again.tensors],
                         [(t.name, t.shape, list(t.values)) for t in m.tensors])

    def test_the_layout_is_the_documented_one(self):
        data = model_file.encode(small_model())
        self.assertEqual(data[:8], b"NNCMODEL")
        self.assertEqual(struct.unpack("<I", data[8:12])[0], 1)
        self.assertEqual(struct.unpack("<I", data[12:16])[0], len("fc3,relu,fc2"))
        self.assertEqual(struct.unpack("<Q", data[-8:])[0], model_file.fnv1a64(data[:-8]))
        self.assertEqual(model_file.fnv1a64(b""), 0xCBF29CE484222325)
        self.assertEqual(model_file.fnv1a64(b"a"), 0xAF63DC4C8601EC8C)   # the published FNV-1a 64 of "a"

    def test_damage_is_named(self):
        good = model_file.encode(small_model())
        cases = {b"": "is empty", b"NNCMODEX" + good[8:]: "not a model file",
                 good[:8] + struct.pack("<I", 2) + good[12:]: "format version 2",
                 good[:40]: "truncated", good + b"x": "unexpected bytes",
                 good[:-9] + bytes([good[-9] ^ 1]) + good[-8:]: "checksum mismatch"}
        for data, words in cases.items():
            with self.assertRaises(model_file.ModelFileError) as e:
                model_file.decode(data, "m.bin")
            self.assertIn(words, str(e.exception))
            self.assertIn("m.bin", str(e.exception))
        with self.assertRaises(model_file.ModelFileError):
            model_file.read_model("/nonexistent/m.bin")

    def test_write_is_read_back(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "m.bin"
            model_file.write_model(path, small_model())
            self.assertEqual(model_file.read_model(path).tensors[1].values, small_model().tensors[1].values)
            self.assertFalse((Path(tmp) / "m.bin.tmp").exists())


@unittest.skipIf(built_trainers_dir() is None, "no built s01_train_solution (build the preset ci or default first)")
class FilesTheTrainersWrite(unittest.TestCase):
    """The reader on model files the trainers write: their initial weights (--epochs 0 --save) are exactly
    the He initialisation drawn by the Python copy of the RNG, and a file they trained reads whole."""

    def trainer_file(self, stage, *args):
        binary = built_trainers_dir() / "bin" / f"s{stage}_train_solution"
        if not binary.is_file():
            self.skipTest(f"{binary} is not built")
        tmp = tempfile.mkdtemp()
        path = Path(tmp) / "m.bin"
        proc = subprocess.run([str(binary), "--dataset", "synthetic", "--no-progress", "--save", str(path), *args],
                              capture_output=True, text=True, timeout=300)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        return model_file.read_model(path)

    def assert_he_initial(self, m, seed):
        want = recipe.he_initial_parameters(m.arch, m.input, seed)
        self.assertEqual([t.name for t in m.tensors], list(want))
        for t in m.tensors:
            # Bit for bit where C++ and Python share the C library's log, sin and cos; a last-bit slack otherwise.
            worst = max(abs(a - b) for a, b in zip(t.values, want[t.name]))
            self.assertLessEqual(worst, 1e-6, t.name)

    def test_initial_weights_of_the_mlp_and_the_cnn(self):
        m = self.trainer_file("01", "--model", "mlp", "--epochs", "0", "--seed", "5")
        self.assertEqual((m.arch, m.input, m.classes, m.stage), ("fc256,relu,fc128,relu,fc10", (1, 28, 28), 10,
                                                                 "01_fc_softmax"))
        self.assert_he_initial(m, 5)
        m = self.trainer_file("02", "--model", "cnn", "--epochs", "0")
        self.assertEqual(m.arch, Recipe.CNN)
        self.assertEqual([t.shape for t in m.tensors][:2], [(16, 1, 3, 3), (16,)])
        self.assert_he_initial(m, 42)

    def test_a_trained_model(self):
        m = self.trainer_file("01", "--layers", "784,32,10", "--epochs", "1", "--limit", "300")
        self.assertEqual([(t.name, t.shape) for t in m.tensors],
                         [("fc1.weight", (32, 784)), ("fc1.bias", (32,)), ("fc2.weight", (10, 32)), ("fc2.bias", (10,))])
        self.assertTrue(any(v != 0 for v in m.tensors[1].values), "training moved the biases off 0")


def idx_files(folder, n=3, rows=2, cols=3, gz=False, labels=None):
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    images = struct.pack(">IIII", 0x803, n, rows, cols) + bytes(range(n * rows * cols))
    labs = struct.pack(">II", 0x801, n) + bytes(labels or [i % 10 for i in range(n)])
    opener = gzip.compress if gz else (lambda b: b)
    for prefix in ("train", "t10k"):
        suffix = ".gz" if gz else ""
        (folder / f"{prefix}-images-idx3-ubyte{suffix}").write_bytes(opener(images))
        (folder / f"{prefix}-labels-idx1-ubyte{suffix}").write_bytes(opener(labs))


class IdxFiles(unittest.TestCase):
    def test_pixels_are_the_stages_floats(self):
        table = idx.unit_table()
        self.assertEqual((table[0], table[255]), (0.0, 1.0))
        for b in (1, 3, 128, 254):   # float32(b) / float32(255), rounded once
            self.assertEqual(table[b], struct.unpack("<f", struct.pack("<f", b / 255.0))[0])
            self.assertEqual(table[b], array("f", [b / 255.0])[0])

    def test_plain_and_gzip_with_a_limit(self):
        for gz in (False, True):
            with tempfile.TemporaryDirectory() as tmp:
                idx_files(Path(tmp) / "data" / "mnist", n=5, gz=gz)
                train, test, whole = idx.load_idx_split("mnist", "", tmp, limit=2)
                self.assertEqual((len(train), len(test), whole, train.shape), (2, 5, 5, (1, 2, 3)))
                self.assertEqual(train.pixels, bytes(range(12)))
                self.assertEqual(list(train.labels), [0, 1])
                note = idx.data_note("mnist", train, test, whole)
                self.assertIn("mnist: 5 train, 5 test images from", note)
                self.assertIn("training on the first 2 examples (--limit)", note)
                self.assertEqual(full_epoch_images({"note": note, "train_examples": 2}), 5)

    def test_missing_and_damaged_files_are_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            with self.assertRaises(idx.DataError) as e:
                idx.load_idx_split("mnist", "nowhere", tmp)
            self.assertIn("not found in --data-dir", str(e.exception))
            self.assertIn("train-images-idx3-ubyte[.gz]", str(e.exception))
            with self.assertRaises(idx.DataError) as e:
                idx.find_idx("cifar10", "", tmp)
            self.assertIn("IDX data sets", str(e.exception))
            idx_files(Path(tmp) / "bad", labels=[1, 2, 12])
            with self.assertRaises(idx.DataError) as e:
                idx.load_idx_split("mnist", "bad", tmp)
            self.assertIn("label 12 at index 2", str(e.exception))
        images = struct.pack(">IIII", 0x803, 2, 2, 2) + bytes(8)
        labels = struct.pack(">II", 0x801, 2) + bytes(2)
        with self.assertRaises(idx.DataError) as e:
            idx.parse_idx(labels, images, "a", "b")
        self.assertIn("wrong magic number", str(e.exception))
        with self.assertRaises(idx.DataError) as e:
            idx.parse_idx(images[:-1], labels)
        self.assertIn("expected 24 bytes", str(e.exception))

    def test_search_order_is_the_trainers(self):
        dirs = idx.search_dirs("fashion-mnist", "", "/r")
        self.assertEqual([str(d) for d in dirs], ["/r/data/fashion-mnist", "/r/data", "/usr/share/datasets/fashion-mnist"])
        self.assertEqual([str(d) for d in idx.search_dirs("mnist", "x", "/r")], ["/r/x"])


def peer_ok(peer_id, model, seconds, images=60000, accuracy=0.85):
    """A ran PyTorch row, from JSON shaped like pytorch_peer.py's."""
    peer = PEER[peer_id]
    note = "fashion-mnist: 60000 train, 10000 test images from data" + (
        f"; training on the first {images} examples (--limit)" if images < 60000 else "")
    results = {"status": "ok", "device": "NVIDIA H100 80GB HBM3 (sm_90)" if peer.gpu else "CPU, 16 threads",
               "threads": 1, "data": {"dataset": "fashion-mnist", "note": note, "train_examples": images},
               "epochs": [{"epoch": 1, "seconds": seconds, "images_per_second": images / seconds, "loss": 0.5,
                           "test_accuracy": accuracy}]}
    run = interpret(peer, model, 0, "", "", results)
    run.peer, run.options = "pytorch", dict(TORCH_INFO)
    return run


def peer_table(with_torch=True):
    """Stages 01, 04, 06 on the MLP and PyTorch's five rows: ran, or skipped without PyTorch."""
    runs = [ok_run("01_fc_softmax", "mlp", 10.0), ok_run("04_cuda_matmul", "mlp", 0.5, device="H100"),
            ok_run("06_cudnn", "mlp", 0.21, device="H100")]
    if with_torch:
        runs += [peer_ok("pytorch_eager", "mlp", 1.0), peer_ok("pytorch_graph", "mlp", 0.25),
                 peer_ok("pytorch_compile", "mlp", 0.2), peer_ok("pytorch_cpu_1t", "mlp", 4.0, images=6000),
                 peer_ok("pytorch_cpu", "mlp", 2.0)]
    else:
        runs += [peers.peer_row(p, "mlp", "skipped", "PyTorch is not installed: No module named 'torch'")
                 for p in peers.PYTORCH_ROWS]
    return table.order_rows(table.compute_speedups(runs[::-1]), ["mlp"])


class PeerTable(unittest.TestCase):
    def test_peer_rows_stand_outside_the_chain_of_stages(self):
        rows = peer_table()
        by = {r.stage: r for r in rows}
        self.assertEqual([r.stage for r in rows], ["01_fc_softmax", "04_cuda_matmul", "06_cudnn", "pytorch_eager",
                                                   "pytorch_graph", "pytorch_compile", "pytorch_cpu_1t", "pytorch_cpu"])
        self.assertEqual(by["06_cudnn"].vs_prev[0], "04_cuda_matmul")        # not a PyTorch row
        self.assertIsNone(by["pytorch_graph"].vs_prev)
        self.assertEqual(by["pytorch_graph"].vs_first[0], "01_fc_softmax")
        self.assertAlmostEqual(by["pytorch_graph"].vs_first[1], 40.0)
        for r in rows:   # against the fastest PyTorch row: compile, 0.2 s
            self.assertEqual(r.vs_peer[0], "pytorch_compile")
        self.assertAlmostEqual(by["06_cudnn"].vs_peer[1], 0.2 / 0.21)
        self.assertAlmostEqual(by["pytorch_cpu_1t"].vs_peer[1], 0.2 / 40.0)   # 6,000 images scaled to 60,000

    def test_the_text_table_reads_against_pytorchs_best(self):
        text = table.format_table(peer_table(), ["header"])
        head = next(l for l in text.splitlines() if l.startswith("stage "))
        self.assertIn("vs PyTorch best", head)
        row = next(l for l in text.splitlines() if l.startswith("06_cudnn"))
        self.assertIn("0.95x", row)
        self.assertIn("1.00x", next(l for l in text.splitlines() if l.startswith("pytorch_compile")))
        self.assertIn("PyTorch rows: PyTorch 2.11.0+cu130 (CUDA 13.0, cuDNN 91400)", text)
        self.assertIn("vs PyTorch best = seconds per epoch of the fastest PyTorch row of the same model "
                      "(mlp: pytorch_compile)", text)
        self.assertIn("graph: the whole step", text)

    def test_skipped_peer_rows_keep_every_file_well_formed(self):
        rows = peer_table(with_torch=False)
        text = table.format_table(rows)
        self.assertNotIn("vs PyTorch best", text)                  # no column when no PyTorch row ran
        self.assertEqual(text.count("skipped: PyTorch is not installed: No module named 'torch'"), 5)
        head = next(l for l in text.splitlines() if l.startswith("stage "))
        self.assertEqual(head.split(), " ".join(table.HEADERS).split())
        records = list(csv.DictReader(io.StringIO(table.to_csv(rows))))
        self.assertEqual(len(records), 8)
        self.assertEqual(list(records[0]), table.CSV_FIELDS)
        peer_records = [r for r in records if r["peer"] == "pytorch"]
        self.assertEqual({r["status"] for r in peer_records}, {"skipped"})
        self.assertTrue(all(r["seconds_per_epoch"] == "" and r["speedup_vs_peer_best"] == "" for r in peer_records))
        data = json.loads(table.to_json(rows, machine={}, command="c", date="d", settings={"peer": "pytorch"}))
        self.assertEqual(table.format_table([run_from_dict(d) for d in data["rows"]]), text)
        root = ET.fromstring(table.to_svg(rows, ["mlp"], [], machine_line="m", date="d", command="c",
                                          dataset="fashion-mnist", batch=64).encode())
        self.assertEqual(len([e for e in root.iter(SVG_NS + "rect") if e.get("class") == "bar"]), 3)
        missing = [e for e in root.iter(SVG_NS + "text") if e.get("class") == "bar-missing"]
        self.assertEqual([e.text for e in missing], ["skipped"] * 5)

    def test_csv_json_and_svg_with_ran_peer_rows(self):
        rows = peer_table()
        records = {r["stage"]: r for r in csv.DictReader(io.StringIO(table.to_csv(rows)))}
        self.assertEqual(records["06_cudnn"]["peer_best_row"], "pytorch_compile")
        self.assertAlmostEqual(float(records["06_cudnn"]["speedup_vs_peer_best"]), 0.2 / 0.21, places=4)
        self.assertEqual((records["pytorch_graph"]["peer"], records["01_fc_softmax"]["peer"]), ("pytorch", ""))
        data = json.loads(table.to_json(rows, machine={}, command="c", date="d", settings={}))
        again = [run_from_dict(d) for d in data["rows"]]
        self.assertEqual(table.format_table(again), table.format_table(rows))
        self.assertEqual(again[-1].options["torch"], "2.11.0+cu130")
        root = ET.fromstring(table.to_svg(rows, ["mlp"], [], machine_line="m", date="d", command="c",
                                          dataset="fashion-mnist", batch=64).encode())
        bars = [e for e in root.iter(SVG_NS + "rect") if e.get("class") == "bar"]
        self.assertEqual(len(bars), 8)
        dashed = [b.get("data-stage") for b in bars if b.get("stroke-dasharray")]
        self.assertEqual(dashed, [p.id for p in peers.PYTORCH_ROWS])
        labels = [e.text for e in root.iter(SVG_NS + "text") if e.get("class") == "bar-label"]
        self.assertEqual(labels, ["01", "04", "06", "eager", "graph", "compile", "cpu 1t", "cpu"])
        texts = " ".join(e.text or "" for e in root.iter(SVG_NS + "text"))
        self.assertIn("dashed outline: PyTorch", texts)


class CompareTables(unittest.TestCase):
    def test_a_run_with_pytorch_rows_prints_its_column_in_the_docs(self):
        """tools/compare_tables.py writes what --replot prints: the H100 run's JSON with its PyTorch rows
        replaced by the test's own (0.2 s an epoch for pytorch_compile)."""
        import compare_tables
        data = json.loads((ROOT / "docs" / "figures" / "compare_h100.json").read_text())
        runs = [r for r in (run_from_dict(d) for d in data["rows"]) if not r.peer] + [r for r in peer_table() if r.peer]
        data["rows"] = [r.to_dict() for r in table.order_rows(table.compute_speedups(runs), ["mlp", "cnn"])]
        data["machine"]["peer"] = {"status": "ok", "gpu": "NVIDIA H100 80GB HBM3 (sm_90)",
                                   "peer": {"torch": "2.11.0+cu130", "cuda": "13.0", "cudnn": 91400,
                                            "tf32_matmul": False, "tf32_cudnn": False}}
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "compare_x.json"
            path.write_text(json.dumps(data))
            text = compare_tables.table_text(path)
        self.assertIn("peer:    PyTorch 2.11.0+cu130 (CUDA 13.0, cuDNN 91400) on NVIDIA H100 80GB HBM3 (sm_90); "
                      "FP32, TF32 off", text)
        head = next(l for l in text.splitlines() if l.startswith("stage "))
        self.assertIn("vs PyTorch best", head)
        cudnn = next(l for l in text.splitlines() if l.startswith("06_cudnn") and " mlp " in l)
        row = next(d for d in data["rows"] if d["stage"] == "06_cudnn" and d["model"] == "mlp")
        self.assertIn(f"{0.2 / row['seconds_per_epoch']:.2f}x", cudnn)   # against pytorch_compile, 0.2 s
        self.assertIn("pytorch_compile", text)
        self.assertNotIn("wrote ", text)


class Parity(unittest.TestCase):
    def test_the_default_stages_are_every_gpu_stage_on_one_gpu(self):
        from compare_lib.stages import KNOWN_STAGES
        chosen = peer_parity.parity_stages(KNOWN_STAGES)
        ids = [s.id for s in chosen]
        self.assertEqual(ids, [s.id for s in KNOWN_STAGES if s.gpu and s.gpus <= 1])
        self.assertIn("04_cuda_matmul", ids)
        self.assertIn("07_fast_gemm", ids)
        self.assertEqual(ids.count("09_multi_gpu"), 1, "stage 09 on one GPU only")
        self.assertTrue(all(s.gpu for s in chosen), "no CPU stage")
        self.assertNotIn(2, [s.gpus for s in chosen])

    def models(self, change=0.0, where=0):
        a, b = small_model(), small_model()
        b.tensors[where].values[0] += change
        return a, b

    def test_tolerance_share(self):
        a, b = self.models(2.5e-4)
        share, name = peer_parity.tolerance_share(b, a)
        self.assertAlmostEqual(share, 2.5e-4 / (5e-4 + 1e-3 * 0.5), places=4)
        self.assertEqual(name, "fc1.weight")
        a, b = self.models(1e-2, where=3)
        share, name = peer_parity.tolerance_share(b, a)
        self.assertGreater(share, 1.0)
        self.assertEqual(name, "fc2.bias")
        with self.assertRaises(ValueError):
            peer_parity.tolerance_share(a, model_file.Model("x", (1, 1, 1), 2, "", a.tensors[:2]))

    def test_steps_verdict_passes_rounding_and_fails_a_wrong_step(self):
        start = small_model()
        for t in start.tensors:
            t.values = array("f", [v - 0.05 for v in t.values])
        a, b = self.models(1e-6)
        self.assertTrue(peer_parity.steps_verdict(b, a, start, 1.0, 1.0 + 1e-6)[0])
        a, b = self.models(5e-3)
        passed, detail = peer_parity.steps_verdict(b, a, start, 1.0, 1.0)
        self.assertFalse(passed)
        self.assertIn("fc1.weight", detail)
        a, b = self.models(0.0)
        self.assertFalse(peer_parity.steps_verdict(b, a, start, 1.0, 1.001)[0], "a loss 1e-3 apart")
        self.assertFalse(peer_parity.steps_verdict(b, a, a, 1.0, 1.0)[0], "nothing moved: proves nothing")

    def test_accuracy_verdict_allows_near_ties_only(self):
        conf = [[5, 1], [2, 7]]

        def final(correct, rows, ties=0, loss=0.5):
            return {"correct": correct, "confusion": rows, "near_ties": ties, "test_loss": loss, "examples": 15}
        self.assertTrue(peer_parity.accuracy_verdict(final(12, conf), 0.5, final(12, conf))[0])
        moved = [[4, 2], [2, 7]]
        self.assertFalse(peer_parity.accuracy_verdict(final(12, conf), 0.5, final(11, moved))[0])
        self.assertTrue(peer_parity.accuracy_verdict(final(12, conf), 0.5, final(11, moved, ties=1))[0])
        swapped = [[4, 2], [1, 8]]   # same count, two predictions changed
        self.assertFalse(peer_parity.accuracy_verdict(final(12, conf), 0.5, final(12, swapped, ties=1))[0])
        self.assertFalse(peer_parity.accuracy_verdict(final(12, conf), 0.51, final(12, conf))[0], "test loss")
        self.assertEqual(peer_parity.confusion_difference(conf, swapped), 2)


class WithoutTorch(unittest.TestCase):
    """pytorch_peer.py and compare.py where PyTorch cannot be imported (python3 -S hides site-packages)."""

    def test_the_runner_says_why_and_exits_zero(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "r.json"
            proc = subprocess.run([sys.executable, "-S", str(peers.RUNNER), "train", "--config", "graph", "--init",
                                   "x.bin", "--json", str(out)], capture_output=True, text=True, timeout=60)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            data = json.loads(out.read_text())
            self.assertEqual(data["status"], "skipped")
            self.assertTrue(data["reason"].startswith("PyTorch is not installed: No module named 'torch'"), data)
            info = peers.probe(ROOT, tmp, HIDDEN_TORCH)
            self.assertEqual(info["status"], "skipped")
            self.assertIn("PyTorch is not installed", peers.describe(info))

    def test_run_peer_reads_the_runners_verdict(self):
        """run_peer on what a runner wrote (a stand-in interpreter writes canned JSON): an error that names
        CUDA stays an error, a run is an ok row with the versions, a runner that died is an error."""
        fake = ("import json, os, sys\n"
                "out = sys.argv[sys.argv.index('--json') + 1]\n"
                "data = os.environ.get('FAKE_RESULT')\n"
                "if data: open(out, 'w').write(data)\n"
                "sys.exit(int(os.environ.get('FAKE_CODE', '0')))\n")
        ok = {"status": "ok", "device": "NVIDIA H100 80GB HBM3 (sm_90)", "threads": 1,
              "data": {"dataset": "fashion-mnist", "note": "fashion-mnist: 60000 train, 10000 test images from d",
                       "train_examples": 60000},
              "epochs": [{"seconds": 0.5, "images_per_second": 120000.0, "test_accuracy": 0.85}],
              "peer": {"torch": "2.11.0+cu130"}}
        cases = [({"status": "error", "reason": "RuntimeError: CUDA error: no kernel image is available"}, 1,
                  "error", "no kernel image"),
                 (ok, 0, "ok", ""),
                 (None, 3, "error", "exit code 3")]
        with tempfile.TemporaryDirectory() as tmp:
            script = Path(tmp) / "fake_python.py"
            script.write_text(fake)
            for result, code, status, words in cases:
                os.environ["FAKE_RESULT"] = json.dumps(result) if result else ""
                os.environ["FAKE_CODE"] = str(code)
                try:
                    run = peers.run_peer(ROOT, PEER["pytorch_graph"], "mlp", out_dir=tmp, init="i.bin", options={},
                                         init_stage="01_fc_softmax", epochs=1, batch=64, limit=0, seed=42,
                                         dataset="fashion-mnist", peer_python=f"{sys.executable} {script}")
                finally:
                    del os.environ["FAKE_RESULT"], os.environ["FAKE_CODE"]
                self.assertEqual((run.status, run.peer), (status, "pytorch"), run)
                self.assertIn(words, run.reason)
                if status == "ok":
                    self.assertAlmostEqual(run.seconds_per_epoch, 0.5)
                    self.assertEqual(run.options["torch"], "2.11.0+cu130")
                    self.assertEqual(run.options["init_written_by"], "01_fc_softmax")

    def test_runner_command_carries_the_trainers_recipe(self):
        cmd = peers.runner_command("py -X dev", PEER["pytorch_cpu_1t"], "cnn", init="i.bin",
                                   options={"lr": 0.02, "lr_schedule": "cosine", "momentum": 0.9}, epochs=3,
                                   batch=64, limit=6000, seed=42, dataset="fashion-mnist", json_path="o.json")
        self.assertEqual(cmd[:3], ["py", "-X", "dev"])
        for flag, value in (("--config", "cpu"), ("--threads", "1"), ("--lr", "0.02"), ("--lr-schedule", "cosine"),
                            ("--momentum", "0.9"), ("--limit", "6000"), ("--epochs", "3"), ("--init", "i.bin")):
            self.assertEqual(cmd[cmd.index(flag) + 1], value, flag)

    @unittest.skipIf(built_trainers_dir() is None, "no built s01_train_solution (build the preset ci or default first)")
    def test_compare_lists_the_rows_as_skipped(self):
        with tempfile.TemporaryDirectory() as out:
            proc = subprocess.run([sys.executable, str(ROOT / "tools" / "compare.py"), "--build-dir",
                                   str(built_trainers_dir()), "--stages", "01", "--models", "mlp", "--limit", "300",
                                   "--peer", "pytorch", "--peer-python", HIDDEN_TORCH, "--out", out],
                                  cwd=ROOT, capture_output=True, text=True, timeout=300)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            # Five progress lines, the header's peer line, five rows of the table.
            self.assertEqual(proc.stdout.count("skipped: PyTorch is not installed: No module named 'torch'"), 11)
            self.assertIn("peer:    PyTorch: skipped: PyTorch is not installed", proc.stdout)
            records = list(csv.DictReader(io.StringIO((Path(out) / "compare.csv").read_text())))
            self.assertEqual([(r["stage"], r["status"]) for r in records],
                             [("01_fc_softmax", "ok")] + [(p.id, "skipped") for p in peers.PYTORCH_ROWS])
            data = json.loads((Path(out) / "compare.json").read_text())
            self.assertEqual(data["settings"]["peer"], "pytorch")
            self.assertEqual(data["machine"]["peer"]["status"], "skipped")
            ET.fromstring((Path(out) / "compare.svg").read_bytes())
            self.assertFalse(list((Path(out) / "logs").glob("init_*.bin")), "no trainer runs for skipped rows")
            replot = subprocess.run([sys.executable, str(ROOT / "tools" / "compare.py"), "--replot",
                                     str(Path(out) / "compare.json"), "--out", str(Path(out) / "again")],
                                    cwd=ROOT, capture_output=True, text=True, timeout=60)
            self.assertEqual(replot.returncode, 0, replot.stderr)
            self.assertEqual(replot.stdout.count("skipped: PyTorch is not installed"), 6)   # the peer line, 5 rows

    @unittest.skipIf(built_trainers_dir() is None, "no built s01_train_solution (build the preset ci or default first)")
    def test_a_data_set_pytorch_does_not_read_is_na(self):
        with tempfile.TemporaryDirectory() as out:
            proc = subprocess.run([sys.executable, str(ROOT / "tools" / "compare.py"), "--build-dir",
                                   str(built_trainers_dir()), "--stages", "01", "--models", "mlp", "--limit", "200",
                                   "--dataset", "synthetic", "--peer", "pytorch", "--out", out],
                                  cwd=ROOT, capture_output=True, text=True, timeout=300)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            records = list(csv.DictReader(io.StringIO((Path(out) / "compare.csv").read_text())))
            self.assertEqual([r["status"] for r in records], ["ok"] + ["n/a"] * 5)
            self.assertIn("the PyTorch rows read the IDX data sets (fashion-mnist, mnist) only", records[1]["reason"])

    def test_the_self_test_is_skipped_with_the_reason(self):
        with tempfile.TemporaryDirectory() as out:
            proc = subprocess.run([sys.executable, str(ROOT / "tools" / "compare.py"), "--peer", "pytorch",
                                   "--self-test", "--peer-python", HIDDEN_TORCH, "--build-dir",
                                   str(built_trainers_dir() or ROOT / "build" / "ci"), "--out", out],
                                  cwd=ROOT, capture_output=True, text=True, timeout=120)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            self.assertIn("PyTorch parity self-test: skipped: PyTorch is not installed", proc.stdout)
            data = json.loads((Path(out) / "self_test" / "parity.json").read_text())
            self.assertTrue(data["skipped"].startswith("PyTorch is not installed"))
            self.assertEqual(data["checks"], [])

    def test_self_test_needs_a_peer(self):
        proc = subprocess.run([sys.executable, str(ROOT / "tools" / "compare.py"), "--self-test"],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("--peer pytorch", proc.stderr)


@unittest.skipUnless(os.environ.get("COMPARE_PEER_PYTHON"), "set COMPARE_PEER_PYTHON to a Python with PyTorch")
@unittest.skipIf(built_trainers_dir() is None, "no built s01_train_solution (build the preset ci or default first)")
class WithTorch(unittest.TestCase):
    """PyTorch for real (on the CPU if there is no GPU): against stages 01 and 02, every parity check
    passes, and a comparison's PyTorch CPU rows run. About a minute on two cores."""

    def test_parity_with_the_cpu_stages(self):
        build = built_trainers_dir()
        if not (build / "bin" / "s02_train_solution").is_file():
            self.skipTest("stage 02 is not built")
        with tempfile.TemporaryDirectory() as out:
            proc = subprocess.run([sys.executable, str(ROOT / "tools" / "compare.py"), "--peer", "pytorch",
                                   "--self-test", "--stages", "01,02", "--peer-python",
                                   os.environ["COMPARE_PEER_PYTHON"], "--build-dir", str(build), "--out", out],
                                  cwd=ROOT, capture_output=True, text=True, timeout=900)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            data = json.loads((Path(out) / "self_test" / "parity.json").read_text())
            self.assertEqual(len(data["checks"]), 8)   # per model: the premise, then per stage: accuracy, steps
            self.assertEqual({c["status"] for c in data["checks"]}, {"pass"}, data["checks"])

    def test_a_comparison_with_pytorch_rows(self):
        with tempfile.TemporaryDirectory() as out:
            proc = subprocess.run([sys.executable, str(ROOT / "tools" / "compare.py"), "--build-dir",
                                   str(built_trainers_dir()), "--stages", "01", "--models", "mlp", "--limit", "600",
                                   "--peer", "pytorch", "--peer-python", os.environ["COMPARE_PEER_PYTHON"],
                                   "--out", out], cwd=ROOT, capture_output=True, text=True, timeout=600)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            records = {r["stage"]: r for r in csv.DictReader(io.StringIO((Path(out) / "compare.csv").read_text()))}
            for row in ("pytorch_cpu_1t", "pytorch_cpu"):
                self.assertEqual(records[row]["status"], "ok", records[row])
                # The same start, data, batches and recipe as stage 01: the same accuracy after 600 images.
                self.assertAlmostEqual(float(records[row]["test_accuracy"]),
                                       float(records["01_fc_softmax"]["test_accuracy"]), delta=2e-4)
            self.assertIn("vs PyTorch best", proc.stdout)


if __name__ == "__main__":
    unittest.main()
