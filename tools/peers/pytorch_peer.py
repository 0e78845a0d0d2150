#!/usr/bin/env python3
"""PyTorch on the course's work: the framework a learner would otherwise use, trained exactly as the
stages train, so tools/compare.py can put its rows beside theirs.

    pytorch_peer.py train --config graph --init init_mlp.bin --epochs 2 --json out.json
    pytorch_peer.py evaluate --load s06_mlp.bin --json out.json

`train` starts from a model file a course trainer wrote (--epochs 0 --save: the stages' initial
weights, or any other), reads the same IDX files (tools/compare_lib/idx.py: the same floats), visits
the examples in the stages' order (course_rng.epoch_order), and takes the stages' steps: the mean
softmax cross-entropy over the batch, v <- momentum * v + g and w <- w - lr * v, the cosine (or
constant) rate per epoch. FP32 throughout: TF32 is switched off for cuBLAS and cuDNN.

Configurations (--config):
  eager    on the GPU, one launch per operation, as a plain PyTorch loop runs
  graph    on the GPU, the whole step (gather, forward, loss, backward, update) as one CUDA graph
  compile  torch.compile (Inductor, default mode) of model and loss, the whole step captured by hand
           in one CUDA graph: the fastest PyTorch without custom kernels
  cpu      on the CPU with --threads threads
Every GPU configuration keeps the data set on the device and gathers each batch there (index_select),
as the GPU stages do. Before the first timed epoch each configuration runs a few untimed steps of each
batch size (cuDNN's autotuner, cuBLAS's setup, torch.compile's compilation, the graph captures) and
then puts the initial weights back. An epoch's seconds cover what a stage's cover: setting the rate,
uploading the epoch's order, every step, and reading the loss and accuracy sums back.

Writes JSON shaped like a trainer's --json (stage, device, threads, status, data, epochs, final), plus
"peer" (versions, settings). Without PyTorch, or without a GPU for a GPU configuration, it writes
status "skipped" with the reason and exits 0; on an error it writes status "error" and exits 1.
Only the standard library is imported before PyTorch, so this file runs (and says why not) anywhere.
"""
import argparse
import json
import os
import sys
import time
import traceback
from array import array
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from compare_lib import idx, model_file, recipe  # noqa: E402
from compare_lib.course_rng import epoch_order  # noqa: E402

GPU_CONFIGS = ("eager", "graph", "compile")
CONFIGS = GPU_CONFIGS + ("cpu",)
WARMUP_STEPS = 3          # untimed steps of each batch size before timing (and before a capture)
EVAL_CHUNK = 1000         # test images per forward pass when evaluating


class Skip(Exception):
    """The machine cannot run this configuration: the row is skipped with this reason."""


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="pytorch_peer.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    train = sub.add_parser("train", help="train from a model file and time every epoch")
    train.add_argument("--config", choices=CONFIGS, required=True)
    train.add_argument("--threads", type=int, default=0, help="CPU threads (cpu config; 0 = every core)")
    train.add_argument("--init", required=True, help="model file to start from (a trainer's --save)")
    train.add_argument("--epochs", type=int, default=1)
    train.add_argument("--batch", type=int, default=64)
    train.add_argument("--lr", type=float, default=0.02)
    train.add_argument("--lr-schedule", choices=["constant", "cosine"], default="cosine")
    train.add_argument("--momentum", type=float, default=0.9)
    train.add_argument("--seed", type=int, default=42, help="seed of the shuffle (the weights come from --init)")
    train.add_argument("--limit", type=int, default=0, help="train on the first N images (0 = all)")
    train.add_argument("--save", default="", help="save the trained weights as a course model file")
    train.add_argument("--perturb", type=float, default=0.0,
                       help="multiply every initial weight by 1 +- this, signs drawn from --perturb-seed")
    train.add_argument("--perturb-seed", type=int, default=1)
    train.add_argument("--deterministic", action="store_true",
                       help="cuDNN's deterministic algorithms, no autotuning (the parity checks)")
    probe = sub.add_parser("probe", help="PyTorch's versions and GPU, or why there is none")
    probe.add_argument("--json", required=True)
    evaluate = sub.add_parser("evaluate", help="the test accuracy of a model file")
    evaluate.add_argument("--load", required=True)
    evaluate.add_argument("--config", choices=CONFIGS, default="eager")
    evaluate.add_argument("--threads", type=int, default=0)
    evaluate.add_argument("--deterministic", action="store_true")
    for p in (train, evaluate):
        p.add_argument("--dataset", default="fashion-mnist", help=f"one of {', '.join(idx.IDX_DATASETS)}")
        p.add_argument("--data-dir", default="")
        p.add_argument("--json", required=True, help="where the results go")
    args = ap.parse_args(argv)
    for name in ("epochs", "batch") if args.command == "train" else ():
        if getattr(args, name) < 1:
            ap.error(f"--{name} must be at least 1")
    return args


