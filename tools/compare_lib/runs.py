"""Running one stage's trainer on one workload and reading what it wrote.

A run ends in one of five states, each a row of the table:
  ok       trained; the figures come from the trainer's --json file
  skipped  the machine cannot run it: the trainer was not built, or a GPU stage found no GPU (or, with no
           usable GPU seen before the run, a GPU stage was left out without running its trainer: left_out)
  n/a      the stage cannot run that model (stage 01 has no conv layers)
  todo     an exercise hole was reached (exercises track only): the trainer named the task
  error    anything else: the trainer's last message and exit code
"""
import functools
import json
import os
import re
import signal
import statistics
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .stages import WEAK_SCALING_WARMUP_STEPS, not_built_reason, trainer_path, weak_scaling_args

EXIT_USAGE = 2           # common/train/trainer.hpp: a bad command line, or a model the stage cannot run
EXIT_NOT_IMPLEMENTED = 3  # an exercise hole was reached
EXIT_DIVERGED = 4


@dataclass
class Run:
    stage: str
    model: str
    status: str                       # ok | skipped | n/a | todo | error
    reason: str = ""                  # why it is not ok
    device: str = ""                  # the trainer's own device string ("CPU, 2 threads (data-parallel)")
    gpu: bool = False                 # a GPU stage
    threads: int = 0                  # CPU threads the trainer used (1 for GPU stages)
    images: int = 0                   # training images of each measured epoch (--limit, or the whole set)
    images_per_epoch: int = 0         # training images of a whole epoch of the data set
    epochs: int = 0
    epoch_seconds: list = field(default_factory=list)  # measured seconds of each epoch, over `images`
    seconds_measured: float = 0.0     # median of epoch_seconds
    seconds_per_epoch: float = 0.0    # seconds_measured scaled to images_per_epoch
    images_per_second: float = 0.0    # median over the epochs, as the trainer measured it
    setup_seconds: float = 0.0        # one-off costs paid before the first epoch, not in any epoch's seconds (a GPU
                                      # trainer's "setup", a peer's warm-up); 0 where there were none
    test_accuracy: float = 0.0        # after the last epoch, in [0, 1]
    dataset: str = ""
    synthetic: bool = False           # the trainer fell back to the built-in synthetic set
    command: list = field(default_factory=list)
    log: str = ""
    exit_code: int = 0
    wall_seconds: float = 0.0
    options: dict = field(default_factory=dict)  # what the run varied (parallel mode, threads, kernel)
    peer: str = ""                    # "pytorch" for a row of another framework (compare_lib/peers.py), else ""
    variant_of: str = ""              # a stage's Variant row ("07_fast_gemm tf32"): the stage's id, else ""
    left_out: bool = False            # a GPU stage's row not run at all: this machine has no usable GPU (the
                                      # reason says why); the table shows all such rows as one line
    # Filled in by the table: (stage id, ratio) of the speedups, or None.
    vs_prev: tuple = None
    vs_first: tuple = None
    vs_peer: tuple = None             # (fastest peer row, its seconds / this row's) for the same model

    @property
    def scaled(self):
        """True when the run timed part of an epoch and its seconds were scaled to a whole one."""
        return self.status == "ok" and 0 < self.images < self.images_per_epoch

    @property
    def scale_factor(self):
        return self.images_per_epoch / self.images if self.images else 1.0

    def to_dict(self):
        d = asdict(self)
        d["scaled"] = self.scaled
        d["vs_prev_stage"], d["speedup_vs_prev"] = self.vs_prev or (None, None)
        d["vs_first_stage"], d["speedup_vs_first"] = self.vs_first or (None, None)
        d["peer_best_row"], d["speedup_vs_peer_best"] = self.vs_peer or (None, None)
        del d["vs_prev"], d["vs_first"], d["vs_peer"]
        return d


def run_from_dict(d):
    """The Run that to_dict() wrote (compare.json's rows), to redraw a table without training again."""
    fields = {k: v for k, v in d.items()
              if k in Run.__dataclass_fields__ and k not in ("vs_prev", "vs_first", "vs_peer")}
    run = Run(**fields)
    run.vs_prev = (d["vs_prev_stage"], d["speedup_vs_prev"]) if d.get("vs_prev_stage") else None
    run.vs_first = (d["vs_first_stage"], d["speedup_vs_first"]) if d.get("vs_first_stage") else None
    run.vs_peer = (d["peer_best_row"], d["speedup_vs_peer_best"]) if d.get("peer_best_row") else None
    return run


def as_variant(run, stage, variant):
    """`run`, of `stage`'s trainer with `variant.args` added, as the variant's row: "07_fast_gemm tf32"."""
    run.stage, run.variant_of = f"{stage.id} {variant.label}", stage.id
    run.options = {**run.options, "variant_args": list(variant.args)}
    if variant.env:
        run.options["variant_env"] = dict(variant.env)
    return run


