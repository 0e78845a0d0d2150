#!/usr/bin/env python3
"""No earlier stage names a later one, in code or comments (docs/architecture.md, the layers): checked.

A stage's files are those of solutions/NN_*, stages/NN_*, tests/NN_* and benchmarks/NN_* (exercises/ is
generated from solutions/; the lessons in docs/ are prose and may look ahead). A file of stage NN names a
later stage MM > NN when it holds

  * MM's folder name                   09_multi_gpu, #include "06_cudnn/cudnn_engine.hpp"
  * "stage MM" or "stages .. MM .."    stage 09, Stage 9, stages 06 and 08, stages 04 to 09
  * MM's targets and test suites       s09_train_solution, Stage08_Engine
  * one of MM's tasks                  Task 8.3, Task8_3_
  * a class that only MM declares      CudnnStep, FusedStep (CamelCase names, declared in one stage)
  * a header that only MM has          #include "fused_kernels.hpp"

Known violations, until they are mended, are listed in tools/stage_order_allowlist.txt ("path: mention",
a line for each occurrence); each is a debt, and a line that no longer matches fails too, so the list only
shrinks (--prune drops those lines). Anything else fails: exit 1, one line per mention, path:line.

    python3 tools/stage_order.py              check (tools/test.d/stage-order runs it)
    python3 tools/stage_order.py --all        every mention, the allowlisted ones too
    python3 tools/stage_order.py --prune      drop the allowlist's lines that no longer match
"""
import argparse
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("solutions", "stages", "tests", "benchmarks")
ALLOWLIST = ROOT / "tools" / "stage_order_allowlist.txt"
TEXT_SUFFIXES = {".hpp", ".cpp", ".cu", ".cuh", ".h", ".txt", ".py", ".sh", ".cmake", ".json", ".md"}

NUMBER = r"0?[1-9]"
# "stage 09", "Stage 9", "stages 06 and 08", "stages 04-09", "stages 06, 07 and 08", "stages 07 to 09"
STAGE_WORDS = re.compile(rf"\b[Ss]tages?[ \t]+({NUMBER}(?:(?:[ \t]*(?:,|and|or|to|-|–)[ \t]*){NUMBER})*)\b")
TARGET = re.compile(r"\b(?:s|Stage)(\d\d)_\w+")
TASK = re.compile(r"\bTask[ \t]?(\d)[._]\d+")
INCLUDE = re.compile(r'#\s*include\s*"([^"]+)"')
CLASS = re.compile(r"^\s*(?:class|struct)\s+([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+)\b", re.M)


def stage_ids(root):
    """{number: folder name} of the stages, from the folders under solutions/ and stages/."""
    ids = {}
    for top in FOLDERS:
        for d in sorted((root / top).glob("[0-9][0-9]_*")) if (root / top).is_dir() else []:
            if d.is_dir():
                ids[int(d.name[:2])] = d.name
    return ids


def stage_files(root, ids):
    for number, name in sorted(ids.items()):
        for top in FOLDERS:
            folder = root / top / name
            for path in sorted(folder.rglob("*")) if folder.is_dir() else []:
                if path.is_file() and (path.suffix in TEXT_SUFFIXES or path.name == "CMakeLists.txt"):
                    yield number, path


def owners(root, ids):
    """({CamelCase class: the one stage that declares it}, {header file name: the one stage that has it}),
    from solutions/: a name two stages share says nothing of either."""
    classes, headers = {}, {}
    for number, name in ids.items():
        folder = root / "solutions" / name
        for path in folder.glob("*") if folder.is_dir() else []:
            if path.suffix in (".hpp", ".cuh", ".h"):
                headers.setdefault(path.name, set()).add(number)
            if path.suffix in (".hpp", ".cuh", ".h", ".cpp", ".cu"):
                for m in CLASS.finditer(path.read_text(errors="replace")):
                    classes.setdefault(m.group(1), set()).add(number)
    one = lambda d: {k: next(iter(v)) for k, v in d.items() if len(v) == 1}  # noqa: E731
    return one(classes), one(headers)


def mentions(line, number, ids, classes, headers):
    """The mentions of later stages in one line of a file of stage `number`: [(later stage, the text)]."""
    found = []
    for m in STAGE_WORDS.finditer(line):
        for n in re.findall(NUMBER, m.group(1)):
            found.append((int(n), m.group(0)))
    for later, name in ids.items():
        if later > number and re.search(rf"\b{re.escape(name)}\b", line):
            found.append((later, name))
    for m in TARGET.finditer(line):
        found.append((int(m.group(1)), m.group(0)))
    for m in TASK.finditer(line):
        found.append((int(m.group(1)), m.group(0)))
    for word in set(re.findall(r"\b[A-Z]\w+\b", line)):
        if word in classes:
            found.append((classes[word], word))
    for m in INCLUDE.finditer(line):
        base = m.group(1).rsplit("/", 1)[-1]
        if base in headers:
            found.append((headers[base], m.group(0)))
    return sorted({(n, text) for n, text in found if n > number and n in ids})


def scan(root=ROOT):
    """[(path relative to root, line number, later stage, text, the line)] of every stage file."""
    ids = stage_ids(root)
    classes, headers = owners(root, ids)
    out = []
    for number, path in stage_files(root, ids):
        for i, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for later, text in mentions(line, number, ids, classes, headers):
                out.append((path.relative_to(root).as_posix(), i, later, text, line.strip()))
    return out


def read_allowlist(path):
    if not path.is_file():
        return []
    return [l.strip() for l in path.read_text().splitlines() if l.strip() and not l.lstrip().startswith("#")]


def key(found):
    return f"{found[0]}: {found[3]}"


def check(root=ROOT, allowlist=ALLOWLIST, show_all=False, prune=False):
    found = scan(root)
    allowed = Counter(read_allowlist(allowlist))
    seen = Counter()
    new = []
    for f in found:  # an entry allows as many occurrences as it has lines, no more
        seen[key(f)] += 1
        if seen[key(f)] > allowed[key(f)]:
            new.append(f)
    stale = allowed - seen
    for f in found if show_all else new:
        print(f"{f[0]}:{f[1]}: names stage {f[2]:02d} ({f[3]!r}): {f[4][:120]}")
    if prune and stale:
        kept, drop = [], Counter(stale)
        for line in allowlist.read_text().splitlines():
            if drop[line.strip()] > 0:
                drop[line.strip()] -= 1
            else:
                kept.append(line)
        allowlist.write_text("\n".join(kept) + "\n")
        print(f"stage order: dropped {sum(stale.values())} line(s) from {allowlist.name}")
        stale = Counter()
    for entry, n in stale.items():
        print(f"{allowlist.name}: '{entry}' occurs {n} time(s) fewer than listed: remove {n} line(s) "
              "(python3 tools/stage_order.py --prune)")
    print(f"stage order: {len(new)} new mention(s) of a later stage, {len(found) - len(new)} allowlisted "
          f"({sum(allowed.values())} lines), {sum(stale.values())} stale line(s)")
    return 1 if new or stale else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--all", action="store_true", help="print every mention, the allowlisted ones too")
    ap.add_argument("--prune", action="store_true", help="drop allowlist lines that no longer match")
    ap.add_argument("--allowlist", type=Path, default=ALLOWLIST)
    args = ap.parse_args()
    return check(ROOT, args.allowlist, args.all, args.prune)


if __name__ == "__main__":
    sys.exit(main())
