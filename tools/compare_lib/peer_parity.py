"""PyTorch against every GPU stage: the check that keeps both sides of the comparison honest
(tools/compare.py --peer pytorch --self-test; --stages picks other stages, CPU ones too).

PyTorch runs on the GPU when it has one, else on the CPU. For each stage and model:
  test accuracy  the stage trains one epoch and saves its model; PyTorch evaluates that model file on
                 the test set and must count the same correct predictions and the same confusion
                 matrix, except for near ties (top two logits within 1e-4 relative, where two correct
                 implementations may round to different answers), and the same test loss to 1e-3.
  20 steps       the stage and PyTorch each take 20 SGD steps (batch 64, lr 0.01, momentum 0.9) on the
                 first 1,280 training images in the course's order, from the same weights (a model file
                 both load); every parameter must end within |stage - pytorch| <= 5e-4 + 1e-3 |pytorch|,
                 and the mean loss of the 20 steps within 1e-4 relative.
Per model, once: the premise of the 20-step check (below), on PyTorch alone.

The tolerance of the 20 steps is the one of the stages' own GPU-against-CPU tests (tests/05_im2col_gemm,
tests/06_cudnn), for the same reason: two FP32 implementations add in different orders (cuBLAS's and
cuDNN's algorithms, the stage's kernels), so every step differs by rounding, ~1e-7 relative, and the
next steps carry that along. A wrong gradient anywhere moves a parameter by about lr x gradient x steps,
~1e-2: far outside, and the check fails unless PyTorch's parameters moved by more than 10 x atol.
Carrying a rounding difference must not blow it up: a ReLU input or a max-pool window within rounding of
a tie that comes out the other way sends a gradient elsewhere and the two runs branch. So, as the stages'
tests do, both start from spread weights (uniform +-1/sqrt(fan-in), biases +-0.1: no bias at ReLU's kink,
tests/support/cnn_comparison.hpp) at lr 0.01, and the premise is checked here on the real data: PyTorch
repeats the 20 steps twice from weights each moved by 1e-6 of itself (about ten times float's rounding)
and must end within a quarter of the tolerance of its unmoved run.
"""
import json
from pathlib import Path

from . import model_file, peers, recipe
from .runs import trainer_command
from .stages import not_built_reason, trainer_path

STEPS = 20
STEPS_LR = 0.01
SPREAD_SEED = 99
ATOL, RTOL = 5e-4, 1e-3          # per parameter, after the 20 steps
STEPS_LOSS_RTOL = 1e-4           # mean loss of the 20 steps
TEST_LOSS_RTOL = 1e-3            # mean test loss of 10,000 examples summed in float: n x eps ~ 6e-4 at worst
PERTURB = 1e-6
BRANCH_SHARE = 0.25              # the premise: a 1e-6 change ends below this share of the tolerance


def parity_stages(stages):
    """The stages checked by default: every GPU stage's own row on one GPU, which trains in FP32 (stage
    07's TF32 and BF16 rows round on purpose, and stage 09's two-GPU row computes what its one-GPU row
    does, on a machine this check need not have)."""
    return [s for s in stages if s.gpu and s.gpus <= 1]


def tolerance_share(got, want):
    """(largest |got - want| / (ATOL + RTOL |want|) over every value, the tensor where it is), for two
    Models with the same tensors. A share above 1 fails the 20-step check."""
    worst, where = 0.0, ""
    if [t.name for t in got.tensors] != [t.name for t in want.tensors]:
        raise ValueError(f"the models hold different tensors: {[t.name for t in got.tensors]} and "
                         f"{[t.name for t in want.tensors]}")
    for g, w in zip(got.tensors, want.tensors):
        if g.shape != w.shape:
            raise ValueError(f"'{g.name}' has shape {list(g.shape)} in one model, {list(w.shape)} in the other")
        share = max((abs(a - b) / (ATOL + RTOL * abs(b)) for a, b in zip(g.values, w.values)), default=0.0)
        if share > worst:
            worst, where = share, g.name
    return worst, where


def largest_change(after, before):
    """The largest |after - before| over every value of two Models with the same tensors."""
    return max((abs(a - b) for t, u in zip(after.tensors, before.tensors) for a, b in zip(t.values, u.values)),
               default=0.0)