def write_json(path, data):
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(path)


# ---- PyTorch: imported only here, after the command line is read ----------------------------------

def import_torch():
    try:
        import torch
        import torch.nn.functional as F
        from torch import nn
    except ImportError as e:
        raise Skip(f"PyTorch is not installed: {e} (for {sys.executable})") from None
    return torch, nn, F


def set_up(torch, config, threads, deterministic):
    """Device, FP32 settings and threads. Returns (device, device words, threads used, settings)."""
    # FP32 everywhere: no TensorFloat-32 in cuBLAS or cuDNN (the legacy switches only: setting the newer
    # fp32_precision API beside them makes some readers of the flags raise).
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.deterministic = deterministic
    torch.backends.cudnn.benchmark = not deterministic
    if config == "cpu":
        n = threads or len(os.sched_getaffinity(0))
        torch.set_num_threads(n)
        return torch.device("cpu"), f"CPU, {n} thread{'s' if n > 1 else ''}", n
    if not torch.cuda.is_available():
        raise Skip(f"no CUDA GPU for PyTorch {torch.__version__}: torch.cuda.is_available() is False")
    props = torch.cuda.get_device_properties(0)
    return torch.device("cuda"), f"{props.name} (sm_{props.major}{props.minor})", 1


def versions(torch):
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    return {"torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": cudnn,
            "tf32_matmul": torch.backends.cuda.matmul.allow_tf32, "tf32_cudnn": torch.backends.cudnn.allow_tf32,
            "cudnn_deterministic": torch.backends.cudnn.deterministic,
            "cudnn_benchmark": torch.backends.cudnn.benchmark, "precision": "FP32 (TF32 off)"}


def build_model(nn, model):
    """The torch module of a model file's architecture; its parameters come in the file's order."""
    layers = recipe.parse_spec(model.arch)
    mods, image = [], True          # image: the activations are still [B, C, H, W]
    shape = model.input
    for layer, after in zip(layers, recipe.layer_shapes(layers, model.input)):
        c, h, w = shape
        if layer.kind == "fc":
            if image:
                mods.append(nn.Flatten())   # a dense layer reads C*H*W values per example, NCHW order
                image = False
            mods.append(nn.Linear(c * h * w, layer.units))
        elif layer.kind in ("conv", "pool") and not image:
            raise ValueError(f"'{model.arch}': a {layer.kind} layer after a dense layer")
        elif layer.kind == "conv":
            mods.append(nn.Conv2d(c, layer.units, layer.kernel, stride=layer.stride, padding=layer.pad))
        elif layer.kind == "pool":
            if layer.pad:
                raise ValueError(f"'{model.arch}': the PyTorch peer builds max-pools without padding only")
            mods.append(nn.MaxPool2d(layer.kernel, stride=layer.stride))
        elif layer.kind == "flatten":
            mods.append(nn.Flatten())
            image = False
        elif layer.kind in ("relu", "tanh", "sigmoid"):
            mods.append({"relu": nn.ReLU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid}[layer.kind]())
        else:
            raise ValueError(f"'{model.arch}': the PyTorch peer does not build '{layer.kind}' layers")
        shape = after
    return nn.Sequential(*mods)


