"""A framework beside the stages: the PyTorch rows of tools/compare.py (--peer pytorch).

Every PyTorch row trains what the stages train: the same model from the same initial weights (a model
file a course trainer writes with --epochs 0 --save), on the same IDX files, in the same batches (the
course's shuffle), with the trainers' learning rate, schedule and momentum, in FP32. Each row is one run
of tools/peers/pytorch_peer.py in its own process, which writes JSON shaped like a trainer's, so a row
is read like a stage's (runs.interpret). Without PyTorch every row is "skipped" with the reason, and
nothing else changes; PyTorch is never imported here.
"""
import json
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from . import runs
from .idx import IDX_DATASETS
from .stages import MODELS, trainer_path

RUNNER = Path(__file__).resolve().parent.parent / "peers" / "pytorch_peer.py"
FRAMEWORK = "pytorch"
FRAMEWORK_NAME = "PyTorch"


@dataclass(frozen=True)
class PeerRow:
    """One PyTorch configuration: a row per model in the table. Quacks like stages.Stage where the
    comparison needs it (id, device, gpu, can_run, no_model_reason)."""
    id: str                 # the table's name for the row, "pytorch_graph"
    config: str             # pytorch_peer.py --config
    device: str             # as Stage.device: "GPU", "CPU, 1 thread", "CPU, all cores"
    gpu: bool
    label: str              # under its bar in the SVG
    what: str               # one line for the footnotes
    threads: int = 0        # cpu config: 0 = every core
    no_model_reason: str = ""

    def can_run(self, model):
        return model in MODELS


PYTORCH_ROWS = (
    PeerRow("pytorch_eager", "eager", "GPU", True, "eager",
            "eager: a plain PyTorch loop on the GPU, one launch per operation"),
    PeerRow("pytorch_graph", "graph", "GPU", True, "graph",
            "graph: the whole step (gather, forward, loss, backward, update) replayed as one CUDA graph"),
    PeerRow("pytorch_compile", "compile", "GPU", True, "compile",
            "compile: torch.compile (Inductor, default mode) of model and loss, the whole step captured by hand "
            "in one CUDA graph (manual capture rather than mode='reduce-overhead', which graphs forward and "
            "backward apart and leaves the update outside)"),
    PeerRow("pytorch_cpu_1t", "cpu", "CPU, 1 thread", False, "cpu 1t", "cpu_1t: on the CPU, one thread",
            threads=1),
    PeerRow("pytorch_cpu", "cpu", "CPU, all cores", False, "cpu", "cpu: on the CPU, every core"),
)


class PeerError(Exception):
    """Why the peer rows of a model cannot run (no initial weights, data they cannot read); `status` is
    the rows' status: "error" for a failure, "skipped" where the machine lacks what they need."""

    def __init__(self, reason, status="error"):
        super().__init__(reason)
        self.status = status


def is_peer(run):
    return bool(getattr(run, "peer", ""))


def python_command(peer_python):
    """The interpreter (and its flags) that runs pytorch_peer.py: --peer-python, else this one."""
    return shlex.split(peer_python) if peer_python else [sys.executable]


def _run(cmd, cwd, timeout):
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
        return proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return -1, out, f"timed out after {timeout} s (--timeout)"
    except OSError as e:
        return -1, "", f"cannot start {cmd[0]}: {e}"


def _read_json(path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError):
        return None


def probe(root, out_dir, peer_python="", timeout=600):
    """What the machine offers PyTorch, from pytorch_peer.py probe: {"status": "ok", "peer": {versions},
    "gpu": name or None, "gpu_reason"}, or {"status": "skipped" | "error", "reason"}."""
    logs = Path(out_dir) / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    path = (logs / "pytorch_probe.json").resolve()
    path.unlink(missing_ok=True)
    code, stdout, stderr = _run(python_command(peer_python) + [str(RUNNER), "probe", "--json", str(path)],
                                root, timeout)
    data = _read_json(path)
    if data is None:
        lines = [l for l in (stderr or stdout).splitlines() if l.strip()]
        return {"status": "error", "reason": f"{lines[-1] if lines else 'no output'} (exit code {code})"}
    return data


