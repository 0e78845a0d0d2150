"""The pieces of tools/compare.py: which stages exist and what they can run (stages),
running a trainer and reading its JSON (runs), the comparison table and its files (table),
the thread and matmul sweeps (sweeps), Amdahl's law (amdahl), SVG charts (svg) and what the
machine is (machine). Another framework beside the stages (--peer pytorch): its rows (peers),
its parity self-test (peer_parity), and what it must share with the trainers: the RNG and
shuffle (course_rng), model files (model_file), IDX data (idx) and the training recipe (recipe).
Python 3 standard library only, so the command runs on a bare machine; PyTorch itself is
imported only by tools/peers/pytorch_peer.py, in a process of its own."""