def set_parameters(torch, params, model, path):
    """Copies the model file's tensors into `params`, checking names (through the spec) and shapes."""
    expected = recipe.parameter_shapes(recipe.parse_spec(model.arch), model.input)
    if [t.name for t in model.tensors] != [name for name, _, _ in expected]:
        raise ValueError(f"{path}: tensors {[t.name for t in model.tensors]}, but '{model.arch}' has "
                         f"{[name for name, _, _ in expected]}")
    with torch.no_grad():
        for p, t in zip(params, model.tensors):
            if tuple(p.shape) != tuple(t.shape):
                raise ValueError(f"{path}: '{t.name}' has shape {list(t.shape)}, PyTorch's is {list(p.shape)}")
            p.copy_(torch.frombuffer(bytearray(t.values.tobytes()), dtype=torch.float32).view(p.shape))


def to_model_file(params, model):
    tensors = [model_file.Tensor(t.name, tuple(p.shape), array("f", p.detach().cpu().flatten().tolist()))
               for p, t in zip(params, model.tensors)]
    return model_file.Model(model.arch, model.input, model.classes, "pytorch", tensors)


def perturbed(model, rel, seed):
    """The model with every value multiplied by 1 + rel or 1 - rel (a fair coin per value, Rng(seed, 3)):
    how the parity check measures whether 20 steps amplify a rounding-sized difference."""
    from compare_lib.course_rng import Rng
    rng = Rng(seed, 3)
    tensors = [model_file.Tensor(t.name, t.shape, array("f", (v * (1 - rel if rng.uniform() < 0.5 else 1 + rel)
                                                              for v in t.values)))
               for t in model.tensors]
    return model_file.Model(model.arch, model.input, model.classes, model.stage, tensors)


def data_tensors(torch, s, device):
    """(images [n, C, H, W] float32, labels [n] int64) of an IdxSet on `device`: each byte looked up in
    idx.unit_table(), so every pixel is the float the stages use."""
    table = torch.tensor(idx.unit_table().tolist(), dtype=torch.float32)
    pixels = torch.frombuffer(bytearray(s.pixels), dtype=torch.uint8)
    images = table[pixels.long()].view(len(s), *s.shape)
    labels = torch.frombuffer(bytearray(s.labels), dtype=torch.uint8).long()
    return images.to(device), labels.to(device)


def loss_and_correct(net, F):
    def f(x, y):
        logits = net(x)
        return F.cross_entropy(logits, y), (logits.argmax(1) == y).sum()
    return f


def make_step(torch, forward, params, velocities, momentum, lr, sums, images, labels):
    """One SGD step on the examples `idx` ([B] int64, on the device): the gather, forward, mean loss,
    backward, then v <- momentum * v + g and w <- w - lr * v for every parameter at once (the _foreach
    kernels torch.optim.SGD runs; lr is a tensor, so a captured graph reads each epoch's rate). Adds the
    batch's loss (x B) and correct predictions to `sums`. Nothing in it waits for the GPU."""
    loss_sum, correct_sum = sums

    def step(idx):
        x, y = images.index_select(0, idx), labels.index_select(0, idx)
        loss, correct = forward(x, y)
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            torch._foreach_mul_(velocities, momentum)
            torch._foreach_add_(velocities, grads)
            torch._foreach_sub_(params, torch._foreach_mul(velocities, lr))
            loss_sum.add_(loss.detach().double() * idx.shape[0])
            correct_sum.add_(correct)
    return step


def batch_sizes(n, batch):
    """{size: how many batches of it} of an epoch of n examples: full batches, then one smaller."""
    sizes = {}
    if n // batch:
        sizes[batch] = n // batch
    if n % batch:
        sizes[n % batch] = 1
    return sizes


