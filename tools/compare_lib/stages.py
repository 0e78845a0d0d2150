"""The stages of the course: what each runs on, which models it can train, what its build needs,
and why its trainer is missing from a build folder when it is."""
import re
from dataclasses import dataclass, field
from pathlib import Path

CONV_MODELS = ("cnn", "cnn-deep")
MODELS = ("mlp",) + CONV_MODELS


@dataclass(frozen=True)
class Variant:
    """Another row of a stage in the comparison: its trainer with `args` added, labelled
    "<stage id> <label>" ("07_fast_gemm tf32"). Its "speedup vs prev" reads against the stage's own
    row (what the setting buys), and no later stage takes it as its "prev" (table.compute_speedups)."""
    label: str                   # "tf32": unique within the stage, also its logs' suffix
    args: tuple                  # passed to the trainer on top of the stage's: ("--precision", "tf32")
    env: tuple = ()              # environment of its run: (("COURSE_AS_CC", "7.5"),) runs an older GPU's path


# The trainer's options for a row whose batch is a GPU's share (Stage.batch_per_gpu): --lr is the rate of the
# table's batch, multiplied by the GPUs, and reached over the first 100 steps (lesson 09, a large global batch).
WEAK_SCALING_WARMUP_STEPS = 100


def weak_scaling_args(stage, batch):
    """The rate rule of `stage`'s row at the table's `batch` (() for a row whose batch is not a GPU's share)."""
    if not stage.batch_per_gpu:
        return ()
    return ("--lr-scaling", "linear", "--lr-reference-batch", str(batch), "--warmup-steps",
            str(WEAK_SCALING_WARMUP_STEPS))


@dataclass(frozen=True)
class Stage:
    id: str                      # the folder name, "02_conv_pool"
    device: str                  # what the trainer runs on, in words: "CPU, 1 thread", "CPU, all cores", "GPU"
    gpu: bool = False            # a GPU stage: without a GPU its trainer exits with the reason
    has_threads: bool = False    # the trainer takes --threads (CPU stages that use more than one core)
    models: tuple = MODELS       # the named models its trainer can run
    no_model_reason: str = ""    # why a model outside `models` cannot run, for the table's "n/a" rows
    needs: str = ""              # what the build needs beyond a C++ compiler, in words
    extra_args: tuple = field(default_factory=tuple)  # always passed to the trainer
    gpus: int = 0                # stage 09's rows: the GPUs its run trains on (--gpus); 0 for the other stages
    batch_per_gpu: bool = False  # the table's --batch is each GPU's share (weak scaling): the trainer's global
                                 # batch is batch x gpus, its rate scaled linearly with a warm-up (weak_scaling_args)
    variants: tuple = ()         # Variant rows beside the stage's own (which runs the trainer's defaults)

    def trainer_batch(self, batch):
        """The trainer's --batch for the table's `batch`: the global batch of all its GPUs where each takes one."""
        return batch * self.gpus if self.batch_per_gpu else batch

    @property
    def number(self):
        return int(self.id[:2])

    @property
    def nn(self):
        return self.id[:2]

    @property
    def key(self):
        """What tells two rows of one stage apart (stage 09 on 1 and on 2 GPUs): the id, and the GPUs if any."""
        return self.id + (f"_{self.gpus}gpu" if self.gpus else "")

    def can_run(self, model):
        return model in self.models


# Rows of a GPU stage run as an older GPU would run it (the fallbacks of common/gpu/gpu_features.def).
AS_SM75 = Variant("as_sm75", (), (("COURSE_AS_CC", "7.5"),))
AS_SM80 = Variant("as_sm80", (), (("COURSE_AS_CC", "8.0"),))


# The course's stages (README's table; docs/architecture.md); stage 09 twice, on one GPU and on two (a machine
# with one GPU lists the second as skipped, with the reason). A stage folder found under stages/
# that is not listed here is compared too, as a CPU stage that runs every model.
KNOWN_STAGES = (
    Stage("01_fc_softmax", "CPU, 1 thread", models=("mlp",), no_model_reason="stage 01 has no conv layers"),
    Stage("02_conv_pool", "CPU, 1 thread"),
    Stage("03_openmp", "CPU, all cores", has_threads=True, needs="OpenMP"),
    Stage("04_cuda_matmul", "GPU", gpu=True, models=("mlp",),
          no_model_reason="stage 04 has no conv layers (it trains the MLP; convolutions reach the GPU in stage 05)",
          needs="a CUDA toolkit"),
    Stage("05_im2col_gemm", "GPU", gpu=True, needs="a CUDA toolkit"),
    Stage("06_cudnn", "GPU", gpu=True, needs="a CUDA toolkit and cuDNN"),
    # Its own row is FP32 (the trainer's default, kernel 10); every reduced-precision run states its
    # precision and its accuracy next to the FP32 run (docs/architecture.md, the figures).
    # Its "as_sm75" row runs the kernels a T4 would (COURSE_AS_CC, common/gpu/gpu_capability.hpp): kernel 8
    # in place of kernel 10, as README's table of GPUs says.
    Stage("07_fast_gemm", "GPU", gpu=True, needs="a CUDA toolkit",
          variants=(Variant("tf32", ("--precision", "tf32")), Variant("bf16", ("--precision", "bf16")),
                    AS_SM75)),
    # Stage 08's kernels are all its own; it is built where stage 06 is (its tests load its models there).
    # Its "as_sm80" row: the fused step of a GPU without clusters and early launch (A100 to RTX 40).
    Stage("08_fused", "GPU", gpu=True, needs="a CUDA toolkit and cuDNN", variants=(AS_SM80,)),
    Stage("09_multi_gpu", "GPU", gpu=True, needs="a CUDA toolkit, cuDNN and NCCL", gpus=1, extra_args=("--gpus", "1")),
    # Two GPUs as lesson 09 scales them: each takes the table's batch (64 a GPU, a global batch of 128), so an
    # epoch's 60,000 images take half the steps, at the rate the linear rule gives the larger batch.
    Stage("09_multi_gpu", "2 GPUs", gpu=True, needs="a CUDA toolkit, cuDNN and NCCL", gpus=2,
          extra_args=("--gpus", "2"), batch_per_gpu=True),
)


