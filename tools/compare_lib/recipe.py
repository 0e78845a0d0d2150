"""The course's training recipe in Python, for a peer framework that must train exactly as the stages
do and for the tests that check it: architecture specs (common/model/arch.cpp), the parameters a spec has,
in model order and the stages' layouts, He initialisation (solutions/01_fc_softmax/init.hpp), the
weights the GPU-against-CPU comparisons start from (tests/support/cnn_comparison.hpp), and the
learning-rate schedule (common/train/trainer.cpp).

What the stages do per step, which a peer must match:
  - loss: softmax cross-entropy, the mean over the batch (the last batch of an epoch may be smaller);
  - update: v <- momentum * v + g, then w <- w - lr * v, with v = 0 at the start
    (solutions/01_fc_softmax/sgd.hpp; torch.optim.SGD with dampening 0 and no Nesterov is the same);
  - batches: epoch e visits course_rng.epoch_order(n, seed, e), B examples at a time.
"""
import math
import re
from array import array
from dataclasses import dataclass

from .course_rng import Rng


@dataclass(frozen=True)
class Layer:
    kind: str          # "fc", "conv", "pool", "flatten" or an activation ("relu", "leaky", ...)
    units: int = 0     # outputs of fc, filters of conv
    kernel: int = 0
    stride: int = 1
    pad: int = 0


ACTIVATIONS = ("relu", "leaky", "sigmoid", "tanh", "softplus")
_FC = re.compile(r"fc(\d+)")
_CONV = re.compile(r"conv(\d+)((?:[kps]\d+)+)")
_POOL = re.compile(r"pool(\d+)((?:[sp]\d+)*)")


def _fields(text):
    keys = re.findall(r"([a-z])(\d+)", text)
    if len({k for k, _ in keys}) != len(keys):
        raise ValueError("a field given twice")
    return {k: int(v) for k, v in keys}


def parse_spec(spec):
    """[Layer] of a canonical spec ("conv16k3p1,relu,pool2,flatten,fc10"). Raises ValueError naming the
    layer it cannot read; the C++ parser accepts more spellings, but a model file holds the canonical one."""
    layers = []
    for i, tok in enumerate((t.strip().lower() for t in spec.split(",")), 1):
        try:
            if tok in ACTIVATIONS or tok == "flatten":
                layers.append(Layer(tok))
            elif m := _FC.fullmatch(tok):
                layers.append(Layer("fc", units=int(m.group(1))))
            elif m := _CONV.fullmatch(tok):
                f = _fields(m.group(2))
                if "k" not in f:
                    raise ValueError("no kernel size")
                layers.append(Layer("conv", units=int(m.group(1)), kernel=f["k"], stride=f.get("s", 1),
                                    pad=f.get("p", 0)))
            elif m := _POOL.fullmatch(tok):
                k = int(m.group(1))
                f = _fields(m.group(2))
                layers.append(Layer("pool", kernel=k, stride=f.get("s", k), pad=f.get("p", 0)))
            else:
                raise ValueError("not a layer")
        except ValueError as e:
            raise ValueError(f"architecture spec '{spec}', layer {i} '{tok}': {e}") from None
    return layers


def layer_shapes(layers, input_shape):
    """The (C, H, W) after every layer, from the example shape (C, H, W); a dense layer's output is (units, 1, 1)."""
    c, h, w = input_shape
    shapes = []
    for layer in layers:
        if layer.kind == "fc":
            c, h, w = layer.units, 1, 1
        elif layer.kind in ("conv", "pool"):
            hp, wp = h + 2 * layer.pad, w + 2 * layer.pad
            if layer.kernel > hp or layer.kernel > wp:
                raise ValueError(f"a {layer.kind} window of {layer.kernel} is larger than its padded input {hp}x{wp}")
            h, w = (hp - layer.kernel) // layer.stride + 1, (wp - layer.kernel) // layer.stride + 1
            c = layer.units if layer.kind == "conv" else c
        elif layer.kind == "flatten":
            c, h, w = c * h * w, 1, 1
        shapes.append((c, h, w))
    return shapes


def parameter_shapes(layers, input_shape):
    """[(name, shape, fan_in)] of every parameter in model order, named and laid out as the stages save
    them: fc<i>.weight [out, in], fc<i>.bias [out], conv<i>.weight [out, in, K, K], conv<i>.bias [out],
    each kind counted from 1. fan_in is the number of inputs each output sums (He initialisation)."""
    out, counts = [], {}
    shape = tuple(input_shape)
    for layer, after in zip(layers, layer_shapes(layers, input_shape)):
        if layer.kind in ("fc", "conv"):
            counts[layer.kind] = counts.get(layer.kind, 0) + 1
            name = f"{layer.kind}{counts[layer.kind]}"
            if layer.kind == "fc":
                fan_in = shape[0] * shape[1] * shape[2]
                out += [(f"{name}.weight", (layer.units, fan_in), fan_in), (f"{name}.bias", (layer.units,), fan_in)]
            else:
                fan_in = shape[0] * layer.kernel * layer.kernel
                out += [(f"{name}.weight", (layer.units, shape[0], layer.kernel, layer.kernel), fan_in),
                        (f"{name}.bias", (layer.units,), fan_in)]
        shape = after
    return out


def he_initial_parameters(spec, input_shape, seed):
    """{name: array('f')} of the weights every stage starts from for `seed`: one Rng(seed) drawn layer by
    layer, W ~ N(0, 2 / fan_in) in storage order, biases 0 (Network::init and he_init). Pure Python: a
    test's way to check a model file a trainer wrote with --epochs 0."""
    rng = Rng(seed)
    params = {}
    for name, shape, fan_in in parameter_shapes(parse_spec(spec), input_shape):
        n = math.prod(shape)
        if name.endswith(".weight"):
            std = math.sqrt(2.0 / fan_in)
            params[name] = array("f", (rng.normal() * std for _ in range(n)))
        else:
            params[name] = array("f", bytes(4 * n))
    return params


def spread_values(shapes, seed):
    """{name: array('f')} as testkit::spread_parameters draws them from Rng(seed, 11): weights uniform in
    +-1/sqrt(fan-in), biases in +-0.1, so no bias starts at ReLU's kink. `shapes` is [(name, shape)] in
    model order. Twenty steps from such weights at a small rate do not branch on a rounding difference
    (a ReLU or max-pool decision within rounding of a tie), which is what a parameter-by-parameter
    comparison of two implementations needs."""
    rng = Rng(seed, 11)
    out = {}
    for name, shape in shapes:
        n = math.prod(shape)
        a = 0.1 if len(shape) == 1 else 1.0 / math.sqrt(n // shape[0])
        out[name] = array("f", (rng.uniform(-a, a) for _ in range(n)))
    return out


def scheduled_learning_rate(lr, schedule, epoch, epochs):
    """The rate of epoch `epoch` (0-based) of `epochs`: "constant" gives lr; "cosine" gives
    lr * (1 + cos(pi * epoch / epochs)) / 2 (common/train/trainer.cpp)."""
    if schedule == "constant":
        return lr
    if schedule == "cosine":
        return lr * 0.5 * (1.0 + math.cos(math.pi * epoch / max(epochs, 1)))
    raise ValueError(f"unknown learning-rate schedule '{schedule}' (constant, cosine)")
