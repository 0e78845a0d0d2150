"""The pieces of tools/compare.py: which stages exist and what they can run (stages),
running a trainer and reading its JSON (runs), the comparison table and its files (table),
the thread and matmul sweeps (sweeps), Amdahl's law (amdahl), SVG charts (svg) and what the
machine is (machine). Python 3 standard library only, so the command runs on a bare machine."""