def eager_epoch(step, order, n, batch):
    def run():
        for first in range(0, n, batch):
            step(order[first:first + batch])
    return run


def capture(torch, fn, warm, warm_up):
    """`fn` recorded as a CUDA graph, after `warm_up` calls of `warm` on a side stream (the PyTorch
    documentation's recipe: cuDNN's autotuning, cuBLAS's workspace and any compilation must happen
    before the capture, which may not allocate outside its pool or wait for the GPU)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warm_up):
            warm()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph


def graph_epoch(torch, step, order, n, batch, warm_up):
    """An epoch as CUDA graph replays: one graph per batch size, each a whole step. A replay repeats
    its recorded arguments, so the batch's place in the epoch lives on the device: a step counter that
    the gather reads (examples order[counter * B + i]) and the graph's last kernel increments, as stage
    06's step graph does."""
    counter = torch.zeros((), dtype=torch.int64, device=order.device)
    graphs = {}
    for size in batch_sizes(n, batch):
        offsets = torch.arange(size, device=order.device)

        def positioned(offsets=offsets):
            step(order.index_select(0, counter * batch + offsets))
            counter.add_(1)

        def warm():
            counter.zero_()
            positioned()

        graphs[size] = capture(torch, positioned, warm, warm_up)
    plan = [(graphs[size], count) for size, count in batch_sizes(n, batch).items()]

    def run():
        counter.zero_()
        for graph, count in plan:
            for _ in range(count):
                graph.replay()
    return run


def evaluate(torch, F, net, images, labels, near_tie=1e-4):
    """(loss sum, correct, predictions, near ties) of the model on a data set, EVAL_CHUNK at a time.
    A near tie: the top two logits closer than near_tie * max(1, |top logit|), where two correct
    implementations may predict differently."""
    loss, correct, ties, preds = 0.0, 0, 0, []
    with torch.no_grad():
        for first in range(0, len(labels), EVAL_CHUNK):
            logits = net(images[first:first + EVAL_CHUNK])
            y = labels[first:first + EVAL_CHUNK]
            loss += F.cross_entropy(logits, y, reduction="sum").item()
            p = logits.argmax(1)
            correct += (p == y).sum().item()
            top = logits.topk(2, dim=1).values
            ties += ((top[:, 0] - top[:, 1]) < near_tie * top[:, 0].abs().clamp(min=1.0)).sum().item()
            preds += p.tolist()
    return loss, correct, preds, ties


def evaluate_beside(torch, F, net, images, labels):
    """evaluate() on a CUDA stream of its own (on the CPU, evaluate() itself). Measured on the H100
    with PyTorch 2.11: evaluated on the stream the training graphs replay on, the test pass's
    10,000-row GEMMs left the mlp's graphs (graph and compile configs) training wrong from the next
    epoch on (loss 2.56 against eager's 0.364 in the second epoch); on a stream of its own every
    epoch matches eager's loss to the printed digit. cuBLAS's workspace is kept per stream, which is
    the likely cause (pytorch/pytorch#193402 reports one such sharing)."""
    if images.device.type != "cuda":
        return evaluate(torch, F, net, images, labels)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        result = evaluate(torch, F, net, images, labels)
    torch.cuda.current_stream().wait_stream(side)
    return result


def confusion(labels, preds, classes):
    rows = [[0] * classes for _ in range(classes)]
    for t, p in zip(labels, preds):
        rows[t][p] += 1
    return rows


def load_split(args):
    train, test, whole = idx.load_idx_split(args.dataset, args.data_dir, ROOT, getattr(args, "limit", 0))
    return train, test, whole


def check_fits(model, train, path):
    if model.input != train.shape or model.classes != 10:
        raise ValueError(f"{path} holds a model for input {'x'.join(map(str, model.input))} with {model.classes} "
                         f"classes, but the data set has {'x'.join(map(str, train.shape))} images in 10 classes")


