#!/usr/bin/env python3
"""Runs a notebook's code cells in order in a shell, as Colab runs them: so the notebook is what is tested.

    python3 tools/run_notebook.py docs/colab.ipynb                 every code cell, in order
    python3 tools/run_notebook.py docs/colab.ipynb --list          print the cells' commands, run nothing
    python3 tools/run_notebook.py docs/colab.ipynb --env K=V ...   add K=V to every cell's environment

Every code cell must be a `%%bash` cell of plain shell commands (no Python): that line is stripped and the rest
runs as `bash -euo pipefail`, in the folder the runner was started in, with no standard input. Each cell is a
bash process of its own, as each `%%bash` cell of Colab is: a variable or a `cd` does not carry over to the next
cell. The code cells are numbered from 1, markdown cells skipped. Each cell's commands are printed before it runs;
the first cell that fails stops the run, named by its number and its first line, and the runner exits with that
cell's exit status (1 when it has none). A code cell that is not a `%%bash` cell stops the run before any cell runs
(exit 2). Standard library only.
"""
import argparse
import json
import os
import subprocess
import sys
import time

MAGIC = "%%bash"


class NotebookError(Exception):
    pass


def code_cells(path):
    """[(number, commands)] of the notebook's code cells, numbered from 1, each without its `%%bash` line."""
    try:
        nb = json.loads(open(path, encoding="utf-8").read())
    except (OSError, ValueError) as e:
        raise NotebookError(f"{path}: not a notebook: {e}")
    if not isinstance(nb, dict) or nb.get("nbformat") != 4 or not isinstance(nb.get("cells"), list):
        raise NotebookError(f"{path}: not an nbformat 4 notebook (no 'nbformat': 4 with a list of 'cells')")
    cells = []
    for cell in nb["cells"]:
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        text = "".join(source) if isinstance(source, list) else source
        number = len(cells) + 1
        first, _, rest = text.partition("\n")
        if first.strip() != MAGIC:
            raise NotebookError(f"{path}: code cell {number} does not start with {MAGIC} (its first line: "
                                f"{first.strip()!r}); every code cell must be plain shell")
        cells.append((number, rest))
    return cells


def first_line(commands):
    """The cell's first non-empty line: its one-line comment, which says what it does."""
    return next((l.strip() for l in commands.splitlines() if l.strip()), "(empty cell)")


def show(number, total, commands):
    print(f"==> cell {number} of {total}", flush=True)
    for line in commands.rstrip("\n").splitlines():
        print(f"    | {line}", flush=True)


def parse_env(pairs):
    env = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key or not key.replace("_", "a").isalnum() or key[0].isdigit():
            raise NotebookError(f"--env {pair!r}: expected NAME=VALUE")
        env[key] = value
    return env


def run(path, env_pairs=(), list_only=False):
    cells = code_cells(path)
    env = dict(os.environ, **parse_env(env_pairs))
    total = len(cells)
    if list_only:
        for number, commands in cells:
            show(number, total, commands)
            print()
        return 0
    start = time.time()
    for number, commands in cells:
        show(number, total, commands)
        t = time.time()
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", commands], env=env, stdin=subprocess.DEVNULL)
        rc = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
        if rc != 0:
            print(f"<== cell {number} of {total} FAILED (exit {rc}, {time.time() - t:.0f} s): {first_line(commands)}",
                  flush=True)
            print(f"notebook {path}: stopped at cell {number} of {total}: {first_line(commands)}", flush=True)
            return rc
        print(f"<== cell {number} of {total} ok ({time.time() - t:.0f} s)", flush=True)
        print(flush=True)
    print(f"notebook {path}: all {total} code cells ran ({time.time() - start:.0f} s)", flush=True)
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="tools/run_notebook.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("notebook", help="the .ipynb file (nbformat 4) whose code cells are %%bash cells")
    ap.add_argument("--list", action="store_true", help="print every code cell's commands; run nothing")
    ap.add_argument("--env", action="append", default=[], metavar="K=V",
                    help="add K=V to the environment of every cell (repeatable)")
    args = ap.parse_args(argv)
    try:
        return run(args.notebook, args.env, args.list)
    except NotebookError as e:
        print(f"run_notebook: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