def confusion_difference(a, b):
    """At least how many predictions differ between two confusion matrices: each changed prediction
    moves one count from one cell of its row to another, so half the summed cell differences."""
    return sum(abs(x - y) for ra, rb in zip(a, b) for x, y in zip(ra, rb)) // 2


def accuracy_verdict(stage_final, stage_test_loss, torch_final):
    """(passed, detail) of the test-accuracy check from the stage's --json "final" (and its last test
    loss) and pytorch_peer.py evaluate's "final"."""
    ties = torch_final["near_ties"]
    cs, ct = stage_final["correct"], torch_final["correct"]
    moved = confusion_difference(stage_final["confusion"], torch_final["confusion"])
    loss_rel = abs(stage_test_loss - torch_final["test_loss"]) / max(abs(torch_final["test_loss"]), 1e-12)
    passed = abs(cs - ct) <= ties and moved <= ties and loss_rel <= TEST_LOSS_RTOL
    detail = (f"{cs} {'=' if cs == ct else 'vs'} {ct} correct of {torch_final['examples']} (stage vs PyTorch), "
              f"{moved} predictions differ, {ties} near ties; test loss {stage_test_loss:.5f} vs "
              f"{torch_final['test_loss']:.5f} ({loss_rel:.1e} relative, at most {TEST_LOSS_RTOL:g})")
    return passed, detail


def steps_verdict(stage_model, torch_model, start, stage_loss, torch_loss):
    """(passed, detail) of the 20-step check: every parameter within the tolerance, the mean loss within
    STEPS_LOSS_RTOL, and PyTorch's parameters moved enough for the check to mean something."""
    share, where = tolerance_share(stage_model, torch_model)
    moved = largest_change(torch_model, start)
    loss_rel = abs(stage_loss - torch_loss) / max(abs(torch_loss), 1e-12)
    passed = share <= 1.0 and loss_rel <= STEPS_LOSS_RTOL and moved > 10 * ATOL
    detail = (f"worst parameter at {share:.3g} of |stage - pytorch| <= {ATOL:g} + {RTOL:g}|pytorch| ({where}); "
              f"mean loss {stage_loss:.6f} vs {torch_loss:.6f} ({loss_rel:.1e} relative, at most {STEPS_LOSS_RTOL:g}); "
              f"largest move {moved:.3g}" + ("" if moved > 10 * ATOL else f" (under 10 x atol: the check proves little)"))
    return passed, detail


def spread_model(init):
    """The spread weights (recipe.spread_values) with the names and shapes of `init`, as a Model."""
    values = recipe.spread_values([(t.name, t.shape) for t in init.tensors], SPREAD_SEED)
    tensors = [model_file.Tensor(t.name, t.shape, values[t.name]) for t in init.tensors]
    return model_file.Model(init.arch, init.input, init.classes, f"spread (seed {SPREAD_SEED})", tensors)