def run_train(args, result):
    torch, nn, F = import_torch()
    device, device_words, threads = set_up(torch, args.config, args.threads, args.deterministic)
    result.update(device=device_words, threads=threads, peer={**result["peer"], **versions(torch)})
    init = model_file.read_model(args.init)
    if args.perturb:
        init = perturbed(init, args.perturb, args.perturb_seed)
    train, test, whole = load_split(args)
    check_fits(init, train, args.init)
    n = len(train)
    result["data"] = {"dataset": args.dataset, "note": idx.data_note(args.dataset, train, test, whole),
                      "synthetic_fallback": False, "train_examples": n, "test_examples": len(test)}
    result["peer"]["init"] = {"file": str(args.init), "written_by": init.stage, "arch": init.arch}

    net = build_model(nn, init).to(device)
    params = list(net.parameters())
    set_parameters(torch, params, init, args.init)
    images, labels = data_tensors(torch, train, device)
    test_images, test_labels = data_tensors(torch, test, device)
    velocities = [torch.zeros_like(p) for p in params]
    lr = torch.zeros((), dtype=torch.float32, device=device)
    sums = (torch.zeros((), dtype=torch.float64, device=device), torch.zeros((), dtype=torch.int64, device=device))
    order = torch.zeros(n, dtype=torch.int64, device=device)
    # The shuffles in Python take longer than a GPU epoch: drawn before any timing (the stages draw theirs
    # in C++ inside the epoch, in about a millisecond).
    orders = [torch.tensor(epoch_order(n, args.seed, e), dtype=torch.int64) for e in range(args.epochs)]

    forward = loss_and_correct(net, F)
    if args.config == "compile":
        forward = torch.compile(forward, dynamic=False)
    step = make_step(torch, forward, params, velocities, args.momentum, lr, sums, images, labels)

    # Warm-up: WARMUP_STEPS steps of each batch size on the first epoch's order, then the initial state back.
    start = time.perf_counter()
    initial = [p.detach().clone() for p in params]
    order.copy_(orders[0])
    lr.fill_(args.lr)
    if args.config in ("graph", "compile"):
        run_epoch = graph_epoch(torch, step, order, n, args.batch, WARMUP_STEPS)
    else:
        for size in batch_sizes(n, args.batch):
            for _ in range(WARMUP_STEPS):
                step(order[:size])
        run_epoch = eager_epoch(step, order, n, args.batch)
    with torch.no_grad():
        for p, p0 in zip(params, initial):
            p.copy_(p0)
        for v in velocities:
            v.zero_()
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    sync()
    result["peer"]["warmup_seconds"] = time.perf_counter() - start
    result["peer"]["warmup"] = (f"{WARMUP_STEPS} untimed steps of each batch size"
                                + (", the torch.compile compilation" if args.config == "compile" else "")
                                + (", the CUDA graph captures" if args.config in ("graph", "compile") else "")
                                + "; then the initial weights and zero velocities were put back")

    for e in range(args.epochs):
        rate = recipe.scheduled_learning_rate(args.lr, args.lr_schedule, e, args.epochs)
        sync()
        t0 = time.perf_counter()
        lr.fill_(rate)
        order.copy_(orders[e])
        for s in sums:
            s.zero_()
        run_epoch()
        loss_sum, correct = sums[0].item(), sums[1].item()   # .item() waits for the epoch's last step
        seconds = time.perf_counter() - t0
        test_loss, test_correct, _, _ = evaluate_beside(torch, F, net, test_images, test_labels)
        result["epochs"].append({"epoch": e + 1, "loss": loss_sum / n, "train_accuracy": correct / n,
                                 "test_accuracy": test_correct / len(test), "test_loss": test_loss / len(test),
                                 "seconds": seconds, "images_per_second": n / seconds, "lr": rate})
        print(f"epoch {e + 1}/{args.epochs}  loss {loss_sum / n:.4f}  train {100 * correct / n:.2f}%  "
              f"test {100 * test_correct / len(test):.2f}%  {seconds:.3f} s  {n / seconds:.0f} img/s", flush=True)
    last = result["epochs"][-1]
    result["final"] = {"accuracy": last["test_accuracy"], "correct": round(last["test_accuracy"] * len(test)),
                       "examples": len(test)}
    if args.save:
        model_file.write_model(args.save, to_model_file(params, init))
        result["saved_to"] = args.save


