"""Tests of tools/compare_lib/machine.py: the CPU's vector width and the machine line (old JSON files
included), and the busy check on canned /proc readings.

    python3 -m unittest tools/tests/test_machine.py
"""
import os
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from compare_lib import machine  # noqa: E402
from course_lib import trainers  # noqa: E402

REAL_WATCH = machine.CpuWatch   # the class itself, where a test puts a canned one in trainers' way

ZEN3 = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
model name\t: AMD EPYC
flags\t\t: fpu sse sse2 ssse3 fma sse4_1 sse4_2 avx f16c avx2 bmi2

processor\t: 1
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
model name\t: AMD EPYC
flags\t\t: fpu sse sse2 ssse3 fma sse4_1 sse4_2 avx f16c avx2 bmi2
"""
AVX512 = ZEN3.replace("cpu family\t: 25", "cpu family\t: 26").replace("avx2 bmi2", "avx2 bmi2 avx512f avx512vl")
ARM = "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes crc32\nCPU implementer\t: 0x41\n"

# An old JSON file's machine, as docs/figures/compare_vm.json holds it: no vector width, no watch.
OLD_INFO = {"cpu": "AMD EPYC", "cores": 2, "memory_gib": 23.5, "os": "Debian GNU/Linux 12 (bookworm)",
            "gpu": "none (no usable GPU)", "load_average_at_start": 0.15, "load_average_at_end": 0.41}


def stat_line(busy_ticks, idle_ticks, steal=0):
    """A /proc/stat whose summed 'cpu' line has these ticks: user takes the busy ones."""
    return (f"cpu  {busy_ticks} 0 0 {idle_ticks} 0 0 0 {steal} 0 0\n"
            f"cpu0 {busy_ticks // 2} 0 0 {idle_ticks // 2} 0 0 0 0 0 0\nintr 1 2 3\n")


class Canned:
    """/proc/stat, this process's CPU seconds and a clock, read in turn: one reading at the watch's start,
    one when it is asked."""

    def __init__(self, stats, own, times):
        self.stats, self.own, self.times = list(stats), list(own), list(times)

    def watch(self):
        return REAL_WATCH(read_stat=lambda: self.stats.pop(0), own_cpu=lambda: self.own.pop(0),
                                clock=lambda: self.times.pop(0), hz=100)


class VectorWidth(unittest.TestCase):
    def details(self, text):
        with tempfile.NamedTemporaryFile("w", suffix="cpuinfo", delete=False) as f:
            f.write(text)
        try:
            return machine.cpu_details(f.name)
        finally:
            os.unlink(f.name)

    def test_the_widest_extension_of_the_first_processor(self):
        self.assertEqual(self.details(ZEN3), ("25", "1", "AVX2"))
        self.assertEqual(self.details(AVX512), ("26", "1", "AVX-512"))
        self.assertEqual(self.details(ARM), (None, None, "NEON"))

    def test_no_cpuinfo_says_nothing(self):
        self.assertEqual(machine.cpu_details("/nonexistent/cpuinfo"), (None, None, None))

    def test_the_line_names_model_family_and_width(self):
        info = dict(OLD_INFO, cpu_family="25", cpu_model_number="1", cpu_vector="AVX2")
        self.assertTrue(machine.machine_line(info).startswith("AMD EPYC (family 25, model 1; AVX2), 2 cores, "),
                        machine.machine_line(info))

    def test_an_old_file_claims_no_width(self):
        line = machine.machine_line(OLD_INFO)
        self.assertTrue(line.startswith("AMD EPYC (vector width not recorded), 2 cores"), line)
        for width in ("AVX2", "AVX-512", "SSE"):
            self.assertNotIn(width, line)

    def test_a_width_looked_for_and_not_found(self):
        info = dict(OLD_INFO, cpu_family=None, cpu_model_number=None, cpu_vector=None)
        self.assertIn("AMD EPYC (vector width unknown)", machine.machine_line(info))

    def test_machine_info_records_the_width(self):
        info = machine.machine_info(ROOT, ROOT / "build" / "nonexistent")
        self.assertIn("cpu_vector", info)
        self.assertIn("cpu_family", info)


class BusyCheck(unittest.TestCase):
    def test_a_build_that_just_ended_is_not_other_programs(self):
        # The load average is 3.9 on 2 cores: a build ran both cores flat out until a moment ago. During the
        # run the machine was busy for 10.0 CPU seconds of 10 s (one core) and all of them were the
        # comparison's own trainer: nothing to warn of.
        canned = Canned([stat_line(50000, 10000), stat_line(51000, 11000)], own=[1.0, 11.0], times=[100.0, 110.0])
        with mock.patch("os.getloadavg", return_value=(3.9, 2.1, 0.9)):
            watch = canned.watch()
            others, seconds = watch.other_cores()
        self.assertEqual((others, seconds), (0.0, 10.0))
        self.assertIsNone(machine.busy_warning(others, 2, seconds))
        info = watch_info(others, seconds, load=3.9)
        self.assertIsNone(machine.info_busy_warning(info))
        self.assertNotIn("busy", machine.machine_line(info))

    def test_another_program_on_a_core_is_warned_of(self):
        # The load average was low at the start (0.1), then another program kept a core busy: 20 CPU
        # seconds of 10 s busy, 10 of them the comparison's.
        canned = Canned([stat_line(50000, 10000), stat_line(52000, 10000)], own=[1.0, 11.0], times=[100.0, 110.0])
        others, seconds = canned.watch().other_cores()
        self.assertEqual(others, 1.0)
        warning = machine.busy_warning(others, 2, seconds)
        self.assertIsNotNone(warning)
        self.assertTrue(warning.startswith("warning: other programs kept 1 of the 2 cores busy on average"), warning)
        info = watch_info(others, seconds, load=0.1)
        self.assertEqual(machine.info_busy_warning(info), warning)
        self.assertIn("; busy: other programs used 1 of 2 cores during the run", machine.machine_line(info))

    def test_the_hypervisor_taking_the_core_counts(self):
        canned = Canned([stat_line(50000, 10000), stat_line(51000, 10000, steal=1000)], own=[0.0, 10.0],
                        times=[0.0, 10.0])
        self.assertEqual(canned.watch().other_cores()[0], 1.0)

    def test_a_little_noise_is_not_busy(self):
        # A shell and the desktop: 0.2 of a core on 2 cores stays under the line (a quarter of a core).
        canned = Canned([stat_line(50000, 10000), stat_line(51200, 10000)], own=[0.0, 10.0], times=[0.0, 10.0])
        others, seconds = canned.watch().other_cores()
        self.assertAlmostEqual(others, 0.2)
        self.assertIsNone(machine.busy_warning(others, 2, seconds))
        # On 16 cores the line is a tenth of the machine.
        self.assertIsNone(machine.busy_warning(1.5, 16))
        self.assertIsNotNone(machine.busy_warning(1.7, 16))

    def test_no_proc_stat_is_no_verdict(self):
        canned = Canned(["", ""], own=[0.0, 1.0], times=[0.0, 1.0])
        others, _ = canned.watch().other_cores()
        self.assertIsNone(others)
        self.assertIsNone(machine.busy_warning(others, 2))

    def test_an_old_file_is_judged_by_its_load_average(self):
        self.assertIsNone(machine.info_busy_warning(OLD_INFO))
        busy = dict(OLD_INFO, load_average_at_start=1.65)
        self.assertIn("1-minute load average was 1.65", machine.info_busy_warning(busy))
        self.assertIn("busy: load average 1.65 at the start", machine.machine_line(busy))

    def test_the_real_proc_stat(self):
        if not Path("/proc/stat").exists():
            self.skipTest("no /proc/stat here")
        others, seconds = machine.CpuWatch().other_cores()
        self.assertIsNotNone(others)
        self.assertGreaterEqual(others, 0.0)


def watch_info(others, seconds, load):
    return dict(OLD_INFO, cpu_vector="AVX2", load_average_at_start=load, other_cores_during=others,
                watched_seconds=seconds)


class TrainerComparisonUsesTheWatch(unittest.TestCase):
    """tools/course's trainer comparison (course_lib/trainers.race) warns by the same check: with the load
    average high after the build and the CPU otherwise idle during the runs, it prints no warning."""

    def test_no_warning_after_a_build(self):
        import io
        from contextlib import redirect_stdout
        from compare_lib.runs import Run

        def run_stage(*a, **k):
            return Run(stage="01_fc_softmax", model="mlp", status="ok", seconds_per_epoch=1.0, seconds_measured=1.0,
                       images=10000, images_per_epoch=60000, epochs=1, images_per_second=10000, test_accuracy=0.8)

        for others, warned in ((0.0, False), (0.8, True)):
            # 2 s of runs on one core, and `others` cores of other programs beside them.
            canned = Canned([stat_line(50000, 10000), stat_line(50000 + int(100 * (2 + 2 * others)), 10000)],
                            own=[0.0, 2.0], times=[0.0, 2.0])
            out = io.StringIO()
            with mock.patch.object(trainers, "build_trainer", return_value=(True, "bin")), \
                    mock.patch.object(trainers, "run_stage", side_effect=run_stage), \
                    mock.patch.object(trainers.machine, "CpuWatch", side_effect=canned.watch), \
                    mock.patch.object(trainers.machine, "usable_cores", return_value=2), \
                    mock.patch("os.getloadavg", return_value=(3.9, 2.1, 0.9)), redirect_stdout(out):
                self.assertTrue(trainers.race("01_fc_softmax"))
            self.assertEqual("other programs kept" in out.getvalue(), warned, out.getvalue())
            self.assertNotIn("load average", out.getvalue())


if __name__ == "__main__":
    unittest.main()


class SourceTreeHash(unittest.TestCase):
    """The hash that names the code a run was built from, uncommitted changes included."""

    def tree(self, tmp, git):
        root = Path(tmp)
        (root / "common").mkdir()
        (root / "common" / "a.cpp").write_text("int a = 1;\n")
        (root / "CMakeLists.txt").write_text("project(x)\n")
        (root / "build").mkdir()
        (root / "build" / "out.o").write_text("object\n")  # not a source part: never counted
        if git:
            import subprocess
            subprocess.run(["git", "init", "-q"], cwd=root, check=True)
            (root / ".gitignore").write_text("build/\ncommon/*.log\n")
            subprocess.run(["git", "add", "-A"], cwd=root, check=True)
            subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"], cwd=root,
                           check=True)
        return root

    def check(self, git):
        with tempfile.TemporaryDirectory() as tmp:
            root = self.tree(tmp, git)
            first = machine.source_tree_hash(root)
            self.assertRegex(first, r"^[0-9a-f]{16}$")
            self.assertEqual(machine.source_tree_hash(root), first, "the same files, the same hash")
            (root / "build" / "out.o").write_text("another object\n")
            self.assertEqual(machine.source_tree_hash(root), first, "a build output is not source")
            if git:
                (root / "common" / "run.log").write_text("ignored\n")
                self.assertEqual(machine.source_tree_hash(root), first, "a file git ignores is not source")
            (root / "common" / "a.cpp").write_text("int a = 2;\n")
            changed = machine.source_tree_hash(root)
            self.assertNotEqual(changed, first, "an uncommitted change changes the hash")
            (root / "common" / "new.hpp").write_text("// new\n")
            self.assertNotEqual(machine.source_tree_hash(root), changed, "a new file not committed counts")

    def test_in_a_git_checkout(self):
        self.check(git=True)

    def test_without_git(self):
        self.check(git=False)