def all_stages(root):
    """The known stages plus any other stages/NN_* folder of the checkout, in course order."""
    stages = list(KNOWN_STAGES)
    known = {s.id for s in stages}
    stage_root = Path(root) / "stages"
    if stage_root.is_dir():
        for d in stage_root.iterdir():
            if d.is_dir() and re.fullmatch(r"\d\d_\w+", d.name) and d.name not in known:
                stages.append(Stage(d.name, "CPU"))
    return sorted(stages, key=lambda s: (s.id, s.gpus))


def select_stages(stages, wanted):
    """The stages named in `wanted` ("01,2,03_openmp"; empty = all), in course order.
    Raises ValueError naming what matches no stage."""
    if not wanted:
        return list(stages)
    picked = []
    for word in [w.strip() for w in wanted.split(",") if w.strip()]:
        match = [s for s in stages if s.id == word or (word.isdigit() and s.number == int(word))]
        if not match:
            raise ValueError(f"--stages: no stage '{word}' (stages: {', '.join(s.id for s in stages)})")
        picked += [s for s in match if s not in picked]
    return sorted(picked, key=lambda s: (s.id, s.gpus))


def select_variants(stages, wanted):
    """The labels of the Variant rows to run from `wanted` ("all", "none" or "tf32,bf16"), checked
    against the variants of `stages`. Raises ValueError naming a label no stage has."""
    known = list(dict.fromkeys(v.label for s in stages for v in s.variants))
    words = [w.strip() for w in wanted.split(",") if w.strip()]
    if words == ["all"]:
        return set(known)
    if words == ["none"]:
        return set()
    for w in words:
        if w not in known:
            raise ValueError(f"--variants: no variant '{w}' among the stages chosen (variants: "
                             f"{', '.join(known + ['all', 'none'])})")
    return set(words)


def select_models(wanted):
    models = [w.strip() for w in wanted.split(",") if w.strip()]
    for m in models:
        if m not in MODELS:
            raise ValueError(f"--models: no model '{m}' (models: {', '.join(MODELS)})")
    if not models:
        raise ValueError("--models: name at least one model")
    return list(dict.fromkeys(models))


def trainer_path(build_dir, stage, track="solution"):
    return Path(build_dir) / "bin" / f"s{stage.nn}_train_{track}"


def read_cmake_cache(build_dir):
    """{name: value} of build_dir/CMakeCache.txt; {} when there is none."""
    cache = {}
    path = Path(build_dir) / "CMakeCache.txt"
    if not path.is_file():
        return cache
    for line in path.read_text(errors="replace").splitlines():
        m = re.match(r"^([A-Za-z0-9_.+-]+):[A-Z]+=(.*)$", line)
        if m:
            cache[m.group(1)] = m.group(2)
    return cache


def _found(value):
    return value is not None and value != "" and not value.endswith("NOTFOUND")


def not_built_reason(root, build_dir, stage, track="solution"):
    """Why trainer_path() does not exist, as the table's "skipped" reason."""
    build_dir = Path(build_dir)
    name = trainer_path(build_dir, stage, track).name
    if not (Path(root) / "stages" / stage.id).is_dir():
        return f"not in this checkout yet (no stages/{stage.id}/)"
    cache = read_cmake_cache(build_dir)
    if not cache:
        return f"{build_dir} is not a configured build folder (tools/course build configures build/default)"
    tracks = cache.get("COURSE_TRACKS", "solution;exercise").split(";")
    if track not in tracks:
        return f"{build_dir} builds only the {'/'.join(tracks)} track (COURSE_TRACKS)"
    if stage.needs == "OpenMP" and not _found(cache.get("OpenMP_CXX_FLAGS")):
        return "not built: no OpenMP (install a compiler with OpenMP, e.g. g++ with libgomp)"
    if stage.gpu:
        if cache.get("COURSE_SANITIZE"):
            return f"not built: the {cache['COURSE_SANITIZE']} sanitizer build leaves out the GPU stages"
        if cache.get("COURSE_ENABLE_CUDA", "ON").upper() in ("OFF", "0", "FALSE", "NO"):
            return "not built: COURSE_ENABLE_CUDA is OFF"
        if not list(build_dir.glob("CMakeFiles/*/CMakeCUDACompiler.cmake")):
            return ("not built: no CUDA toolkit (nvcc) was found when the build was configured: install the CUDA 13 "
                    "toolkit (NVIDIA's apt repository: cuda-toolkit-13-0), then tools/course build")
        if "cuDNN" in stage.needs and not _found(cache.get("CUDNN_LIBRARY")):
            return ("not built: no cuDNN was found when the build was configured: install cuDNN 9 for CUDA 13 "
                    "(NVIDIA's apt repository: cudnn9-cuda-13), then tools/course build")
        if "NCCL" in stage.needs and not _found(cache.get("NCCL_LIBRARY")):
            return ("not built: no NCCL was found when the build was configured: install it (NVIDIA's apt "
                    "repository: libnccl-dev) or set COURSE_NCCL_ROOT to a folder with include/nccl.h and lib/, "
                    "then tools/course build")
    return f"not built in {build_dir} (cmake --build {build_dir} --target {name})"