def describe(info):
    """One line for the table's header from probe()'s answer: the versions, or why there are no rows."""
    if info.get("status") != "ok":
        return f"{FRAMEWORK_NAME}: {info.get('status')}: {info.get('reason')}"
    v = info.get("peer", {})
    tf32 = "off" if not v.get("tf32_matmul") and not v.get("tf32_cudnn") else "ON"
    gpu = info.get("gpu") or f"no GPU ({info.get('gpu_reason')})"
    return (f"{FRAMEWORK_NAME} {v.get('torch')} (CUDA {v.get('cuda') or '-'}, cuDNN {v.get('cudnn') or '-'}) on "
            f"{gpu}; FP32, TF32 {tf32}")


def write_initial_weights(root, build_dir, stages, model, *, out_dir, dataset, seed, batch, track="solution",
                          timeout=600):
    """The stages' initial weights of `model` for `seed`, written by a course trainer (--epochs 0 --save):
    (model file, the trainer's options as its --json reports them, the stage that wrote it). Tries the
    built trainers that can run the model, CPU stages first (a GPU stage's needs a GPU even to write
    its weights). Raises PeerError saying why none could."""
    logs = Path(out_dir) / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    tried = []
    for stage in sorted(stages, key=lambda s: (s.gpu, s.id)):
        binary = trainer_path(build_dir, stage, track)
        if not stage.can_run(model) or not binary.is_file():
            continue
        weights, json_path = (logs / f"init_{model}.bin").resolve(), (logs / f"init_{model}.json").resolve()
        json_path.unlink(missing_ok=True)
        cmd = [str(binary), "--model", model, "--dataset", dataset, "--seed", str(seed), "--batch", str(batch),
               "--epochs", "0", "--save", str(weights), "--json", str(json_path), "--no-progress"]
        code, stdout, stderr = _run(cmd, root, timeout)
        (logs / f"init_{model}.log").write_text("$ " + " ".join(cmd) + "\n" + stdout + "\n--- stderr\n" + stderr)
        data = _read_json(json_path)
        if code == 0 and data and data.get("status") == "ok" and weights.is_file():
            if data.get("data", {}).get("synthetic_fallback"):
                raise PeerError(f"{dataset} was not found, so the trainers train on their synthetic set, which "
                                "the PyTorch rows do not reproduce", status="skipped")
            return weights, data.get("options", {}), stage.id
        lines = [l for l in (stderr or stdout).splitlines() if l.strip()]
        tried.append(f"{stage.id}: {lines[-1] if lines else f'exit code {code}'}")
    if not tried:
        raise PeerError(f"no built trainer in {build_dir} can write the initial weights of {model} "
                        "(build stage 01 or 02)")
    raise PeerError(f"no course trainer could write the initial weights of {model}: " + "; ".join(tried))


def peer_row(peer, model, status, reason):
    run = runs.static_row(peer, model, status, reason)
    run.peer = FRAMEWORK
    return run


def runner_command(peer_python, peer, model, *, init, options, epochs, batch, limit, seed, dataset, json_path):
    """pytorch_peer.py train for one row, with the learning rate, schedule and momentum the trainers use
    (`options`: the --json options of the trainer that wrote the initial weights)."""
    cmd = python_command(peer_python) + [
        str(RUNNER), "train", "--config", peer.config, "--init", str(init), "--epochs", str(epochs),
        "--batch", str(batch), "--limit", str(limit), "--seed", str(seed), "--dataset", dataset,
        "--lr", repr(float(options.get("lr", 0.02))), "--lr-schedule", options.get("lr_schedule", "cosine"),
        "--momentum", repr(float(options.get("momentum", 0.9))), "--json", str(json_path)]
    if peer.config == "cpu":
        cmd += ["--threads", str(peer.threads)]
    return cmd