class SelfTest:
    """The checks of one self-test run and their printed lines."""

    def __init__(self, root, args, out, config):
        self.root, self.args, self.out, self.logs = root, args, out, out / "logs"
        self.config = config        # pytorch_peer.py --config of every PyTorch run: eager (GPU) or cpu
        self.logs.mkdir(parents=True, exist_ok=True)
        self.checks = []

    def record(self, stage, model, check, status, detail):
        self.checks.append({"stage": stage, "model": model, "check": check, "status": status, "detail": detail})
        print(f"  [{status}] {stage:15s} {model:8s} {check:26s} {detail}", flush=True)

    def run(self, cmd, name):
        """Runs a command, logs it, returns (exit code, last message)."""
        code, stdout, stderr = peers._run(cmd, self.root, self.args.timeout)
        (self.logs / f"{name}.log").write_text("$ " + " ".join(cmd) + "\n" + stdout + "\n--- stderr\n" + stderr)
        lines = [l for l in (stderr or stdout).splitlines() if l.strip()]
        return code, (lines[-1] if lines else f"exit code {code}")

    def torch(self, name, *words):
        """pytorch_peer.py with `words`; returns its JSON, or raises RuntimeError with its message."""
        path = (self.logs / f"{name}.json").resolve()
        path.unlink(missing_ok=True)
        code, message = self.run(peers.python_command(self.args.peer_python) +
                                 [str(peers.RUNNER), *words, "--dataset", self.args.dataset, "--json", str(path)], name)
        data = peers._read_json(path)
        if code != 0 or not data or data.get("status") not in ("ok", "evaluated"):
            raise RuntimeError((data or {}).get("reason") or message)
        return data

    def torch_steps(self, name, start, options, save, perturb_seed=0):
        a = self.args
        words = ["train", "--config", self.config, "--deterministic", "--init", str(start), "--epochs", "1",
                 "--batch", str(a.batch), "--limit", str(STEPS * a.batch), "--seed", str(a.seed), "--lr", repr(STEPS_LR),
                 "--lr-schedule", "constant", "--momentum", repr(float(options.get("momentum", 0.9))), "--save", str(save)]
        if perturb_seed:
            words += ["--perturb", repr(PERTURB), "--perturb-seed", str(perturb_seed)]
        return self.torch(name, *words)

    def stage_run(self, stage, model, name, extra, epochs=1, limit=0):
        """A stage's trainer with the comparison's options and `extra`; returns its --json, or raises."""
        a = self.args
        path = (self.logs / f"{name}.json").resolve()
        path.unlink(missing_ok=True)
        cmd = trainer_command(trainer_path(a.build_dir, stage, a.track), stage, model, epochs=epochs, batch=a.batch,
                              limit=limit, seed=a.seed, dataset=a.dataset, json_path=path, extra=extra)
        code, message = self.run(cmd, name)
        data = peers._read_json(path)
        if code != 0 or not data or data.get("status") != "ok":
            raise RuntimeError(f"{message} (exit code {code})")
        if data.get("data", {}).get("synthetic_fallback"):
            raise RuntimeError(f"{a.dataset} was not found: the trainer used its synthetic set")
        return data

    def model_checks(self, model, stages):
        a = self.args
        try:
            init_path, options, _ = peers.write_initial_weights(self.root, a.build_dir, stages, model, out_dir=self.out,
                                                                dataset=a.dataset, seed=a.seed, batch=a.batch,
                                                                track=a.track, timeout=a.timeout)
        except peers.PeerError as e:
            self.record("-", model, "initial weights", "error", str(e))
            return
        start = spread_model(model_file.read_model(init_path))
        start_path = (self.out / f"spread_{model}.bin").resolve()
        model_file.write_model(start_path, start)
        ref_path = (self.out / f"pytorch_{model}_20.bin").resolve()
        try:
            ref = self.torch_steps(f"pytorch_{model}_20", start_path, options, ref_path)
            reference = model_file.read_model(ref_path)
            shares = []
            for seed in (1, 2):
                moved_path = (self.out / f"pytorch_{model}_20_moved{seed}.bin").resolve()
                self.torch_steps(f"pytorch_{model}_20_moved{seed}", start_path, options, moved_path, seed)
                shares.append(tolerance_share(model_file.read_model(moved_path), reference))
            worst = max(shares)
            self.record("pytorch", model, "20 steps do not branch", "pass" if worst[0] < BRANCH_SHARE else "fail",
                        f"weights moved by {PERTURB:g} of themselves end at {worst[0]:.3g} of the tolerance "
                        f"({worst[1]}; at most {BRANCH_SHARE:g})")
        except RuntimeError as e:
            self.record("pytorch", model, "20 steps", "error", str(e))
            ref = reference = None
        for stage in stages:
            if not stage.can_run(model):
                continue
            try:
                trained = self.stage_run(stage, model, f"{stage.id}_{model}_epoch",
                                         ["--save", str((self.out / f"{stage.id}_{model}.bin").resolve())])
                ev = self.torch(f"pytorch_eval_{stage.id}_{model}", "evaluate", "--config", self.config,
                                "--deterministic", "--load", str((self.out / f"{stage.id}_{model}.bin").resolve()))
                passed, detail = accuracy_verdict(trained["final"], trained["epochs"][-1]["test_loss"], ev["final"])
                self.record(stage.id, model, "test accuracy of its model", "pass" if passed else "fail", detail)
            except RuntimeError as e:
                self.record(stage.id, model, "test accuracy of its model", "error", str(e))
            if reference is None:
                continue
            try:
                saved = (self.out / f"{stage.id}_{model}_20.bin").resolve()
                steps = self.stage_run(stage, model, f"{stage.id}_{model}_20", [
                    "--load", str(start_path), "--lr", repr(STEPS_LR), "--lr-schedule", "constant",
                    "--momentum", repr(float(options.get("momentum", 0.9))), "--save", str(saved)],
                    limit=STEPS * a.batch)
                passed, detail = steps_verdict(model_file.read_model(saved), reference, start,
                                               steps["epochs"][0]["loss"], ref["epochs"][0]["loss"])
                self.record(stage.id, model, f"{STEPS} steps from the same weights", "pass" if passed else "fail", detail)
            except (RuntimeError, model_file.ModelFileError, ValueError) as e:
                self.record(stage.id, model, f"{STEPS} steps from the same weights", "error", str(e))


