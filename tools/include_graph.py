#!/usr/bin/env python3
"""common/ includes in one direction (docs/architecture.md, the layers): checked.

common/ is in layers, a folder each, from the bottom up: core, model, data, check, train, gpu, multi_gpu.
A module is a header and the sources of its name in one folder (data/data.hpp with data/data.cpp;
gpu/step_capture.hpp with gpu/step_capture.cpp and gpu/step_capture.cu). Module A depends on module B
when a file of A includes B's header. The check fails on

  * a loop: modules that depend on each other, directly or through others (data.cpp including
    data_transform.hpp, which includes data.hpp, was one);
  * an include of a layer above the file's own (data/ including train/, train/ including gpu/), or of
    a stage's code (solutions/, exercises/, a folder named NN_*);
  * a source file at common/'s root, in no layer.

    python3 tools/include_graph.py              check common/ (tools/test.d/include-graph runs it)
    python3 tools/include_graph.py --print      the modules and what each depends on

Exit 1 with one line per loop or wrong-way include; its tests are tools/tests/test_include_graph.py.
"""
import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = {".hpp", ".cpp", ".cu", ".cuh", ".def"}
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)
# Layers from the bottom up: a file may include its own layer and those below it.
LAYERS = ["common/core", "common/model", "common/data", "common/check", "common/train", "common/gpu",
          "common/multi_gpu"]


def layer_of(rel):
    """The layer of a path relative to the root: 'common/gpu' for common/gpu/x.hpp."""
    folder = str(Path(rel).parent)
    return folder if folder in LAYERS else None


def modules(root):
    """{module: {its files, relative to root}}: a module is its folder and the stem of its files."""
    found = {}
    for f in sorted(root.glob("common/*")):
        if f.is_file() and f.suffix in SOURCES:
            found.setdefault("common/" + f.stem, set()).add("common/" + f.name)
    for layer in LAYERS:
        for f in sorted((root / layer).glob("*")):
            if f.is_file() and f.suffix in SOURCES:
                found.setdefault(f"{layer}/{f.stem}", set()).add(f"{layer}/{f.name}")
    return found


def graph(root):
    """({module: {modules it includes}}, [wrong-way include lines])."""
    mods = modules(root)
    owner = {path: m for m, files in mods.items() for path in files}
    deps, wrong = {m: set() for m in mods}, []
    for m, files in mods.items():
        for rel in sorted(files):
            if layer_of(rel) is None:
                wrong.append(f"{rel}: at common/'s root, in no layer: it belongs in one of " + ", ".join(LAYERS))
                continue
            text = (root / rel).read_text(errors="replace")
            for match in INCLUDE.finditer(text):
                target = match.group(1)
                line = text.count("\n", 0, match.start()) + 1
                here, there = layer_of(rel), layer_of(target)
                if re.match(r"(solutions|exercises)/|\d\d_", target):
                    wrong.append(f"{rel}:{line}: includes {target}, a stage's code (common/ is below every stage)")
                elif there is not None and LAYERS.index(there) > LAYERS.index(here):
                    wrong.append(f"{rel}:{line}: includes {target}, of the layer above ({there} is above {here})")
                if target in owner and owner[target] != m:
                    deps[m].add(owner[target])
    return deps, wrong


def loops(deps):
    """Every strongly connected group of two or more modules (Tarjan), each sorted, as lists."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(deps[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(deps):
        if v not in index:
            visit(v)
    return out


def problems(root, found=None):
    """The lines to print, one a problem, of common/ under `root` (or of `found`, graph(root) read already)."""
    deps, wrong = found or graph(root)
    lines = list(wrong)
    for group in loops(deps):
        edges = [f"{a} -> {b}" for a in group for b in sorted(deps[a]) if b in group]
        lines.append("include loop among " + ", ".join(group) + ": " + "; ".join(edges))
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--print", action="store_true", help="the modules and what each depends on")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    deps, wrong = graph(args.root)
    if args.print:
        for m in sorted(deps):
            print(f"{m}: {', '.join(sorted(deps[m])) or '-'}")
    found = problems(args.root, (deps, wrong))
    for line in found:
        print(line)
    if found:
        return 1
    print(f"include-graph: {len(deps)} modules in {len(LAYERS)} layers of common/, no loop, every include in its "
          "layer or below")
    return 0


if __name__ == "__main__":
    sys.exit(main())