def run_peer(root, peer, model, *, out_dir, init, options, init_stage, epochs, batch, limit, seed, dataset,
             peer_python="", timeout=3600):
    """Runs one PyTorch row and returns its Run (peer = "pytorch"): ok with the figures, skipped with
    the runner's reason, or error with its last message."""
    logs = Path(out_dir) / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    json_path, log_path = (logs / f"{peer.id}_{model}.json").resolve(), logs / f"{peer.id}_{model}.log"
    json_path.unlink(missing_ok=True)
    cmd = runner_command(peer_python, peer, model, init=init, options=options, epochs=epochs, batch=batch,
                         limit=limit, seed=seed, dataset=dataset, json_path=json_path)
    start = time.monotonic()
    code, stdout, stderr = _run(cmd, root, timeout)
    wall = time.monotonic() - start
    log_path.write_text("$ " + " ".join(cmd) + "\n" + stdout + ("\n--- stderr\n" + stderr if stderr else ""))
    results = _read_json(json_path)
    shown = ["python3" if c == sys.executable else c for c in cmd]
    shown = [str(Path(c).relative_to(root)) if c == str(RUNNER) else c for c in shown]
    status = (results or {}).get("status")
    if status == "ok" and code == 0:
        run = runs.interpret(peer, model, code, stdout, stderr, results, command=shown, log=log_path)
        run.peer = FRAMEWORK
    else:   # the runner's own verdict and reason; else (no JSON: it died) its last words. The trainers'
        # exit codes (3: a task not implemented, ...) mean nothing here.
        if status == "skipped":
            reason = results.get("reason", "")
        else:
            status = "error"
            lines = [l for l in (stderr or stdout).splitlines() if l.strip()]
            reason = ((results or {}).get("reason") or (lines[-1] if lines else "no output")) + f" (exit code {code})"
        run = peer_row(peer, model, status, reason)
        run.command, run.log, run.exit_code = shown, str(log_path), code
    run.wall_seconds = wall
    if results:
        run.options = {**results.get("peer", {}), "init_written_by": init_stage}
    return run


def peer_rows(root, build_dir, stages, models, peers, *, out_dir, epochs, batch, limit_of, seed, dataset,
              peer_python="", track="solution", timeout=3600, progress=None):
    """Every PyTorch row of the comparison, in model then row order. `limit_of(peer, model)` is the
    --limit of a row (the comparison's rule for a stage on that device); `progress(run)` is called as
    each row ends. Rows that cannot run are skipped rows with the reason, never a failure of the
    comparison: without PyTorch all of them say so, and no trainer is run for their weights."""
    info = probe(root, out_dir, peer_python, timeout=min(timeout, 600)) if dataset in IDX_DATASETS else \
        {"status": "skipped", "reason": f"{dataset} is not an IDX data set"}
    out = []

    def add(run):
        out.append(run)
        if progress:
            progress(run)

    for model in models:
        if dataset not in IDX_DATASETS:
            for peer in peers:
                add(peer_row(peer, model, "n/a", f"the {FRAMEWORK_NAME} rows read the IDX data sets "
                                                 f"({', '.join(IDX_DATASETS)}) only"))
            continue
        if info.get("status") != "ok":
            for peer in peers:
                add(peer_row(peer, model, "skipped" if info.get("status") == "skipped" else "error",
                             info.get("reason", "")))
            continue
        try:
            init, options, init_stage = write_initial_weights(root, build_dir, stages, model, out_dir=out_dir,
                                                              dataset=dataset, seed=seed, batch=batch, track=track,
                                                              timeout=min(timeout, 600))
        except PeerError as e:
            for peer in peers:
                add(peer_row(peer, model, e.status, str(e)))
            continue
        for peer in peers:
            if peer.gpu and not info.get("gpu"):
                add(peer_row(peer, model, "skipped", info.get("gpu_reason") or "no CUDA GPU for PyTorch"))
                continue
            add(run_peer(root, peer, model, out_dir=out_dir, init=init, options=options, init_stage=init_stage,
                         epochs=epochs, batch=batch, limit=limit_of(peer, model), seed=seed, dataset=dataset,
                         peer_python=peer_python, timeout=timeout))
    return out, info
