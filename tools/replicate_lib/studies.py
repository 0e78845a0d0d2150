"""The three studies' setups and figures, as the course transcribes them from the studies (and nothing more:
where a study's figure was not transcribed, the tables say so rather than guess it).

The thesis's models are the trainers' named models m0 .. m4 (common/model/arch.hpp); THESIS_MODELS repeats
their inputs and recipes for the runs, and tools/tests/test_replicate.py checks it against
common/model/arch.cpp, the one place that defines them."""

# ---- the bachelor's thesis on CNN training in C++ (sequential, OpenMP, CUDA, cuDNN) ----------

# name: input (C, H, W), batch, images per epoch, learning rate, forward FLOPs per image (arch.hpp's
# table), what it is.
THESIS_MODELS = {
    "m0": {"input": (3, 32, 32), "batch": 32, "images": 1000, "lr": 0.001, "flops": 3_655_632,
           "what": "the thesis's M0: conv 16, pool, conv 32, pool, fc 100, fc 10 on 3x32x32"},
    "m1": {"input": (3, 40, 40), "batch": 32, "images": 1000, "lr": 0.001, "flops": 5_710_800,
           "what": "the thesis's M1: M0's layers on 3x40x40"},
    "m2": {"input": (3, 40, 40), "batch": 32, "images": 2000, "lr": 0.00001, "flops": 7_130_600,
           "what": "the thesis's M2: three conv blocks (16, 32, 32), fc 128, 50, 10 on 3x40x40"},
    "m3": {"input": (3, 40, 40), "batch": 32, "images": 2000, "lr": 0.00001, "flops": 25_306_600,
           "what": "the course's: M2 twice as wide (32, 64, 64)"},
    "m4": {"input": (3, 40, 40), "batch": 32, "images": 2000, "lr": 0.00001, "flops": 122_394_600,
           "what": "the course's: two convs a block (32, 64, 128 filters), fc 256, 50, 10"},
}
THESIS_MAIN_MODELS = ("m0", "m1", "m2")        # the thesis's own three
FIG54_MODELS = ("m0", "m1", "m2", "m3", "m4")  # five models of rising complexity

# Figs 5.1-5.2: sequential against OpenMP with 8 threads. Only M0's figures are transcribed.
THESIS_OPENMP = {"m0": {"sequential_s": 101.0, "openmp_s": 12.76, "threads": 8}}
THESIS_OPENMP_NOTE = ("the thesis plots M1 and M2 too; the course transcribes M0's figures only (101 s an epoch "
                      "sequential, 12.76 s with OpenMP on 8 threads, about 8x)")

# Fig 5.3: OpenMP against CUDA against cuDNN per model: no values transcribed.
THESIS_FIG53_NOTE = ("the thesis's Fig 5.3 sets OpenMP, CUDA and cuDNN side by side per model; its values are not "
                     "transcribed (M0's OpenMP epoch, 12.76 s, is)")

# Fig 5.4: CUDA against cuDNN over five models of rising complexity.
THESIS_FIG54 = "CUDA slightly ahead on the simpler models, cuDNN ahead as complexity grows"

# Table 5.1: per layer of the most complex of Fig 5.4's five models, which the thesis does not specify, in a
# unit it does not state (read as ms), (cuDNN, CUDA), layers numbered from 0.
THESIS_TABLE51 = [
    ("conv", 0, "forward", 0.005, 0.009), ("conv", 0, "backward", 0.032, 0.044),
    ("pool", 0, "forward", 0.003, 0.005), ("pool", 0, "backward", 0.01, 0.023),
    ("conv", 1, "forward", 0.02, 0.022), ("conv", 1, "backward", 0.065, 0.16),
    ("pool", 1, "forward", 0.0029, 0.0039), ("pool", 1, "backward", 0.014, 0.025),
    ("conv", 2, "forward", 0.023, 0.018), ("conv", 2, "backward", 0.047, 0.018),
    ("pool", 2, "forward", 0.032, 0.023), ("pool", 2, "backward", 0.0057, 0.023),
]
TABLE51_MODEL = "m2"   # the course's stand-in for that model: three conv blocks, like the table's layers

# ---- the thesis on max-pooling for HPC ---------------------------------------------------------

POOL_SIZES = (4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048)
POOL_SETTINGS = ("k2s2p0", "k2s1p0", "k2s2p1", "k2s2p2")
# Seconds of k2 s2 p0 as the study reports them, by its own method (each window times an identity matrix, in
# Python: NumPy serially, Numba 0.53 on the GPU): serially on the Xeon node n49 at every size from 4 to 1024
# (and on n48 at 1024), and its GPU version (every window copied to the device and back) on n49's Tesla T4,
# with the variant that declares the identity as a constant. The study also ran a Tesla K20 (on n48) and a
# laptop's GTX 1050, and swept a standalone matmul on the T4, 0.40 s at 2 up to 508.9 s at 2048.
POOL_STUDY = {
    "serial": {"machine": "Xeon node n49", "seconds": {4: 0.0004, 8: 0.0016, 16: 0.0057, 32: 0.0111, 64: 0.0371,
                                                       128: 0.1491, 256: 0.5902, 512: 2.3265, 1024: 5.1822}},
    "serial_n48": {"machine": "Xeon node n48", "seconds": {1024: 9.33}},
    "gpu": {"machine": "a Tesla T4, every window moved to the device", "seconds": {4: 0.86, 1024: 396.7}},
    "gpu_constant_identity": {"machine": "the T4, the identity declared as a constant", "seconds": {1024: 297.9}},
}
POOL_STUDY_NOTE = ("the study's figures are of its own method (each window multiplied by an identity matrix, in "
                   "Python with NumPy, and on the GPU with Numba 0.53), as are the course's columns \"the study's way\" "
                   "(in C++, s03_pool_study, and in Python with NumPy, tools/replicate_lib/pool_numpy.py, on the "
                   "course's machine); the other columns time a direct max loop. The study timed k2 s2 p0 alone "
                   "(overlapping windows and padding were functional examples on 4 x 4 inputs); on n48 its serial "
                   "run took 9.33 s at 1024, and on the T4 the variant with the identity declared as a constant "
                   "297.9 s at 1024; its Tesla K20 and GTX 1050 runs and its standalone matmul sweep on the T4 "
                   "(0.40 s at 2 to 508.9 s at 2048) are not transcribed here")

# ---- the university CUDA practice -------------------------------------------------------------

PRACTICE_NOTE = ("the practice ports a C network (forward, backprop, SGD) to CUDA and asks for its speedup over the "
                 "CPU on a CSV data set; it gives no figure, no topology and no data set: the network, the "
                 "activation and the data here are the course's choices")


def implied_parallel_fraction(speedup, threads):
    """Amdahl's p from one speedup S at n threads: S = 1 / ((1 - p) + p / n)  =>  p = (1 - 1/S) / (1 - 1/n)."""
    return (1 - 1 / speedup) / (1 - 1 / threads)


def table51_layer(kind, index):
    """The course's name of the thesis's layer: conv 0 is 'conv1' (the trainers number from 1)."""
    return f"{kind}{index + 1}"
