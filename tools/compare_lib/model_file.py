"""The course's model files (common/model/model_file.hpp, format version 1) in Python: what a trainer's
--save writes and its --load reads, so another framework can start from the course's weights and
hand its own back.

    magic "NNCMODEL" | u32 version | arch (u32 length + chars) | u32 C, H, W | u32 classes |
    stage (u32 length + chars) | u32 tensor count | per tensor: name, u32 rank, rank x u32 dims,
    float32 values | u64 FNV-1a 64 of every byte before it

Every integer and float is little-endian. Tensors keep the layouts of the stages: a dense weight is
[out, in], a conv weight [out, in, K, K] (NCHW filters), a bias [out], in model order (fc1.weight,
fc1.bias, ...). Values are array('f') (float32), so this module needs nothing beyond the standard library.
"""
import struct
import sys
from array import array
from dataclasses import dataclass, field
from pathlib import Path

MAGIC = b"NNCMODEL"
VERSION = 1
MAX_RANK = 8
MAX_SIDE = 1 << 20          # the C++ reader's bound on an input side and on the number of classes
FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3


class ModelFileError(Exception):
    """A file that is not a whole model file of this format; the message names the file and the problem."""


@dataclass
class Tensor:
    name: str
    shape: tuple
    values: array                     # float32, len = product of shape

    @property
    def size(self):
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass
class Model:
    arch: str                         # canonical architecture spec, "fc256,relu,fc128,relu,fc10"
    input: tuple                      # (channels, height, width) of one example
    classes: int
    stage: str = ""                   # the stage that wrote it ("01_fc_softmax"), or another writer's name
    tensors: list = field(default_factory=list)

    def by_name(self):
        return {t.name: t for t in self.tensors}


def fnv1a64(data, h=FNV_OFFSET):
    """FNV-1a 64 of `data` (bytes), as common/model/model_file.cpp computes the checksum."""
    mask = (1 << 64) - 1
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & mask
    return h


def _floats_from(raw):
    values = array("f")
    values.frombytes(raw)
    if sys.byteorder != "little":
        values.byteswap()
    return values


def _floats_to_bytes(values):
    values = array("f", values)
    if sys.byteorder != "little":
        values.byteswap()
    return values.tobytes()


class _Reader:
    """A cursor over the bytes that never reads past the end; a short read names the field."""

    def __init__(self, data, path):
        self.data, self.path, self.pos = data, path, 0

    def fail(self, problem):
        raise ModelFileError(f"model file '{self.path}' {problem}")

    def take(self, n, what):
        if n > len(self.data) - self.pos:
            self.fail(f"is truncated: it ends inside {what} ({n} bytes needed at offset {self.pos}, "
                      f"{len(self.data) - self.pos} left)")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def u32(self, what):
        return struct.unpack("<I", self.take(4, what))[0]

    def string(self, what):
        return self.take(self.u32(f"the length of {what}"), what).decode("utf-8", errors="replace")


def decode(data, path="<bytes>"):
    """The Model in `data` (a whole file's bytes). Raises ModelFileError like the C++ reader: not a model
    file, another version, truncated (naming the field), a damaged size, bytes after the checksum, or a
    checksum that does not match."""
    r = _Reader(bytes(data), path)
    if not data:
        r.fail("is empty (0 bytes): not a model file")
    if data[:len(MAGIC)] != MAGIC:
        r.fail(f"is not a model file: it does not start with {MAGIC.decode()}")
    r.take(len(MAGIC), "the magic")
    version = r.u32("the format version")
    if version != VERSION:
        r.fail(f"was written with format version {version}; this reader reads version {VERSION}")
    arch = r.string("the architecture spec")
    c, h, w = (r.u32(f"the input {side}") for side in ("channels", "height", "width"))
    if not all(1 <= v <= MAX_SIDE for v in (c, h, w)):
        r.fail(f"is damaged: its input shape {c}x{h}x{w} has a zero or absurdly large dimension")
    classes = r.u32("the number of classes")
    if not 1 <= classes <= MAX_SIDE:
        r.fail(f"is damaged: it claims {classes} classes")
    model = Model(arch=arch, input=(c, h, w), classes=classes, stage=r.string("the stage name"))
    count = r.u32("the number of tensors")
    for i in range(count):
        number = f"tensor {i + 1} of {count}"
        name = r.string(f"the name of {number}")
        label = f"{number} '{name}'"
        rank = r.u32(f"the rank of {label}")
        if rank > MAX_RANK:
            r.fail(f"is damaged: {label} has rank {rank} (at most {MAX_RANK})")
        shape = tuple(r.u32(f"dimension {d + 1} of {label}") for d in range(rank))
        if any(d < 1 for d in shape):
            r.fail(f"is damaged: {label} has shape {list(shape)}")
        t = Tensor(name, shape, array("f"))
        t.values = _floats_from(r.take(4 * t.size, f"the data of {label}"))
        model.tensors.append(t)
    checked = r.pos
    stored = struct.unpack("<Q", r.take(8, "the checksum"))[0]
    if r.pos != len(data):
        r.fail(f"is damaged: {len(data) - r.pos} unexpected bytes follow the checksum")
    computed = fnv1a64(data[:checked])
    if computed != stored:
        r.fail(f"is damaged: checksum mismatch (stored {stored:016x}, computed {computed:016x})")
    return model


def read_model(path):
    """The Model saved in `path` by a trainer's --save (or by write_model)."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ModelFileError(f"model file '{path}' cannot be read: {e.strerror or e}") from None
    return decode(data, str(path))


def encode(model):
    """The bytes of `model` in the format the trainers read (common/model/model_file.cpp's encode_model)."""
    def u32(v):
        return struct.pack("<I", v)

    def string(s):
        b = s.encode("utf-8")
        return u32(len(b)) + b

    parts = [MAGIC, u32(VERSION), string(model.arch), *(u32(v) for v in model.input), u32(model.classes),
             string(model.stage), u32(len(model.tensors))]
    for t in model.tensors:
        if len(t.shape) > MAX_RANK or any(d < 1 for d in t.shape) or len(t.values) != t.size:
            raise ModelFileError(f"tensor '{t.name}' of shape {list(t.shape)} with {len(t.values)} values "
                                 "cannot be saved")
        parts += [string(t.name), u32(len(t.shape)), *(u32(d) for d in t.shape), _floats_to_bytes(t.values)]
    body = b"".join(parts)
    return body + struct.pack("<Q", fnv1a64(body))


def write_model(path, model):
    """Writes `model` to `path` (through a temporary file renamed over it, as the trainers do)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(encode(model))
    tmp.replace(path)