def self_test(root, args, command, date):
    """Runs the checks (or says why they are skipped), prints one line each and writes
    OUT/self_test/parity.json. Exit code 0 when every check passed or the test was skipped, else 1."""
    out = Path(args.out) / "self_test"
    out.mkdir(parents=True, exist_ok=True)
    print(f"PyTorch parity self-test: the stages' models and steps against PyTorch's on {args.dataset} "
          f"(build {args.build_dir})",
          flush=True)
    info = peers.probe(root, out, args.peer_python, timeout=min(args.timeout, 600))
    # One GPU: stage 09's two-GPU row is not a parity check (its one-GPU row is), whatever --stages says.
    chosen = [s for s in args.stage_list if s.gpus <= 1] if args.stages else parity_stages(args.stage_list)
    why_not = {}   # stage id -> why it cannot be checked here
    for s in chosen:
        if not trainer_path(args.build_dir, s, args.track).is_file():
            why_not[s.id] = not_built_reason(root, args.build_dir, s, args.track)
        elif s.gpu and info.get("status") == "ok" and not info.get("gpu"):
            why_not[s.id] = info.get("gpu_reason") or "no CUDA GPU for PyTorch"
    ready = [s for s in chosen if s.id not in why_not]
    skipped = None
    if info.get("status") != "ok":
        skipped = info.get("reason") or info.get("status")
    elif not ready:
        skipped = "; ".join(f"{k}: {v}" for k, v in why_not.items()) or "no stage chosen (--stages)"
    test = SelfTest(root, args, out, "eager" if info.get("gpu") else "cpu")
    if skipped is None:
        print(f"{peers.describe(info)}; PyTorch runs --config {test.config}", flush=True)
        for stage_id, reason in why_not.items():
            test.record(stage_id, "-", "built and runnable", "skipped", reason)
        for model in args.model_list:
            if any(s.can_run(model) for s in ready):
                test.model_checks(model, ready)
    counts = {k: sum(1 for c in test.checks if c["status"] == k) for k in ("pass", "fail", "error", "skipped")}
    verdict = f"skipped: {skipped}" if skipped else ", ".join(f"{n} {k}" for k, n in counts.items() if n) or "no checks"
    print(f"PyTorch parity self-test: {verdict}", flush=True)
    (out / "parity.json").write_text(json.dumps({
        "what": "PyTorch against every GPU stage: the test accuracy of each stage's model, and 20 SGD steps from "
                "the same weights (tools/compare_lib/peer_parity.py)",
        "date": date, "command": command, "probe": info, "skipped": skipped,
        "tolerances": {"atol": ATOL, "rtol": RTOL, "steps_loss_rtol": STEPS_LOSS_RTOL,
                       "test_loss_rtol": TEST_LOSS_RTOL, "perturb": PERTURB, "branch_share": BRANCH_SHARE,
                       "steps": STEPS, "lr": STEPS_LR, "spread_seed": SPREAD_SEED},
        "checks": test.checks}, indent=2) + "\n")
    return 1 if counts["fail"] or counts["error"] else 0