def trainer_command(binary, stage, model, *, epochs, batch, limit, seed, dataset, json_path,
                    threads=0, extra=()):
    """The trainer's command line: the same options for every stage, plus what only some take."""
    cmd = [str(binary), "--model", model, "--dataset", dataset, "--epochs", str(epochs),
           "--batch", str(stage.trainer_batch(batch)),
           "--limit", str(limit), "--seed", str(seed), "--json", str(json_path), "--no-progress"]
    if stage.has_threads and threads:
        cmd += ["--threads", str(threads)]
    return cmd + list(stage.extra_args) + list(weak_scaling_args(stage, batch)) + list(extra)


def _lines(text):
    return [l.strip() for l in (text or "").splitlines() if l.strip()]


def _message(stdout, stderr):
    """The trainer's last word: its last stderr line (where errors go), else its last stdout line."""
    lines = _lines(stderr) or _lines(stdout)
    msg = lines[-1] if lines else "no output"
    return msg[len("error: "):] if msg.startswith("error: ") else msg


_NO_GPU_WORDS = re.compile(r"\b(no|none|not available|unavailable|insufficient)\b", re.I)
_GPU_WORDS = re.compile(r"\b(GPU|CUDA|device)\b", re.I)


def says_no_gpu(message):
    """True for the one line a GPU trainer prints when the machine has no usable GPU."""
    return bool(_NO_GPU_WORDS.search(message) and _GPU_WORDS.search(message))


def without_stage_prefix(message):
    """'stage 04 trains on a CUDA GPU, and there is none: no CUDA device on this machine' -> 'no CUDA device
    on this machine': the table's row already names the stage and says GPU."""
    rest = re.sub(r"^stage \d+ [^:]*:\s*", "", message)
    return rest if rest and says_no_gpu(rest) else message


def full_epoch_images(data):
    """Training images of a whole epoch, from the trainer's data note ("fashion-mnist: 60000 train, ...")."""
    m = re.search(r"(\d+) train\b", data.get("note", ""))
    if m:
        return max(int(m.group(1)), int(data.get("train_examples", 0)))
    return int(data.get("train_examples", 0))


def interpret(stage, model, exit_code, stdout, stderr, results, command=(), log=""):
    """A Run from what one trainer did: its exit code, its output and its --json results (None if it
    wrote none). Pure, so the tests feed it canned trainer output."""
    run = Run(stage=stage.id, model=model, status="error", gpu=stage.gpu, command=list(command), log=str(log),
              exit_code=exit_code, device=stage.device)
    if results and results.get("device"):
        run.device = results["device"]
    if results and isinstance(results.get("stage_results"), dict) and results["stage_results"].get("precision"):
        run.options["precision"] = results["stage_results"]["precision"]   # stage 07: what its GEMMs rounded to
    if results and results.get("data"):
        run.dataset = results["data"].get("dataset", "")
        run.synthetic = bool(results["data"].get("synthetic_fallback"))
    message = _message(stdout, stderr)
    if exit_code == 0 and results and results.get("status") == "ok" and results.get("epochs"):
        return _fill_ok(run, results)
    if results and results.get("status") == "diverged":
        run.reason = "the loss diverged (NaN or Inf): " + message
    elif exit_code == EXIT_NOT_IMPLEMENTED:
        run.status, run.reason = "todo", message
    elif exit_code == EXIT_USAGE and "cannot run" in message:
        run.status = "n/a"
        run.reason = stage.no_model_reason if stage.no_model_reason and not stage.can_run(model) else message
    elif stage.gpu and exit_code != 0 and says_no_gpu(message) and not re.search(r"^epoch ", stdout or "", re.M):
        run.status, run.reason = "skipped", without_stage_prefix(message)
    elif exit_code < 0 and exit_code != -1:
        run.reason = f"the trainer crashed: killed by {_signal_name(-exit_code)}" + \
                     (f" after '{message}'" if message != "no output" else "")
    else:
        run.reason = f"{message} (exit code {exit_code})"
    return run


def _signal_name(number):
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _fill_ok(run, results):
    epochs = results["epochs"]
    data = results.get("data", {})
    run.status = "ok"
    run.threads = int(results.get("threads", 1))
    run.images = int(data.get("train_examples", 0))
    run.images_per_epoch = full_epoch_images(data) or run.images
    run.epochs = len(epochs)
    run.epoch_seconds = [float(e["seconds"]) for e in epochs]
    run.seconds_measured = statistics.median(run.epoch_seconds)
    run.seconds_per_epoch = run.seconds_measured * run.images_per_epoch / run.images if run.images else 0.0
    run.images_per_second = statistics.median(float(e["images_per_second"]) for e in epochs)
    run.setup_seconds = setup_seconds(results)
    run.test_accuracy = float(epochs[-1].get("test_accuracy", results.get("final", {}).get("accuracy", 0.0)))
    if run.seconds_measured <= 0:
        run.status, run.reason = "error", "the trainer measured 0 seconds for an epoch"
    return run


