"""Whether this machine can run the GPU stages, and which stages those are.

A stage is a GPU stage when CMake registers it as one: `course_stage(... GPU)` in stages/NN_name/CMakeLists.txt
(cmake/CourseStage.cmake), the one place that says so. A GPU is usable when the NVIDIA driver loads
(libcuda.so.1), initialises, lists a device, and supports the CUDA version of the toolkit the stages are
built with. The reasons use the words of common/gpu/cuda_check.hpp's no_gpu_reason, which the GPU tests and
trainers print.

COURSE_ASSUME_GPU=1 or 0 overrides the detection (the tests use it; so can a learner whose GPU is not found).
"""
import ctypes
import os
import re
from dataclasses import dataclass
from pathlib import Path

from .common import ROOT, build_dir

STAGE_CALL = re.compile(r"^\s*course_stage\(\s*(\d\d_\w+)\b([^)]*)\)", re.M)
# What still works without a GPU (common/gpu/cuda_check.hpp's kWithoutGpuHere says it at length).
CPU_ONLY_NOTE = "their tests and trainers need one"  # (a GPU)


@dataclass(frozen=True)
class Gpu:
    usable: bool
    reason: str = ""            # why not, when not usable: "no usable GPU (this machine has no NVIDIA driver, ...)"


def gpu_stages(root=ROOT):
    """{stage dir: True when CMake registers it with GPU} for every stages/NN_name with a course_stage() call."""
    found = {}
    stage_root = Path(root) / "stages"
    for cmake in sorted(stage_root.glob("[0-9][0-9]_*/CMakeLists.txt")):
        for m in STAGE_CALL.finditer(cmake.read_text()):
            found[m[1]] = bool(re.search(r"\bGPU\b", m[2]))
    return found


def is_gpu_stage(stage, root=ROOT):
    return gpu_stages(root).get(stage, False)


def toolkit_version(build=None):
    """CUDA_VERSION (13000 for 13.0) of the toolkit the build uses, or None where there is none."""
    candidates = []
    cache = Path(build or build_dir()) / "CMakeCache.txt"
    if cache.is_file():
        m = re.search(r"^CMAKE_CUDA_COMPILER:\w+=(.+)$", cache.read_text(errors="replace"), re.M)
        if m and m[1].strip():
            candidates.append(Path(m[1].strip()).resolve().parent.parent / "include" / "cuda.h")
    if os.environ.get("CUDACXX"):
        candidates.append(Path(os.environ["CUDACXX"]).resolve().parent.parent / "include" / "cuda.h")
    candidates.append(Path("/usr/local/cuda/include/cuda.h"))
    for header in candidates:
        try:
            m = re.search(r"^#define CUDA_VERSION (\d+)", header.read_text(errors="replace"), re.M)
        except OSError:
            continue
        if m:
            return int(m[1])
    return None


def version_text(v):
    return f"{v // 1000}.{v % 1000 // 10}"


def _driver_api(lib="libcuda.so.1"):
    try:
        return ctypes.CDLL(lib)
    except OSError:
        return None


def _error_string(cuda, code):
    text = ctypes.c_char_p()
    try:
        if cuda.cuGetErrorString(code, ctypes.byref(text)) == 0 and text.value:
            return text.value.decode(errors="replace")
    except AttributeError:
        pass
    return f"CUDA error {code}"


def detect(env=None, cuda=None, toolkit=None, load=_driver_api):
    """A Gpu: usable, or not and why. `cuda` (a loaded driver library) and `toolkit` (a CUDA_VERSION) are for
    the tests; by default the driver is loaded here and the toolkit read from the build."""
    env = os.environ if env is None else env
    assumed = env.get("COURSE_ASSUME_GPU", "").strip()
    if assumed in ("1", "yes", "true"):
        return Gpu(True)
    if assumed in ("0", "no", "false"):
        return Gpu(False, "no usable GPU (COURSE_ASSUME_GPU=0 says so)")
    cuda = cuda or load()
    if cuda is None:
        return Gpu(False, "no usable GPU (this machine has no NVIDIA driver, hence no GPU to run on)")
    code = cuda.cuInit(0)
    if code == 100:  # CUDA_ERROR_NO_DEVICE
        return Gpu(False, "no usable GPU: cuInit: no CUDA-capable device is detected "
                          "(the NVIDIA driver is installed but sees no GPU)")
    if code == 34:  # CUDA_ERROR_STUB_LIBRARY: the toolkit's stub, not a driver
        return Gpu(False, "no usable GPU (this machine has no NVIDIA driver, hence no GPU to run on: the libcuda "
                          "found is the toolkit's stub)")
    if code != 0:
        return Gpu(False, f"no usable GPU: cuInit: {_error_string(cuda, code)}")
    count = ctypes.c_int(0)
    if cuda.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value == 0:
        return Gpu(False, "no CUDA device on this machine (the NVIDIA driver is installed but lists no GPU)")
    driver = ctypes.c_int(0)
    toolkit = toolkit if toolkit is not None else toolkit_version()
    if cuda.cuDriverGetVersion(ctypes.byref(driver)) == 0 and toolkit and driver.value // 1000 < toolkit // 1000:
        return Gpu(False, f"no usable GPU (the NVIDIA driver supports CUDA {version_text(driver.value)}, older than "
                          f"the CUDA {version_text(toolkit)} toolkit this build uses: update the driver)")
    return Gpu(True)


_detected = None


def machine_gpu():
    """detect(), once per process."""
    global _detected
    if _detected is None:
        _detected = detect()
    return _detected


def stage_numbers(stages):
    """'04-09' for a run of consecutive stages, '04, 06' otherwise."""
    nums = sorted(int(s[:2]) for s in stages)
    if len(nums) > 2 and nums == list(range(nums[0], nums[-1] + 1)):
        return f"{nums[0]:02d}-{nums[-1]:02d}"
    return ", ".join(f"{n:02d}" for n in nums)


BUILD_ANYWAY = "--gpu-stages builds them anyway, to read the compiler's errors"


def left_out_line(stages, reason, anyway=BUILD_ANYWAY, what=""):
    """The one line that says which GPU stages were left out and why, in every command."""
    if not stages:
        return ""
    many = len(stages) > 1
    note = CPU_ONLY_NOTE if many else "its tests and trainer need one"
    return f"GPU stage{'s' if many else ''} {stage_numbers(stages)} left out{what}: {reason}; {note} ({anyway})"


def split_stages(stages, gpu=None, want_gpu_stages=False, root=ROOT):
    """(the stages to build and run here, the GPU stages left out) of `stages` (an iterable of stage dirs)."""
    gpu = gpu or machine_gpu()
    kinds = gpu_stages(root)
    if gpu.usable or want_gpu_stages:
        return list(stages), []
    keep = [s for s in stages if not kinds.get(s, False)]
    return keep, [s for s in stages if kinds.get(s, False)]
