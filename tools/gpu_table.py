#!/usr/bin/env python3
"""README's table of GPUs, written from the code's own rules, so that it cannot drift from them.

The rules are two X-macro files the C++ includes:
  common/gpu/gpu_features.def                   which compute capability each GPU feature needs, what runs without it
  solutions/07_fast_gemm/kernel_fallbacks.def  which stage 07 kernel needs which feature, and what runs instead

  python3 tools/gpu_table.py            print the tables (Markdown)
  python3 tools/gpu_table.py --write    put them into README.md between its gpu-table markers
  python3 tools/gpu_table.py --check    exit 1 when README.md's tables differ from the rules (CI: tools/tests)
"""
import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FEATURES = ROOT / "common" / "gpu" / "gpu_features.def"
FALLBACKS = ROOT / "solutions" / "07_fast_gemm" / "kernel_fallbacks.def"
README = ROOT / "README.md"
BEGIN, END = "<!-- gpu-table: begin (tools/gpu_table.py --write) -->", "<!-- gpu-table: end -->"

# The GPUs learners have, by compute capability (times ten, as the .def files write it).
GPUS = [
    ("T4 (Colab's free GPU), RTX 20", 75),
    ("A100, A30", 80),
    ("RTX 30, A10, A40", 86),
    ("RTX 40, L4, L40S", 89),
    ("H100, H200", 90),
    ("B200, GB200", 100),
    ("RTX 50", 120),
]
STAGE07_KERNELS = range(7, 17)


def strip_comments(text):
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))


def c_strings(args):
    """The string literals of a macro's arguments, joined where C would join them."""
    return [m.replace('\\"', '"') for m in re.findall(r'"((?:[^"\\]|\\.)*)"', args)]


def read_features(path=FEATURES):
    """[{id, lowest, highest, what, used_by, without}] in the file's order."""
    features = []
    for m in re.finditer(r"COURSE_GPU_FEATURE\((\w+),\s*(\d+),\s*(\d+),(.*?)\)\s*$", strip_comments(path.read_text()),
                         re.S | re.M):
        what, used_by, without = c_strings(m[4])
        features.append({"id": m[1], "lowest": int(m[2]), "highest": int(m[3]), "what": what, "used_by": used_by,
                         "without": without})
    if not features:
        raise SystemExit(f"gpu_table: no COURSE_GPU_FEATURE line in {path}")
    return features


def read_fallbacks(path=FALLBACKS):
    """{kernel: (feature id, kernel instead)}"""
    found = {int(k): (f, int(i)) for k, f, i in
             re.findall(r"COURSE_KERNEL_FALLBACK\((\d+),\s*(\w+),\s*(\d+)\)", strip_comments(path.read_text()))}
    if not found:
        raise SystemExit(f"gpu_table: no COURSE_KERNEL_FALLBACK line in {path}")
    return found


def has(feature, cc):
    """gpu_capability.hpp's capability_has()."""
    return cc >= feature["lowest"] and (feature["highest"] == 0 or cc <= feature["highest"])


def kernel_that_runs(kernel, cc, features, fallbacks):
    """fast_gemm.cpp's kernel_that_runs() for a GPU of capability cc (and a build with its code)."""
    while kernel in fallbacks:
        feature, instead = fallbacks[kernel]
        if has(features[feature], cc):
            break
        kernel = instead
    return kernel


def cc_text(cc):
    return f"{cc // 10}.{cc % 10}"


def ranges(numbers):
    """[7, 8, 9, 11] -> '7-9, 11'"""
    out, run = [], []
    for n in numbers:
        if run and n != run[-1] + 1:
            out.append(run)
            run = []
        run.append(n)
    if run:
        out.append(run)
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 2 else ", ".join(map(str, r)) for r in out)


def stage07_cell(cc, features, fallbacks):
    runs = {k: kernel_that_runs(k, cc, features, fallbacks) for k in STAGE07_KERNELS}
    own = [k for k in STAGE07_KERNELS if runs[k] == k]
    moved = {}
    for k in STAGE07_KERNELS:
        if runs[k] != k:
            moved.setdefault(runs[k], []).append(k)
    cell = f"{ranges(own)} run"
    if moved:
        cell += "; " + "; ".join(f"{ranges(ks)} run {r}" for r, ks in sorted(moved.items()))
    return cell


def stage08_cell(cc, features):
    early = features["EarlyLaunch"]
    if has(early, cc):
        return "all (early launch, clusters, the dense chain)"
    return "the fused step without early launch or the dense chain"


def tables(features_list, fallbacks):
    features = {f["id"]: f for f in features_list}
    lines = [
        "| GPU | compute capability | stages 04-06 | stage 07: kernels | stages 08, 09 |",
        "|-----|--------------------|--------------|-------------------|---------------|",
    ]
    for name, cc in GPUS:
        lines.append(f"| {name} | {cc_text(cc)} | all | {stage07_cell(cc, features, fallbacks)} | "
                     f"{stage08_cell(cc, features)} |")
    lines += [
        "",
        "| feature | compute capability | used by | where the GPU lacks it |",
        "|---------|--------------------|---------|------------------------|",
    ]
    for f in features_list:
        needs = f"{cc_text(f['lowest'])} only" if f["highest"] == f["lowest"] else f"{cc_text(f['lowest'])} or newer"
        lines.append(f"| {f['what']} | {needs} | {f['used_by']} | {f['without']} |")
    return "\n".join(lines) + "\n"


def with_tables(readme_text, block):
    if BEGIN not in readme_text or END not in readme_text:
        raise SystemExit(f"gpu_table: README.md has no '{BEGIN}' ... '{END}' markers")
    head, rest = readme_text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return head + BEGIN + "\n" + block + END + tail


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true", help="write the tables into README.md")
    ap.add_argument("--check", action="store_true", help="exit 1 when README.md's tables are not the rules'")
    args = ap.parse_args(argv)
    block = tables(read_features(), read_fallbacks())
    if not args.write and not args.check:
        print(block, end="")
        return 0
    current = README.read_text()
    wanted = with_tables(current, block)
    if args.check:
        if current != wanted:
            print("gpu_table: README.md's table of GPUs differs from common/gpu/gpu_features.def and "
                  "solutions/07_fast_gemm/kernel_fallbacks.def: run python3 tools/gpu_table.py --write", file=sys.stderr)
            return 1
        return 0
    README.write_text(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