def setup_seconds(results):
    """The seconds a run spent before its first epoch on one-off costs, untimed in its epochs: a stage
    trainer's "setup" (common/train/trainer_epochs.cpp), a peer's "warmup_seconds" (tools/peers/pytorch_peer.py)."""
    setup = results.get("setup")
    if isinstance(setup, dict) and "seconds" in setup:
        return float(setup["seconds"])
    return float((results.get("peer") or {}).get("warmup_seconds", 0.0))


def static_row(stage, model, status, reason):
    return Run(stage=stage.id, model=model, status=status, reason=reason, device=stage.device, gpu=stage.gpu)


def left_out_row(stage, model, reason):
    """The row of a GPU stage that was not run: this machine has no usable GPU (`reason`)."""
    run = static_row(stage, model, "skipped", reason)
    run.left_out = True
    return run


@functools.lru_cache(maxsize=None)
def gpu_capability():
    """The first GPU's compute capability times ten (90 for an H100), from nvidia-smi, asked once; None without one."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"(\d+)\.(\d)", out)
    return int(m[1]) * 10 + int(m[2]) if m else None


def older_gpu_reason(env, gpu_cc):
    """Why a row that runs an older GPU's path (COURSE_AS_CC in `env`) is not run here, or "" when it is."""
    wanted = dict(env).get("COURSE_AS_CC")
    if not wanted or gpu_cc is None:
        return ""
    major, minor = wanted.split(".")
    cc = int(major) * 10 + int(minor)
    if cc == gpu_cc:
        return f"this GPU is sm_{gpu_cc}: its own row runs the path COURSE_AS_CC={wanted} chooses"
    if cc > gpu_cc:
        return f"this GPU is sm_{gpu_cc}, older than COURSE_AS_CC={wanted}: its own row is what it runs"
    return ""


def run_stage(root, build_dir, stage, model, *, out_dir, epochs, batch, limit, seed, dataset, threads=0,
              extra=(), track="solution", timeout=3600, tag="", env=()):
    """Runs one trainer (or says why not) and returns its Run; the trainer's output goes to a log
    file under out_dir/logs, its JSON beside it. `env`: variables set for the trainer alone
    (("COURSE_AS_CC", "7.5"),) makes it choose as a T4 would)."""
    if not stage.can_run(model):
        return static_row(stage, model, "n/a", stage.no_model_reason or f"stage {stage.nn} cannot run {model}")
    if env and (why := older_gpu_reason(env, gpu_capability())):
        return static_row(stage, model, "skipped", why)
    binary = trainer_path(build_dir, stage, track)
    if not binary.is_file():
        return static_row(stage, model, "skipped", not_built_reason(root, build_dir, stage, track))
    logs = Path(out_dir) / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    name = f"{stage.key}_{model}{tag}"
    json_path, log_path = (logs / f"{name}.json").resolve(), logs / f"{name}.log"
    if json_path.exists():
        json_path.unlink()
    cmd = trainer_command(binary, stage, model, epochs=epochs, batch=batch, limit=limit, seed=seed, dataset=dataset,
                          json_path=json_path, threads=threads, extra=extra)
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **dict(env)} if env else None)
        code, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as e:
        code = -1
        stdout = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        stderr = f"timed out after {timeout} s (--timeout)"
    except OSError as e:
        code, stdout, stderr = -1, "", f"cannot start {binary}: {e}"
    wall = time.monotonic() - start
    prefix = [f"{k}={v}" for k, v in env]
    log_path.write_text("$ " + " ".join(prefix + cmd) + "\n" + stdout + ("\n--- stderr\n" + stderr if stderr else ""))
    results = None
    if json_path.is_file():
        try:
            results = json.loads(json_path.read_text())
        except json.JSONDecodeError as e:
            stderr += f"\nits --json file is not JSON: {e}"
    shown = prefix + [str(Path(cmd[0]).resolve().relative_to(Path(root).resolve()))
             if Path(cmd[0]).resolve().is_relative_to(Path(root).resolve()) else cmd[0]] + cmd[1:]
    run = interpret(stage, model, code, stdout, stderr, results, command=shown, log=log_path)
    run.wall_seconds = wall
    if stage.batch_per_gpu:
        total = stage.trainer_batch(batch)
        run.options["weak_scaling"] = (f"{batch} images a GPU a step, a global batch of {total}, at --lr-scaling "
                                       f"linear (the rate x {total}/{batch}) with --warmup-steps "
                                       f"{WEAK_SCALING_WARMUP_STEPS}")
    return run