def run_evaluate(args, result):
    torch, nn, F = import_torch()
    device, device_words, threads = set_up(torch, args.config, args.threads, args.deterministic)
    result.update(device=device_words, threads=threads, peer={**result["peer"], **versions(torch)})
    model = model_file.read_model(args.load)
    args.limit = 0
    train, test, whole = load_split(args)
    check_fits(model, train, args.load)
    net = build_model(nn, model).to(device)
    set_parameters(torch, list(net.parameters()), model, args.load)
    images, labels = data_tensors(torch, test, device)
    loss, correct, preds, ties = evaluate(torch, F, net, images, labels)
    result["data"] = {"dataset": args.dataset, "note": idx.data_note(args.dataset, train, test, whole),
                      "synthetic_fallback": False, "test_examples": len(test)}
    result["final"] = {"accuracy": correct / len(test), "correct": correct, "examples": len(test),
                       "test_loss": loss / len(test), "near_ties": ties,
                       "confusion": confusion(list(test.labels), preds, 10)}
    print(f"{args.load}: test accuracy {100 * correct / len(test):.2f}% ({correct} of {len(test)}), "
          f"loss {loss / len(test):.4f}, {ties} near ties", flush=True)


def run_probe(args, result):
    """What the machine offers PyTorch: versions, and the GPU or the reason there is none."""
    torch, _, _ = import_torch()
    try:
        _, result["gpu"], _ = set_up(torch, "eager", 0, False)
    except Skip as e:
        result["gpu"], result["gpu_reason"] = None, str(e)
    result["peer"].update(versions(torch))   # after set_up(), which switches TF32 off


def main(argv=None):
    args = parse_args(argv)
    if args.command == "probe":
        result = {"status": "error", "reason": "", "peer": {"framework": "pytorch"}}
        try:
            run_probe(args, result)
            result["status"] = "ok"
        except Skip as e:
            result["status"], result["reason"] = "skipped", str(e)
        except Exception as e:
            result["reason"] = f"{type(e).__name__}: {e}".splitlines()[0]
        write_json(args.json, result)
        return 0 if result["status"] != "error" else 1
    config_id = f"pytorch_{args.config}"
    result = {"stage": {"id": config_id, "title": f"PyTorch ({args.config})"}, "status": "error", "reason": "",
              "device": "", "threads": 0, "epochs": [], "peer": {"framework": "pytorch", "config": args.config},
              "options": {k: v for k, v in vars(args).items() if k != "json"}}
    code = 0
    try:
        (run_train if args.command == "train" else run_evaluate)(args, result)
        result["status"] = "ok" if args.command == "train" else "evaluated"
    except Skip as e:
        result["status"], result["reason"] = "skipped", str(e)
        print(f"skipped: {e}", file=sys.stderr)
    except (model_file.ModelFileError, idx.DataError, ValueError, OSError) as e:
        result["reason"] = str(e)
        print(f"error: {e}", file=sys.stderr)
        code = 1
    except Exception as e:  # a PyTorch failure (a capture, a compilation): the row says what it was
        result["reason"] = f"{type(e).__name__}: {e}".splitlines()[0]
        traceback.print_exc()
        print(f"error: {result['reason']}", file=sys.stderr)
        code = 1
    write_json(args.json, result)
    return code


if __name__ == "__main__":
    sys.exit(main())
