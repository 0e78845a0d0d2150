"""IDX data sets (MNIST, Fashion-MNIST) as common/data/data.cpp finds and reads them, for a peer framework
that must train on exactly the stages' numbers.

The trainers look in --data-dir, else ./data/NAME, ./data and (Fashion-MNIST) the Debian package's
folder, taking each file plain or gzipped, and turn pixel byte b into the float32 b / 255. This module
returns the raw bytes and unit_table(), the 256 floats a byte stands for: a framework turns a batch
of bytes into floats by table lookup, which gives the stages' floats bit for bit (dividing on a GPU
may multiply by the reciprocal instead, which rounds differently).
"""
import gzip
import struct
from array import array
from dataclasses import dataclass
from pathlib import Path

IDX_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
IMAGES_MAGIC, LABELS_MAGIC = 0x00000803, 0x00000801
IDX_DATASETS = ("fashion-mnist", "mnist")


class DataError(Exception):
    """A data set that is missing or damaged; the message names the file or the folders searched."""


@dataclass
class IdxSet:
    """One half (train or test) of an IDX data set: n images of rows x cols bytes, n labels in 0..9."""
    pixels: bytes                     # n * rows * cols bytes, image after image, row-major (NCHW with C = 1)
    labels: bytes                     # n bytes
    rows: int
    cols: int
    source: str                       # the folder it came from

    def __len__(self):
        return len(self.labels)

    @property
    def shape(self):
        return (1, self.rows, self.cols)


def unit_table():
    """array('f') of the 256 values float(b) / 255.0f, as common/data/data.cpp's byte_to_unit(). The quotient is
    rounded to double, then to float; for a division that double rounding gives the correctly rounded
    float (53 >= 2 * 24 + 2 bits), the same as the C++ float division."""
    return array("f", [b / 255.0 for b in range(256)])


def search_dirs(name, data_dir, root):
    """Where the trainers look for data set `name`, in their order; relative folders are taken from the
    folder the trainers run in (`root`, the repository)."""
    if data_dir:
        return [Path(root) / data_dir]
    dirs = [Path(root) / "data" / name, Path(root) / "data"]
    if name == "fashion-mnist":
        dirs.append(Path("/usr/share/datasets/fashion-mnist"))
    return dirs


def find_idx(name, data_dir, root):
    """{file: path} of the four IDX files in the first folder that has all four (each plain or .gz, plain
    first). Raises DataError naming the folders and, for a given --data-dir, the missing files."""
    if name not in IDX_DATASETS:
        raise DataError(f"the PyTorch peer reads the IDX data sets ({', '.join(IDX_DATASETS)}), not '{name}'")
    dirs = search_dirs(name, data_dir, root)
    for d in dirs:
        found = {}
        for f in IDX_FILES:
            for candidate in (d / f, d / (f + ".gz")):
                if candidate.is_file():
                    found[f] = candidate
                    break
        if len(found) == len(IDX_FILES):
            return found
        if data_dir:
            missing = [f + "[.gz]" for f in IDX_FILES if f not in found]
            raise DataError(f"{name} not found in --data-dir {d}: looked for {', '.join(missing)}")
    raise DataError(f"{name} not found (looked in {', '.join(str(d) for d in dirs)}); the trainers would fall back "
                    "to their synthetic set, which the PyTorch peer does not reproduce")


def _read(path):
    data = Path(path).read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def parse_idx(images, labels, images_path="images", labels_path="labels"):
    """(pixels, labels, rows, cols) from the bytes of an IDX image file and its label file (already
    gunzipped). Raises DataError like common/data/data.cpp's parse_idx: magic numbers, sizes, labels 0..9."""
    for data, path, magic, header in ((images, images_path, IMAGES_MAGIC, 16), (labels, labels_path, LABELS_MAGIC, 8)):
        if len(data) < 4 or struct.unpack(">I", data[:4])[0] != magic:
            found = f"0x{struct.unpack('>I', data[:4])[0]:08X}" if len(data) >= 4 else "nothing"
            raise DataError(f"{path}: wrong magic number {found}, expected 0x{magic:08X}")
        if len(data) < header:
            raise DataError(f"{path}: truncated header: expected {header} bytes, found {len(data)}")
    n, rows, cols = struct.unpack(">III", images[4:16])
    if not (0 < rows <= 65535 and 0 < cols <= 65535):
        raise DataError(f"{images_path}: image size {rows}x{cols} in the header is not a plausible image size")
    if len(images) != 16 + n * rows * cols:
        raise DataError(f"{images_path}: expected {16 + n * rows * cols} bytes ({n} images of {rows}x{cols} and the "
                        f"header), found {len(images)}")
    n_labels = struct.unpack(">I", labels[4:8])[0]
    if len(labels) != 8 + n_labels:
        raise DataError(f"{labels_path}: expected {8 + n_labels} bytes ({n_labels} labels and the header), "
                        f"found {len(labels)}")
    if n_labels != n:
        raise DataError(f"{images_path} holds {n} images but {labels_path} holds {n_labels} labels")
    label_bytes = labels[8:]
    if label_bytes and max(label_bytes) > 9:
        i = next(i for i, y in enumerate(label_bytes) if y > 9)
        raise DataError(f"{labels_path}: label {label_bytes[i]} at index {i} is out of range (expected 0..9)")
    return images[16:], label_bytes, rows, cols


def load_idx_split(name, data_dir, root, limit=0):
    """(train, test, whole) of data set `name` as the trainers load them: two IdxSets and the number of
    training examples before `limit` > 0 kept the first `limit` of them (--limit; the test set stays whole)."""
    paths = find_idx(name, data_dir, root)
    halves = []
    for images_file, labels_file in (IDX_FILES[:2], IDX_FILES[2:]):
        ip, lp = paths[images_file], paths[labels_file]
        pixels, labels, rows, cols = parse_idx(_read(ip), _read(lp), str(ip), str(lp))
        halves.append(IdxSet(pixels, labels, rows, cols, str(ip.parent)))
    train, test = halves
    if (train.rows, train.cols) != (test.rows, test.cols):
        raise DataError(f"{train.source}: the training images are {train.rows}x{train.cols} but the test images "
                        f"{test.rows}x{test.cols}")
    whole = len(train)
    if 0 < limit < whole:
        per = train.rows * train.cols
        train = IdxSet(train.pixels[:limit * per], train.labels[:limit], train.rows, train.cols, train.source)
    return train, test, whole


def data_note(name, train, test, whole):
    """The trainers' data line ("fashion-mnist: 60000 train, 10000 test images from DIR; training on the
    first 6000 examples (--limit)"): compare.py reads the size of a whole epoch from it."""
    note = f"{name}: {whole} train, {len(test)} test images from {train.source}"
    if len(train) < whole:
        note += f"; training on the first {len(train)} examples (--limit)"
    return note
